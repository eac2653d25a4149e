package PounderTest::Data;
# ~40 MB of data, really written (so resident): a 32 MB string plus 8192 distinct 1 KB strings.
# startup_preload.pl calls build() in the Apache parent, so the children share the pages
# copy-on-write; without it, GET /data builds a private copy in each child on its first request.
# GET /data answers "pid P bytes N built_in B": B is the pid that built the data (the parent's
# pid when preloaded).
use strict;
use warnings;

use Apache2::RequestRec ();
use Apache2::RequestIO ();
use Apache2::Const -compile => qw(OK);

use constant STRING_MB => 32;
use constant CHUNKS => 8192;    # x 1 KB = 8 MB

our $STRING;
our @CHUNKS;
our $BUILT_IN;

sub build {
    return if defined $BUILT_IN;    # idempotent: Apache reads its config (and startup.pl) twice
    # Counts in variables: "d" x CONSTANT would be folded into a second 32 MB copy at compile time.
    my $bytes = STRING_MB * 1024 * 1024;
    my $chunks = CHUNKS;
    $STRING = "d" x $bytes;
    push @CHUNKS, sprintf("%08d", $_) x 128 for 1 .. $chunks;
    $BUILT_IN = $$;
    return;
}

sub bytes { return length($STRING // '') + 1024 * scalar(@CHUNKS) }

sub handler {
    my $r = shift;
    build();
    $r->content_type('text/plain');
    $r->print("pid $$ bytes " . bytes() . " built_in $BUILT_IN\n");
    return Apache2::Const::OK;
}

1;
