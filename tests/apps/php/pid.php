<?php
// The pid of the php-fpm worker that served this request.
header("Content-Type: text/plain");
echo getmypid(), "\n";
