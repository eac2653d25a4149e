package Example::Hello;
use strict;
use warnings;
use Apache2::RequestRec ();
use Apache2::RequestIO ();
use Apache2::Const -compile => qw(OK);
use Example::Work ();

sub handler {
    my $r = shift;
    $r->content_type('text/plain');
    $r->print(Example::Work::light());
    return Apache2::Const::OK;
}

1;
