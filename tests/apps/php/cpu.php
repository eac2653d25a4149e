<?php
// Burns ?ms=N milliseconds of this worker's CPU time (default 10), then says how much and who.
header("Content-Type: text/plain");
$ms = isset($_GET["ms"]) ? max(0, (int)$_GET["ms"]) : 10;
$start = getrusage();
$used = 0.0;
$x = 0;
while ($used < $ms) {
    for ($i = 0; $i < 1000; $i++) {
        $x += $i * $i;
    }
    $now = getrusage();
    $used = ($now["ru_utime.tv_sec"] - $start["ru_utime.tv_sec"]) * 1000
        + ($now["ru_utime.tv_usec"] - $start["ru_utime.tv_usec"]) / 1000
        + ($now["ru_stime.tv_sec"] - $start["ru_stime.tv_sec"]) * 1000
        + ($now["ru_stime.tv_usec"] - $start["ru_stime.tv_usec"]) / 1000;
}
echo "cpu_ms=", $ms, "\npid=", getmypid(), "\n";
