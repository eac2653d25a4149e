<?php
// pounder's test app for php-fpm: a trivial page.
header("Content-Type: text/plain");
echo "hello\n";
