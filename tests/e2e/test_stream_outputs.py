"""``--tsv`` and ``--hdr-log`` are never lost silently (issue 25 items 2-4): they are written beside
their file and renamed over it at the end, so a run killed leaves the old file whole (and at most
a temporary file, which the next run removes); a write error (a full disk: a small tmpfs, or
``/dev/full``) ends the run with exit 1 and one line naming the option, after the figures, and
leaves the old file as it was. Real runs of ``python -m pounder bench`` against a test server."""

from __future__ import annotations

import contextlib
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pounder._files import TEMP_SUFFIX
from support.cliutil import run_pounder, start_pounder, with_pythonpath


def _bench(*args: str, timeout_s: float = 60) -> subprocess.CompletedProcess[str]:
    return run_pounder("bench", *args, env=with_pythonpath(), timeout=timeout_s)


@contextlib.contextmanager
def _small_disk(folder: Path, size: str = "64k", *, read_only: bool = False) -> Iterator[Path]:
    """A tmpfs of ``size`` at ``folder`` (root only), unmounted afterwards."""
    folder.mkdir()
    options = f"size={size}" + (",ro" if read_only else "")
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(folder)],
                             capture_output=True, text=True, check=False)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


def _temps(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if TEMP_SUFFIX in p.name)


_NAMES = {"--tsv": "out.tsv", "--hdr-log": "out.log"}
"""An old file for each streamed output, named as the rule for output names allows."""


@pytest.mark.parametrize("option", ["--tsv", "--hdr-log"])
def test_a_full_disk_is_one_line_exit_1_and_the_old_file_is_kept(testserver: Any, tmp_path: Path,
                                                                   option: str) -> None:
    srv = testserver(mode="ok")
    with _small_disk(tmp_path / "disk") as disk:
        out = disk / _NAMES[option]
        out.write_text("the old file\n")
        filler = disk / "filler"  # what is left: a few KB, far less than 20,000 lines or seconds of histograms
        with contextlib.suppress(OSError), open(filler, "wb") as file:
            file.write(b"x" * 60 * 1024)
        done = _bench(srv.url + "/", "-n", "20000", "-c", "4", option, str(out), "--json", str(tmp_path / "r.json"))
        assert done.returncode == 1, done.stdout + done.stderr
        assert "Traceback" not in done.stderr
        assert done.stderr.splitlines() == [f"pounder: error: cannot write {option} {out}: No space left on device "
                                            "(the file is left as it was)"], done.stderr
        assert "Complete requests" in done.stdout  # the figures are still shown
        assert (tmp_path / "r.json").is_file()  # and the other outputs written
        assert out.read_text() == "the old file\n"
        assert _temps(disk) == []


@pytest.mark.parametrize("option", ["--tsv", "--hdr-log"])
def test_dev_full_is_a_write_error_not_silence(testserver: Any, option: str) -> None:
    srv = testserver(mode="ok")
    done = _bench(srv.url + "/", "-n", "2000", "-c", "2", option, "/dev/full")
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stderr.splitlines()[-1] == f"pounder: error: cannot write {option} /dev/full: No space left on device"


@pytest.mark.parametrize("option", ["--json", "--csv", "--report"])
def test_every_output_on_dev_full_names_its_option(testserver: Any, option: str) -> None:
    """Issue 25 item 17: ``cannot write /dev/full`` did not say which option (--report)."""
    srv = testserver(mode="ok")
    done = _bench(srv.url + "/", "-n", "20", "-q", option, "/dev/full")
    assert done.returncode == 1, done.stderr
    assert done.stderr.splitlines() == [f"pounder: error: cannot write {option} /dev/full: No space left on device"]


def test_compare_json_on_dev_full_names_its_option(testserver: Any) -> None:
    """Issue 25's families: compare's rewritten --json said ``cannot write /dev/full`` alone."""
    url = testserver(mode="ok").url + "/"
    done = run_pounder("compare", url, url + "x", "--trials", "3", "-d", "200ms", "--no-warmup", "--json", "/dev/full",
                       env=with_pythonpath(), timeout=60)
    assert done.returncode == 1, done.stderr
    assert done.stderr.splitlines() == ["pounder: error: cannot write --json /dev/full: No space left on device"]


@pytest.mark.parametrize("command", [["tune", "command", "sleep 100 # {port} {workers}"], ["run", "exp.toml"]])
def test_results_on_a_read_only_disk_is_bad_input_before_anything_starts(tmp_path: Path, command: list[str]) -> None:
    """Issue 25's families: ``tune --results`` on a read-only file system printed its start line
    before the error, and ``run --results`` a traceback from mkdir."""
    (tmp_path / "exp.toml").write_text(EXPERIMENT)
    with _small_disk(tmp_path / "ro", read_only=True):
        done = run_pounder(*command, "--results", "ro/R", cwd=tmp_path, env=with_pythonpath(), timeout=60)
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == ["pounder: error: cannot create the results directory ro/R: "
                                        "Read-only file system"]


EXPERIMENT = """title = "t"
[server]
adapter = "command"
command = "sleep 100 # {port} {workers}"
workers = 1
[[load]]
connections = 1
duration = "1s"
[[variant]]
label = "a"
path = "/"
[[variant]]
label = "b"
path = "/x"
"""


@pytest.mark.parametrize("args", [["-n", "20"], ["-n", "20", "--json", "-"], ["--help"]])
def test_standard_output_on_a_full_disk_is_one_line_not_a_traceback(testserver: Any, args: list[str]) -> None:
    srv = testserver(mode="ok")
    with open("/dev/full", "w") as full:
        done = run_pounder("bench", srv.url + "/", *args, stdout=full, env=with_pythonpath(), timeout=60)
    assert done.returncode == 1, done.stderr
    assert done.stderr.splitlines() == ["pounder: error: cannot write to standard output: No space left on device"]


@pytest.mark.parametrize("option", ["--tsv", "--hdr-log"])
def test_a_killed_run_leaves_the_old_file_and_the_next_run_cleans_up(testserver: Any, tmp_path: Path,
                                                                       option: str) -> None:
    srv = testserver(mode="ok", delay_ms=1)
    out = tmp_path / _NAMES[option]
    out.write_text("the old file\n")
    proc = start_pounder("bench", srv.url + "/", "-d", "10s", "-c", "2", option, out, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, text=False, env=with_pythonpath())
    try:
        deadline = time.monotonic() + 20
        while not _temps(tmp_path) and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(1.5)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
    assert out.read_text() == "the old file\n"  # not emptied at the start, not half written
    assert len(_temps(tmp_path)) == 1
    done = _bench(srv.url + "/", "-n", "50", "-c", "1", option, str(out))
    assert done.returncode == 0, done.stderr
    assert out.read_text() != "the old file\n" and _temps(tmp_path) == []


def test_in_place_write_on_a_full_disk_keeps_the_old_content(tmp_path: Path) -> None:
    """Item 4: a writable file in a directory the user cannot write is written in place; on a
    full disk the old content was replaced by 4,096 bytes of truncated JSON."""
    from pounder import PounderError
    from pounder._files import _write_in_place

    with _small_disk(tmp_path / "disk") as disk:
        target = disk / "result.json"
        target.write_text('{"old": true}\n')
        with contextlib.suppress(OSError), open(disk / "filler", "wb") as file:
            file.write(b"x" * 64 * 1024)
        with pytest.raises(PounderError, match="No space left on device"):
            _write_in_place(target, b"[" + b"1," * 100_000 + b"1]", "--json")
        assert target.read_text() == '{"old": true}\n'
