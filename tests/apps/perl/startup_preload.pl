# startup.pl with preloaded data: as startup.pl, and PounderTest::Data builds (writes) its ~40 MB
# here, in the Apache parent, before the children are forked: they share it copy-on-write.
use strict;
use warnings;

use Apache2::RequestRec ();
use Apache2::RequestIO ();
use PounderTest::Hello ();
use PounderTest::Cpu ();
use PounderTest::Leak ();
use PounderTest::Big ();
use PounderTest::Data ();
use PounderTest::Grow ();

PounderTest::Data::build();

1;
