# Loaded in the Apache parent: the experiments' modules directory on @INC, and the small handlers.
use strict;
use warnings;
use Apache2::ServerUtil ();
use lib Apache2::ServerUtil::server_root() . '/perl';
use Apache2::RequestRec ();
use Apache2::RequestIO ();
use ModPerl::Registry ();
use Example::Hello ();
use Example::Heavy ();
use Example::BigHandler ();
use Example::Trans ();
1;
