package PounderTest::Big;
# GET /big: on its first request in each child builds (writes) an 8 MB package-level string,
# so every child that served it is ~8 MB larger in private memory.
use strict;
use warnings;

use Apache2::RequestRec ();
use Apache2::RequestIO ();
use Apache2::Const -compile => qw(OK);

our $BIG;
our $BIG_BYTES = 8 * 1024 * 1024;    # a variable: "b" x CONSTANT would be folded into an 8 MB constant at compile time

sub handler {
    my $r = shift;
    my $first = defined $BIG ? 0 : 1;
    $BIG = "b" x $BIG_BYTES if $first;
    $r->content_type('text/plain');
    $r->print("pid $$ big " . length($BIG) . " first $first\n");
    return Apache2::Const::OK;
}

1;
