use strict;
use warnings;
use Example::Work ();
print "Content-Type: text/plain\n\n", Example::Work::light();
