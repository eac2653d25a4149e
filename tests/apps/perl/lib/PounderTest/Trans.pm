package PounderTest::Trans;
# PerlTransHandler for the stat() experiment: claims every URI under /news/ by returning OK, so
# Apache does not translate it to a file name (r->filename stays unset): no directory walk, no
# stat() of the URI's path components, no .htaccess lookups. Other URIs are DECLINED (Apache
# maps them to the DocumentRoot as usual).
use strict;
use warnings;

use Apache2::RequestRec ();
use Apache2::Const -compile => qw(OK DECLINED);

sub handler {
    my $r = shift;
    return $r->uri =~ m{^/news/} ? Apache2::Const::OK : Apache2::Const::DECLINED;
}

1;
