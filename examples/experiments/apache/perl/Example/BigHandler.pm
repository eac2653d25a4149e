package Example::BigHandler;
use strict;
use warnings;
use Apache2::RequestRec ();
use Apache2::RequestIO ();
use Apache2::Const -compile => qw(OK);

sub handler {
    my $r = shift;
    require Example::Big;    # a no-op when the parent preloaded it
    $r->content_type('text/plain');
    $r->print("rows " . Example::Big::count() . "\n");
    return Apache2::Const::OK;
}

1;
