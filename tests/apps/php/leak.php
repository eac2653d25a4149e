<?php
// Keeps ?kb=N KiB (default 100) in this worker for good, every request.
//
// PHP frees everything a request allocated when it ends: a static or a global does NOT survive
// to the next request in the same php-fpm worker (checked: the worker's private memory stays
// flat). What does survive is memory allocated outside the request's heap, as a leaking C
// extension's: here FFI memory allocated persistent (malloc) and not owned by PHP, so never freed.
// Every page is written, so it is resident. Needs FFI enabled for the pool
// (php_admin_value[ffi.enable] = 1, as in pool.conf here).
header("Content-Type: text/plain");
$kb = isset($_GET["kb"]) ? max(1, (int)$_GET["kb"]) : 100;
$size = $kb * 1024;
$block = FFI::new("char[$size]", false, true);
for ($i = 0; $i < $size; $i += 4096) {
    $block[$i] = "x";
}
echo "leaked_kb=", $kb, "\npid=", getmypid(), "\n";
