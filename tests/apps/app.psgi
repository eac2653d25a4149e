# PSGI test app for the Starman tests, configured by environment variables.
#
# APP_DATA_MB (default 0): that many MB of data built (written) when the app is loaded: with
# starman --preload-app in the master, shared copy-on-write by the workers; without it, in every
# worker.
# Paths: / trivial answer; /pid the worker's pid; /cpu?ms=N burns about N ms of CPU (default 20);
# /leak keeps ~100 KB per request for the life of the worker; /data the data size and the pid
# that built it.
use strict;
use warnings;

use Time::HiRes qw(clock_gettime CLOCK_PROCESS_CPUTIME_ID);

my $data_mb = $ENV{APP_DATA_MB} // 0;
our $DATA = "d" x ($data_mb * 1024 * 1024);
our $BUILT_IN = $$;
our @LEAK;

sub burn {
    my ($ms) = @_;
    my $end = clock_gettime(CLOCK_PROCESS_CPUTIME_ID) + $ms / 1000;
    my $acc = 0;
    while (clock_gettime(CLOCK_PROCESS_CPUTIME_ID) < $end) {
        $acc = ($acc * 31 + $_) % 4294967296 for 1 .. 200;
    }
    return $acc;
}

sub text {
    my ($status, $body) = @_;
    return [$status, ['Content-Type' => 'text/plain', 'Content-Length' => length($body)], [$body]];
}

sub {
    my ($env) = @_;
    my $path = $env->{PATH_INFO} // '/';
    my $query = $env->{QUERY_STRING} // '';
    return text(200, "hello\n") if $path eq '/';
    return text(200, "$$\n") if $path eq '/pid';
    if ($path eq '/cpu') {
        my $ms = $query =~ /(?:^|&)ms=(\d+(?:\.\d+)?)/ ? $1 : 20;
        my $acc = burn($ms);
        return text(200, "pid $$ cpu_ms $ms checksum $acc\n");
    }
    if ($path eq '/leak') {
        push @LEAK, "x" x 102400;
        return text(200, "pid $$ leaked " . scalar(@LEAK) . " x 100 KB\n");
    }
    return text(200, "pid $$ bytes " . length($DATA) . " built_in $BUILT_IN\n") if $path eq '/data';
    return text(404, "not found\n");
};
