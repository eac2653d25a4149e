package PounderTest::Hello;
# GET /hello: a tiny text answer naming the child that served it; /hello?ms=N first waits N ms
# without CPU (an I/O-bound request).
use strict;
use warnings;

use Apache2::RequestRec ();
use Apache2::RequestIO ();
use Apache2::Const -compile => qw(OK);

sub handler {
    my $r = shift;
    my ($ms) = ($r->args // '') =~ /(?:^|&)ms=(\d+)/;
    select(undef, undef, undef, $ms / 1000) if $ms;
    $r->content_type('text/plain');
    $r->print("hello from pid $$\n");
    return Apache2::Const::OK;
}

1;
