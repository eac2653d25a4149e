package PounderTest::Grow;
# GET /grow: what `pounder tune` is tested on. On its first request in each child it makes sure
# PounderTest::Data is built (~40 MB: a no-op when startup_preload.pl built it in the parent,
# else a private copy in this child) and writes an 8 MB string of its own, so every child is
# 8 MB (+ 40 MB without preloading) larger in private memory. Every request then waits ?ms=N
# milliseconds (default 5) without using CPU, as a handler waiting on a database would.
use strict;
use warnings;

use Apache2::RequestRec ();
use Apache2::RequestIO ();
use Apache2::Const -compile => qw(OK);
use Time::HiRes ();
use PounderTest::Data ();

our $MINE;
our $MINE_BYTES = 8 * 1024 * 1024;    # a variable: "g" x CONSTANT would be folded at compile time

sub handler {
    my $r = shift;
    PounderTest::Data::build();
    $MINE = "g" x $MINE_BYTES unless defined $MINE;
    my ($ms) = ($r->args // '') =~ /(?:^|&)ms=(\d+)/;
    Time::HiRes::usleep(1000 * ($ms // 5));
    $r->content_type('text/plain');
    $r->print("pid $$ mine " . length($MINE) . " data " . PounderTest::Data::bytes() . "\n");
    return Apache2::Const::OK;
}

1;
