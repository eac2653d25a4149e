"""Shell completion (issue 42): ``pounder completion SHELL`` prints the script for bash, zsh or fish,
and ``pounder`` answers the script's requests (``_POUNDER_COMPLETE=complete_SHELL`` with the words
typed so far) with its commands, their options (not the hidden old spellings) and the shells; with
bash here, the script itself is sourced and its function asked, as bash asks it on Tab."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pounder.cli import app
from pounder.cli.completion import HELP_LIMIT, one_line
from support import cliutil
from support.cliutil import assert_usage_error, run_pounder, with_pythonpath

COMMANDS = ["bench", "compare", "mem", "syscalls", "profile", "top", "tune", "run", "report", "completion"]


def _ask(shell: str, line: str, action: str = "get-args") -> tuple[int, list[str]]:
    """What ``pounder`` answers the ``shell`` script that asks about ``line`` (the words typed
    before the cursor, the last one being completed): its exit status and its lines."""
    env = {"_POUNDER_COMPLETE": f"complete_{shell}"}
    if shell == "bash":
        words = line.split(" ")
        env |= {"COMP_WORDS": line, "COMP_CWORD": str(len(words) - 1)}
    else:
        env |= {"_TYPER_COMPLETE_ARGS": line, "_TYPER_COMPLETE_FISH_ACTION": action}
    result = cliutil.runner().invoke(app, [], env=env)
    assert result.stderr == "", result.stderr
    return result.exit_code, result.stdout.splitlines()


def _bash(line: str) -> list[str]:
    code, lines = _ask("bash", line)
    assert code == 0
    return [candidate for candidate in lines if candidate]


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_the_script_of_each_shell_asks_pounder(shell: str) -> None:
    code, out, err = cliutil.run_cli("completion", shell)
    assert (code, err) == (0, "")
    assert f"_POUNDER_COMPLETE=complete_{shell}" in out
    assert out.endswith("\n") and not out.startswith("\n")
    if shell == "bash":
        assert "complete -o default -F _pounder_completion pounder" in out.splitlines()
    elif shell == "zsh":
        # first line for compinit; autoloaded from $fpath it completes the first Tab too
        assert out.splitlines()[0] == "#compdef pounder"
        assert "if [[ $zsh_eval_context[-1] == loadautofunc ]]; then" in out
        assert "compdef _pounder_completion pounder" in out
    else:
        assert out.startswith("complete --command pounder ")


def test_another_shell_is_a_usage_error() -> None:
    assert_usage_error(*cliutil.run_cli("completion", "tcsh"), "'tcsh' is not one of 'bash', 'zsh', 'fish'")
    assert_usage_error(*cliutil.run_cli("completion"), "Missing argument 'SHELL'")


def test_bash_completes_commands_options_and_shells() -> None:
    assert _bash("pounder ") == COMMANDS
    assert _bash("pounder tu") == ["tune"]
    assert _bash("pounder co") == ["compare", "completion"]
    assert _bash("pounder bench --ra") == ["--rate", "--ray"]
    assert _bash("pounder tune --qu") == ["--quick"]
    assert _bash("pounder completion ") == ["bash", "zsh", "fish"]
    assert _bash("pounder --") == ["--version", "--help"]


def test_hidden_old_spellings_are_not_offered() -> None:
    offered = _bash("pounder mem --")
    assert {"--server-pid", "--server-pidfile", "--server-name"} <= set(offered)
    assert not {"--pid", "--pidfile", "--name"} & set(offered)


def test_completing_after_version_prints_no_version() -> None:
    """--version is eager: read while completing, it would print the version as a candidate."""
    assert _bash("pounder --version ") == COMMANDS


def test_zsh_gets_an_arguments_spec_with_one_line_descriptions() -> None:
    code, lines = _ask("zsh", "pounder bench --ra")
    assert code == 0
    assert lines[0].startswith("""_arguments '*: :(("--rate":"Open loop at a global rate in req/s\\\\: """)
    assert lines[1].startswith('"--ray":"Send the load from agents on a Ray cluster')
    assert lines[-1].endswith("""..."))'""") and len(lines) == 2
    tune = '''_arguments '*: :(("tune":"Start a pre-forking server on a free..."))\''''
    assert _ask("zsh", "pounder tu")[1] == [tune]


