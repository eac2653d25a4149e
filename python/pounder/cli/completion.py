"""``pounder completion SHELL``: the shell completion script for bash, zsh or fish, printed.

The script asks ``pounder`` itself what completes a command line, through click's protocol as typer
speaks it: ``_POUNDER_COMPLETE=complete_bash`` (``complete_zsh``, ``complete_fish``) with the words
typed so far in ``COMP_WORDS``/``COMP_CWORD`` (bash) or ``_TYPER_COMPLETE_ARGS`` (zsh, fish). typer
registers its shells' completion classes only for an app built with ``add_completion``, which would
put ``--install-completion`` and ``--show-completion`` on the group (writing to ~/.bashrc or ~/.zshrc,
guessing the shell): :func:`enable` registers them when a completion is asked for, and this command
prints a script the user installs where their shell looks (its help says where), nothing else written.
The classes come from typer's ``_completion_classes`` (private: tests/cli/test_completion.py drives
each shell's protocol, so a typer that changes them fails there).
"""

from __future__ import annotations

import enum
import importlib
import sys
from typing import Annotated, Any

import typer
from typer._completion_classes import FishComplete, ZshComplete, completion_init

PROG = "pounder"
COMPLETE_VAR = "_POUNDER_COMPLETE"
"""The variable that makes ``pounder`` answer a completion request instead of running (click's
``_{PROG}_COMPLETE``)."""

BASH_DIR = "~/.local/share/bash-completion/completions"
ZSH_DIR = "~/.zfunc"
FISH_DIR = "~/.config/fish/completions"

COMPLETION_HELP = "\n\n".join([
    "Print the shell completion script for bash, zsh or fish: Tab then completes pounder's commands and "
    "options.",
    "Install it once where the shell looks for it (a new shell then has it):",
    f"bash: mkdir -p {BASH_DIR} && pounder completion bash > {BASH_DIR}/pounder (loaded by the bash-completion "
    "package; without it, source that file from ~/.bashrc).",
    f"zsh: mkdir -p {ZSH_DIR} && pounder completion zsh > {ZSH_DIR}/_pounder, and in ~/.zshrc before compinit: "
    f"fpath=({ZSH_DIR} $fpath).",
    f"fish: pounder completion fish > {FISH_DIR}/pounder.fish",
    "Exit status: 0 printed, 2 bad input (another shell).",
])


class Shell(str, enum.Enum):
    """The shells pounder completes in."""

    bash = "bash"
    zsh = "zsh"
    fish = "fish"


SHELL = typer.Argument(metavar="SHELL", show_default=False, help="bash, zsh or fish.")

# typer's zsh script ends with `compdef`: in $fpath (where typer's --install-completion puts it), zsh
# loads it on the first Tab, which then only registers the function and completes nothing (click
# issue 2344). As click's own script: when autoloaded, complete at once; when sourced, register.
_ZSH_SOURCE = """\
#compdef %(prog_name)s

%(complete_func)s() {
  eval $(env _TYPER_COMPLETE_ARGS="${words[1,$CURRENT]}" %(autocomplete_var)s=complete_zsh %(prog_name)s)
}

if [[ $zsh_eval_context[-1] == loadautofunc ]]; then
  # autoloaded from $fpath: this is the first Tab, complete it
  %(complete_func)s "$@"
else
  # sourced: register the function for the Tabs to come
  compdef %(complete_func)s %(prog_name)s
fi
"""


HELP_LIMIT = 60
"""The characters of an option's help a shell shows beside it (click shortens a command's to 45)."""


def one_line(help_text: str, limit: int = HELP_LIMIT) -> str:
    """A help text on one line, cut at a word before ``limit`` characters (``...`` then ends it).
    typer wraps it with rich at the terminal's width instead: fish takes each wrapped line for a
    candidate of its own."""
    text = " ".join(help_text.split())
    if len(text) <= limit:
        return text
    return text[:limit - 3].rsplit(" ", 1)[0].rstrip(" ,;:") + "..."


def _zsh_quoted(text: str) -> str:
    """``text`` inside the double quotes of the ``_arguments`` spec the zsh script evaluates."""
    for char, escaped in (('"', '""'), ("'", "''"), ("$", "\\$"), ("`", "\\`"), (":", "\\\\:")):
        text = text.replace(char, escaped)
    return text


class _ZshComplete(ZshComplete):
    source_template = _ZSH_SOURCE

    def format_completion(self, item: Any) -> str:
        value = f'"{_zsh_quoted(item.value)}"'
        return f'{value}:"{_zsh_quoted(one_line(item.help))}"' if item.help else value


class _FishComplete(FishComplete):
    def format_completion(self, item: Any) -> str:
        return f"{item.value}\t{one_line(item.help)}" if item.help else str(item.value)


def _shell_completion() -> Any:
    """The click module (click's or the one typer vendors) whose registry typer's classes are in."""
    return importlib.import_module(ZshComplete.__mro__[1].__module__)


def enable() -> None:
    """Register the shells' completion classes: typer's, zsh's script made loadable from $fpath and
    zsh's and fish's descriptions one line each."""
    completion_init()
    registry = _shell_completion()
    registry.add_completion_class(_ZshComplete, Shell.zsh.value)
    registry.add_completion_class(_FishComplete, Shell.fish.value)


def completion_script(shell: Shell, cli: Any) -> str:
    """The script for ``shell`` that completes the ``pounder`` command ``cli`` (its click group)."""
    enable()
    complete_class = _shell_completion().get_completion_class(shell.value)
    script: str = complete_class(cli, {}, PROG, COMPLETE_VAR).source()
    return script.strip() + "\n"  # zsh reads `#compdef` on the first line only


def completion_command(ctx: typer.Context, shell: Annotated[Shell, SHELL]) -> int:
    sys.stdout.write(completion_script(shell, ctx.find_root().command))
    return 0
