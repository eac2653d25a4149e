package PounderTest::Hot;
# GET /hot: a handler whose time is known to be spent mostly (about 80 %) in PounderTest::Hot::work
# (a fixed amount of arithmetic), the rest in PounderTest::Hot::cold (a quarter of it): for
# pounder profile's NYTProf tests. Answers "pid N".
use strict;
use warnings;

use Apache2::RequestRec ();
use Apache2::RequestIO ();
use Apache2::Const -compile => qw(OK);

# each its own loop: the time is their own (exclusive), not a helper's
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

sub handler {
    my $r = shift;
    my $sum = work() + cold();
    $r->content_type('text/plain');
    $r->print("pid $$ $sum\n");
    return Apache2::Const::OK;
}

1;
