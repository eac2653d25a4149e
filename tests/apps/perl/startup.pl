# startup.pl without preloaded data: loads the handler code in the Apache parent (shared by the
# children), but PounderTest::Data builds its ~40 MB in each child on the child's first /data.
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

1;
