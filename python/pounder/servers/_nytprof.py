"""Devel::NYTProf in a Perl server, for ``pounder profile``: the lines that load it (pure
functions), shared by the servers pounder starts (Apache + mod_perl, Starman) and by the message
that tells the user what to add to a server pounder did not start.

NYTProf is loaded in the parent with ``start=no`` (nothing is profiled until asked), one file per
process (``addpid=1``: ``DIR/nytprof.out.PID``, written when the process exits cleanly), no
statement profiler (``stmts=0``: subroutines and their call stacks only, the cheap part), and
pounder's window module ``Pounder::ProfileWindow`` (shipped in :data:`NYTPROF_LIB`) profiles a
request only while the flag file ``DIR/pounder-profile-window.on`` exists.
"""

from __future__ import annotations

from pathlib import Path

from pounder._errors import UsageError, public

NYTPROF_LIB = Path(__file__).resolve().parent / "perl"
"""The directory holding ``Pounder/ProfileWindow.pm`` (put it on the server's @INC)."""
NYTPROF_FILE = "nytprof.out"
"""NYTProf's ``file=`` in the profile directory; each process writes ``nytprof.out.PID``."""
WINDOW_FLAG = "pounder-profile-window.on"
"""Exists while a profiled trial runs: the window module profiles the requests that begin then."""
WINDOW_MARK = "pounder-profile-window"
"""Created and kept open by the window module when it is loaded: pounder finds the profile
directory (and knows the module is loaded) from the server's open files."""
NYTPROF_OPTIONS = "start=no:addpid=1:stmts=0:subs=1:calls=1:slowops=0:savesrc=0"
"""The options besides ``file=``: nothing profiled until the window opens, one file per process,
subroutines and their call stacks (calls=1, for the stacks), no statements nor opcodes."""


def _checked(directory: Path) -> str:
    text = str(directory)
    if not directory.is_absolute() or any(c.isspace() or c in "\"':\\" for c in text):
        raise UsageError(f"profile directory {text!r}: give an absolute path without spaces, quotes, colons "
                         "or backslashes (it goes into NYTPROF and the server's configuration)")
    return text


@public
def nytprof_env(directory: Path) -> str:
    """The value of ``NYTPROF`` that profiles into ``directory``."""
    return f"{NYTPROF_OPTIONS}:file={_checked(directory)}/{NYTPROF_FILE}"


@public
def apache_nytprof_lines(directory: Path, lib: Path = NYTPROF_LIB) -> list[str]:
    """The httpd.conf lines (after ``LoadModule perl_module``, before the application's
    ``PerlRequire``/``PerlModule``: code compiled before NYTProf is loaded is not profiled)."""
    return [f"PerlSetEnv NYTPROF {nytprof_env(directory)}", f"PerlSwitches -I{_checked(lib)}",
            "PerlLoadModule Devel::NYTProf::Apache", "PerlLoadModule Pounder::ProfileWindow"]


@public
def starman_nytprof_args(lib: Path = NYTPROF_LIB) -> list[str]:
    """Starman's options that load NYTProf and the window in the master (before the .psgi; with
    ``NYTPROF`` from :func:`nytprof_env` in its environment); ``-e`` wraps the application in the window."""
    return ["-I", _checked(lib), "-MDevel::NYTProf", "-MPounder::ProfileWindow", "-e",
            'enable "+Pounder::ProfileWindow"']
