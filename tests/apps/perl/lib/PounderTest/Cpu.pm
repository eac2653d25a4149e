package PounderTest::Cpu;
# GET /cpu?ms=N: burns about N ms of this child's CPU time (default 20), then answers.
use strict;
use warnings;

use Apache2::RequestRec ();
use Apache2::RequestIO ();
use Apache2::Const -compile => qw(OK);
use Time::HiRes qw(clock_gettime CLOCK_PROCESS_CPUTIME_ID);

sub burn {
    my ($ms) = @_;
    my $end = clock_gettime(CLOCK_PROCESS_CPUTIME_ID) + $ms / 1000;
    my $acc = 0;
    while (clock_gettime(CLOCK_PROCESS_CPUTIME_ID) < $end) {
        $acc = ($acc * 31 + $_) % 4294967296 for 1 .. 200;
    }
    return $acc;
}

sub handler {
    my $r = shift;
    my $args = $r->args // '';
    my $ms = $args =~ /(?:^|&)ms=(\d+(?:\.\d+)?)/ ? $1 : 20;
    my $acc = burn($ms);
    $r->content_type('text/plain');
    $r->print("pid $$ cpu_ms $ms checksum $acc\n");
    return Apache2::Const::OK;
}

1;
