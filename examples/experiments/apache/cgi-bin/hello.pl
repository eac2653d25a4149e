#!/usr/bin/perl
use strict;
use warnings;
use FindBin ();
use lib "$FindBin::Bin/../perl";
use Example::Work ();
print "Content-Type: text/plain\n\n", Example::Work::light();
