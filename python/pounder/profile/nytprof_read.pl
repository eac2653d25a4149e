#!/usr/bin/perl
# pounder profile: read one Devel::NYTProf file (written with calls=1) and print, tab separated:
#   ticks_per_sec  N
#   stack  TICKS  outer;...;leaf     (exclusive time of the leaf on that call path)
#   calls  N  sub                    (completed calls of each sub)
# The call paths are built from the stream of sub-return events as nytprofcalls does
# (Devel::NYTProf 6), with names' ";" and whitespace replaced by "?".
use strict;
use warnings;
use Devel::NYTProf::Core;
require Devel::NYTProf::Data;

my %attribute;
my %calls;
my $root = {};
my @stack = ($root);

sub merge {
    my ($dest, $new) = @_;
    $dest->{v} += delete $new->{v} // 0;
    while (my ($sub, $node) = each %$new) {
        if ($dest->{$sub}) { merge($dest->{$sub}, $node) } else { $dest->{$sub} = $node }
    }
}

sub on_return {
    my (undef, $depth, undef, $excl, $name) = @_;
    $name =~ s/\( (\w*eval)\s\d+ \) (?= \[ .+? :\d+ \] )/($1 0)/gx;
    $name =~ tr/; \t\n/????/;
    $calls{$name}++;
    while (@stack <= $depth) {
        my $node = $stack[-1];
        die "nytprof_read: inconsistent call stack\n" if $node->{0};
        push @stack, ($node->{0} = {});
    }
    my $returned = pop @stack;
    my $caller = $stack[-1] or die "nytprof_read: inconsistent call stack\n";
    delete $caller->{0};
    $returned->{v} += $excl;
    merge($caller->{$name} ||= {}, $returned);
}

sub walk {
    my ($node, $path) = @_;
    for my $name (sort keys %$node) {
        next if $name eq 'v' || $name eq '0';
        my @here = (@$path, $name);
        my $child = $node->{$name};
        printf "stack\t%.0f\t%s\n", $child->{v}, join(';', @here) if $child->{v};
        walk($child, \@here);
    }
}

my $file = shift or die "usage: nytprof_read.pl FILE\n";
Devel::NYTProf::Data->new({filename => $file, quiet => 1, callback => {
    ATTRIBUTE  => sub { my (undef, $k, $v) = @_; $attribute{$k} = $v },
    SUB_RETURN => \&on_return,
}});
print "ticks_per_sec\t", ($attribute{ticks_per_sec} // 0), "\n";
walk($root, []);
print "calls\t$calls{$_}\t$_\n" for sort keys %calls;
