package Pounder::ProfileWindow;
# pounder profile's window for Devel::NYTProf (loaded with start=no): each request is profiled
# when the flag file DIR/pounder-profile-window.on exists (pounder creates it when a profiled trial
# begins and removes it when it ends), DIR being the directory of NYTPROF's file=. Only the
# request's own work is profiled: profiling is enabled when the request begins and disabled when
# it ends.
#
# Loading it also creates DIR/pounder-profile-window and keeps it open, so that pounder finds DIR
# (and knows the module is loaded) from the server's open files.
#
# mod_perl 2:   PerlSetEnv NYTPROF start=no:addpid=1:stmts=0:file=DIR/nytprof.out
#               PerlLoadModule Devel::NYTProf::Apache   (before the application's Perl* lines)
#               PerlLoadModule Pounder::ProfileWindow   (installs its own handler)
# PSGI/Starman: NYTPROF=start=no:addpid=1:stmts=0:file=DIR/nytprof.out
#               starman -I LIB -MDevel::NYTProf -e 'enable "+Pounder::ProfileWindow"' app.psgi
use strict;
use warnings;
use Fcntl qw(O_RDONLY O_CREAT);
use File::Basename qw(dirname);

our $VERSION = '1';
our $FLAG;
our $MARK;
my $marker;

sub _dir {
    my $spec = $ENV{NYTPROF} // '';
    my ($file) = $spec =~ /(?:^|:)file=((?:\\.|[^:\\])*)/;
    $file = './nytprof.out' unless defined $file && length $file;
    $file =~ s/\\(.)/$1/g;
    return dirname($file);
}

sub _init {
    my $dir = _dir();
    $FLAG = "$dir/pounder-profile-window.on";
    $MARK = "$dir/pounder-profile-window";
    sysopen($marker, $MARK, O_RDONLY | O_CREAT, 0644)
        or warn "Pounder::ProfileWindow: cannot create $MARK: $!\n";
}

sub begin_request {
    DB::enable_profile() if -e $FLAG && defined &DB::enable_profile;
    return;
}

sub end_request {
    DB::disable_profile() if defined &DB::disable_profile;
    return;
}

# mod_perl 2 (0 is Apache2::Const::OK): the request's pool cleanup ends its profiling
sub post_read_request {
    my ($r) = @_;
    return 0 unless -e $FLAG && defined &DB::enable_profile;
    $r->pool->cleanup_register(\&end_request);  # (not profiled: before the enable)
    DB::enable_profile();
    return 0;
}

# PSGI: enable "+Pounder::ProfileWindow" (Plack::Builder calls wrap)
sub wrap {
    my ($class, $app) = @_;
    return sub {
        begin_request();
        my $res = eval { $app->(@_) };
        my $error = $@;
        end_request();
        die $error if $error;
        return $res;
    };
}

_init();
if ($ENV{MOD_PERL}) {
    require Apache2::ServerUtil;
    my $server = Apache2::ServerUtil->server;
    require APR::Pool;
    require Apache2::RequestRec;
    $server->push_handlers(PerlPostReadRequestHandler => \&post_read_request);
}

1;
