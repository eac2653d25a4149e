package Example::Work;
# The work every variant does, so handler, Registry and CGI run the very same code.
use strict;
use warnings;

# light: a short answer
sub light { return "hello\n" }

# heavy: ~20,000 iterations of string and hash work, a page of output
sub heavy {
    my %seen;
    my $text = '';
    for my $i (1 .. 20_000) {
        my $key = "k" . ($i % 997);
        $seen{$key} += $i;
    }
    $text .= "$_ $seen{$_}\n" for (sort keys %seen)[0 .. 49];
    return $text;
}

1;
