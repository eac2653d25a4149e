package PounderTest::Leak;
# GET /leak: keeps ~100 KB per request in a package-level array, for the life of the child
# (the leak MaxConnectionsPerChild exists to contain).
use strict;
use warnings;

use Apache2::RequestRec ();
use Apache2::RequestIO ();
use Apache2::Const -compile => qw(OK);

our @LEAK;

sub handler {
    my $r = shift;
    push @LEAK, "x" x 102400;
    $r->content_type('text/plain');
    $r->print("pid $$ leaked " . scalar(@LEAK) . " x 100 KB\n");
    return Apache2::Const::OK;
}

1;