def test_fish_gets_one_candidate_a_line() -> None:
    code, lines = _ask("fish", "pounder bench --ra")
    assert code == 0
    assert [line.split("\t")[0] for line in lines] == ["--rate", "--ray"]
    assert all(len(line.split("\t")[1]) <= HELP_LIMIT for line in lines)
    assert _ask("fish", "pounder co", "is-args")[0] == 0  # candidates: no file names
    assert _ask("fish", "pounder report ", "is-args")[0] == 1  # a RESULT path: fish offers files


def test_one_line_cuts_at_a_word() -> None:
    assert one_line("Open loop at a\n global rate.") == "Open loop at a global rate."
    assert one_line("word " * 20, 20) == "word word word..."
    assert one_line("Send the load: 'local', 'auto' or the head", 27) == "Send the load: 'local'..."


def test_a_real_pounder_answers_the_request() -> None:
    """``python -m pounder``, as the scripts start it (not through the test runner)."""
    env = with_pythonpath({**os.environ, "_POUNDER_COMPLETE": "complete_bash", "COMP_WORDS": "pounder ru",
                           "COMP_CWORD": "1"})  # fmt: skip
    done = run_pounder(timeout=60, env=env)
    assert (done.returncode, done.stdout, done.stderr) == (0, "run\n", "")


def _pounder_on_path(tmp_path: Path) -> dict[str, str]:
    """An environment whose ``pounder`` is this checkout's (the scripts run ``pounder``)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "pounder"
    shim.write_text(f'#!/bin/sh\nexec {sys.executable} -m pounder "$@"\n')
    shim.chmod(0o755)
    env = with_pythonpath()
    return {**env, "PATH": f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"}


def _script(shell: str, tmp_path: Path) -> Path:
    code, out, _ = cliutil.run_cli("completion", shell)
    assert code == 0
    path = tmp_path / f"pounder.{shell}"
    path.write_text(out)
    return path


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")
def test_bash_sources_the_script_and_its_function_completes(tmp_path: Path) -> None:
    """As bash on Tab: COMP_WORDS and COMP_CWORD set, the function called with the command, the
    word and the word before; COMPREPLY read back."""
    asked = r"""
source "$1"
complete -p pounder
ask() { COMP_WORDS=("$@"); COMP_CWORD=$(( $# - 1 )); COMPREPLY=()
        _pounder_completion pounder "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
        echo "${COMPREPLY[*]}"; }
ask pounder tu
ask pounder bench --ra
ask pounder completion ''
"""
    done = subprocess.run(["bash", "--norc", "--noprofile", "-c", asked, "bash", str(_script("bash", tmp_path))],
                          env=_pounder_on_path(tmp_path), capture_output=True, text=True, timeout=60, check=False)
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.splitlines() == ["complete -o default -F _pounder_completion pounder", "tune",
                                        "--rate --ray", "bash zsh fish"]  # fmt: skip


@pytest.mark.skipif(shutil.which("fish") is None, reason="fish is not installed")
def test_fish_sources_the_script_and_completes(tmp_path: Path) -> None:
    asked = f"source {_script('fish', tmp_path)}; complete -C 'pounder tu'; complete -C 'pounder bench --ra'"
    done = subprocess.run(["fish", "--no-config", "-c", asked], env=_pounder_on_path(tmp_path),
                          capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert [line.split("\t")[0] for line in done.stdout.splitlines()] == ["tune", "--rate", "--ray"]


@pytest.mark.skipif(shutil.which("zsh") is None, reason="zsh is not installed")
def test_zsh_reads_the_script(tmp_path: Path) -> None:
    """zsh's completion runs only at a terminal: the script is checked for syntax only."""
    done = subprocess.run(["zsh", "-n", str(_script("zsh", tmp_path))], capture_output=True, text=True,
                          timeout=60, check=False)  # fmt: skip
    assert (done.returncode, done.stderr) == (0, "")
