<?php
// Holds its worker for ?ms=N milliseconds (default 100) without using CPU.
header("Content-Type: text/plain");
$ms = isset($_GET["ms"]) ? max(0, (int)$_GET["ms"]) : 100;
usleep($ms * 1000);
echo "slept_ms=", $ms, "\npid=", getmypid(), "\n";
