package Example::Trans;
# A PerlTransHandler that claims /news/... by returning OK: Apache then never maps the URI to a
# file name, so it stats nothing and looks for no .htaccess on the way.
use strict;
use warnings;
use Apache2::RequestRec ();
use Apache2::Const -compile => qw(OK DECLINED);

sub handler {
    my $r = shift;
    return $r->uri =~ m{^/news/} ? Apache2::Const::OK : Apache2::Const::DECLINED;
}

1;
