# PSGI app for pounder profile's NYTProf test on Starman: about 80 % of each request's time in
# PounderTest::HotPSGI::work (a fixed amount of arithmetic), the rest in cold. Answers "pid N".
package PounderTest::HotPSGI;
use strict;
use warnings;

sub work {
    my $acc = 0;
    $acc = ($acc * 31 + $_) % 4294967296 for 1 .. 8000;
    return $acc;
}

sub cold {
    my $acc = 0;
    $acc = ($acc * 31 + $_) % 4294967296 for 1 .. 2000;
    return $acc;
}

sub app {
    my $sum = work() + cold();
    my $body = "pid $$ $sum\n";
    return [200, ['Content-Type' => 'text/plain', 'Content-Length' => length $body], [$body]];
}

\&app;
