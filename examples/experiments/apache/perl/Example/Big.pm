package Example::Big;
# Stands for an application's big dependencies: large core modules plus ~16 MB of tables built
# at load time. Loaded in the parent (PerlModule Example::Big) its pages are shared by every
# child; loaded on first use, every child holds its own copy.
use strict;
use warnings;
use Module::CoreList ();
use Pod::Simple ();
use Encode ();

our @TABLE = map { sprintf("%08d", $_) x 16 } 1 .. 120_000;

sub count { return scalar @TABLE }

1;
