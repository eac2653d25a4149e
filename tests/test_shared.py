"""The shared top-level modules: pounder._units (one suffix rule), pounder._files (atomic writes,
file-or-stdout, output checks, timestamps) and pounder._records (the typed JSON reader)."""

from __future__ import annotations

import os
import re
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pounder import BenchSpec, LoadOptions, PounderError, UsageError
from pounder._files import check_output_path, replacing, utc_timestamp, write_atomic, write_output
from pounder._records import Reader
from pounder._units import (
    MIB,
    available_cpus,
    children_text,
    count_in_range,
    count_text,
    cpu_list_text,
    mib,
    mib_unit,
    parse_count,
    parse_count_list,
    parse_cpu_list,
    parse_pid,
    parse_ram,
    parse_size,
    pinned_thread,
)

# ---------------------------------------------------------------------------------------------
# units


@pytest.mark.parametrize(("text", "count"), [("1", 1), ("1k", 1000), ("1K", 1000), ("1M", 10**6), ("1G", 10**9),
                                             ("2.5k", 2500), ("1.5M", 1_500_000)])
def test_one_suffix_rule_for_every_count(text: str, count: int) -> None:
    """-n, --mrpc, --requests-per-child, --clients: the same letters, the same values."""
    assert parse_count(text, "-n") == count
    assert count_in_range(text, "--requests-per-child", 0, 10**10) == count
    assert parse_count_list(f"0,{text}", "--mrpc") == (0, count)


@pytest.mark.parametrize(("text", "size"), [("2G", 2 << 30), ("2g", 2 << 30), ("2GiB", 2 << 30), ("512M", 512 * MIB),
                                            ("1k", 1024), ("1T", 1 << 40)])
def test_sizes_take_the_same_letters_as_powers_of_1024(text: str, size: int) -> None:
    assert parse_size(text) == size
    assert parse_ram("2G") == 2 << 30


@pytest.mark.parametrize("text", ["1m", "ten", "-1", "1.5", "1kk", ""])
def test_counts_refused_in_one_line(text: str) -> None:
    with pytest.raises(UsageError, match=r"^invalid -n ") as caught:
        parse_count(text, "-n")
    assert "\n" not in str(caught.value)


def test_one_message_for_a_count_that_cannot_be_read() -> None:
    for text in ("ten", "1.5", "-5", "1m"):
        with pytest.raises(UsageError) as caught:
            parse_count(text, "-n")
        assert str(caught.value) == f"invalid -n {text!r}: expected a whole number such as 100, 10k or 1M"


@pytest.mark.parametrize("text", ["1k", "31.136k", "31136.0", "0", "-1", "abc", "2147483648", ""])
def test_a_pid_takes_no_suffix(text: str) -> None:
    """--server-pid 1k must not attach strace to pid 1000."""
    with pytest.raises(UsageError, match=r"expected a process id \(a positive whole number\)$"):
        parse_pid(text, "--pid")
    assert parse_pid(" 31136 ", "--pid") == 31136


def test_count_in_range_names_the_range() -> None:
    with pytest.raises(UsageError, match=r"^--top must be between 1 and 1,000, got 2,000$"):
        count_in_range("2k", "--top", 1, 1000)
    with pytest.raises(UsageError, match="must be a whole number"):
        count_in_range(True, "--top", 1, 1000)  # type: ignore[arg-type]


def test_count_list_reads_a_minus_sign_for_the_caller_to_refuse() -> None:
    assert parse_count_list("0, -1, 10k", "--mrpc") == (0, -1, 10_000)
    with pytest.raises(UsageError, match="give whole numbers separated by commas"):
        parse_count_list("0,,1", "--mrpc")


def test_mib_formatters() -> None:
    assert mib(None) == "-"
    assert mib(40 * MIB + MIB // 3) == "40.3"
    assert mib(1024 * MIB) == "1,024.0"
    assert mib(1024 * MIB, grouped=False) == "1024.0"
    assert mib_unit(1.5 * MIB) == "1.5 MiB"


def test_available_cpus_is_the_affinity_mask() -> None:
    assert available_cpus() == len(os.sched_getaffinity(0))


def test_cpu_lists_read_as_the_kernel_writes_them() -> None:
    last = max(os.sched_getaffinity(0))
    assert parse_cpu_list("0", "--server-cpus") == (0,)
    assert parse_cpu_list(f" 0-{last} ", "--server-cpus") == tuple(sorted(os.sched_getaffinity(0)))
    assert parse_cpu_list(f"{last},0,0", "--server-cpus") == tuple(sorted({0, last}))
    assert cpu_list_text((0, 1, 2, 3, 6, 8, 9)) == "0-3,6,8-9"
    assert cpu_list_text([5]) == "5"
    assert parse_cpu_list(cpu_list_text(sorted(os.sched_getaffinity(0))), "x") == tuple(sorted(os.sched_getaffinity(0)))


@pytest.mark.parametrize("text", ["", " ", "a", "1-", "-1", "0,,1", "0.5", "1-0", "0:1"])
def test_cpu_lists_refused_in_one_line(text: str) -> None:
    with pytest.raises(UsageError, match=r"^invalid --load-cpus .*(CPU numbers|backwards)") as caught:
        parse_cpu_list(text, "--load-cpus")
    assert "\n" not in str(caught.value)


def test_a_cpu_this_process_may_not_use_is_refused() -> None:
    beyond = max(os.sched_getaffinity(0)) + 1
    with pytest.raises(UsageError, match=rf"CPU {beyond} not available here"):
        parse_cpu_list(f"0,{beyond}", "--server-cpus")


def test_pinned_thread_pins_the_calling_thread_and_puts_it_back() -> None:
    before = os.sched_getaffinity(0)
    with pinned_thread((0,)):
        assert os.sched_getaffinity(0) == {0}
    assert os.sched_getaffinity(0) == before
    with pinned_thread(None):
        assert os.sched_getaffinity(0) == before


# ---------------------------------------------------------------------------------------------
# files


def test_utc_timestamp() -> None:
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", utc_timestamp())
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", utc_timestamp("seconds"))


def test_write_atomic_replaces_whole_and_leaves_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "out.json"
    target.write_text("old")
    write_atomic(target, "new\n")
    assert target.read_text() == "new\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o644
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]
    write_atomic(target, b"\x00bytes")
    assert target.read_bytes() == b"\x00bytes"


def test_an_error_while_writing_keeps_the_old_file(tmp_path: Path) -> None:
    target = tmp_path / "out.txt"
    target.write_text("old")
    with pytest.raises(RuntimeError), replacing(target) as tmp:
        tmp.write_text("half")
        raise RuntimeError("interrupted")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["out.txt"]


def test_write_errors_are_one_line_naming_the_option(tmp_path: Path) -> None:
    with pytest.raises(PounderError, match=r"^cannot write --json .*missing/out.json: No such file or directory$"):
        write_atomic(tmp_path / "missing" / "out.json", "x", "--json")


def test_write_output_dash_is_stdout(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    write_output("-", "to stdout\n")
    assert capsys.readouterr().out == "to stdout\n"
    write_output(tmp_path / "f", "to file")
    assert (tmp_path / "f").read_text() == "to file"


def test_check_output_path(tmp_path: Path) -> None:
    assert check_output_path(None, "--json", "JSON") is None
    assert check_output_path("-", "--json", "JSON") == "-"
    assert check_output_path(tmp_path / "new.json", "--json", "JSON") == str(tmp_path / "new.json")
    assert not (tmp_path / "new.json").exists()
    with pytest.raises(UsageError, match="is a directory"):
        check_output_path(tmp_path, "--json", "JSON")
    with pytest.raises(UsageError, match="does not exist"):
        check_output_path(tmp_path / "no" / "x", "--json", "JSON")


def test_check_output_path_applies_the_rule_for_output_names(tmp_path: Path) -> None:
    """The name rule is checked with the rest, before a run: a suffix of another format is refused
    and nothing is made; a name that chooses its format (kind None) is left to output_format."""
    with pytest.raises(UsageError, match=r"^--json .*x\.png: the file is JSON, not \.png: give a name ending in "
                                         r"\.json$"):  # fmt: skip
        check_output_path(tmp_path / "x.png", "--json", "JSON")
    assert check_output_path(tmp_path / "x.txt", "--csv", "CSV") == str(tmp_path / "x.txt")
    assert check_output_path(tmp_path / "x.png", "--chart", None) == str(tmp_path / "x.png")
    assert list(tmp_path.iterdir()) == []


def test_check_output_path_never_makes_the_file_it_checks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A reader polling for the output (the way a test or a script waits for partial results)
    must never find it there empty: the check writes beside it, and leaves nothing."""
    (tmp_path / "link.json").symlink_to(tmp_path / "target.json")
    made: list[str] = []
    real_mkstemp = tempfile.mkstemp

    def watching(*args: Any, **kwargs: Any) -> tuple[int, str]:
        fd, name = real_mkstemp(*args, **kwargs)
        made.append(name)
        assert not (tmp_path / "out.json").exists() and not (tmp_path / "target.json").exists()
        return fd, name

    monkeypatch.setattr(tempfile, "mkstemp", watching)
    check_output_path(tmp_path / "out.json", "--json", "JSON")
    check_output_path(tmp_path / "link.json", "--json", "JSON")
    monkeypatch.undo()
    assert [Path(name).parent for name in made] == [tmp_path, tmp_path]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.json"]
    (tmp_path / "old.json").write_text("{}")
    check_output_path(tmp_path / "old.json", "--json", "JSON")
    assert (tmp_path / "old.json").read_text() == "{}"


# ---------------------------------------------------------------------------------------------
# records


class _Malformed(PounderError):
    pass


@dataclass(frozen=True)
class _Row:
    name: str
    count: int
    share: float | None
    ok: bool


READ = Reader(_Malformed)


def test_record_reads_by_type() -> None:
    row = READ.record(_Row, {"name": "a", "count": 3.0, "share": None, "ok": True}, "")
    assert row == _Row("a", 3, None, True)
    assert isinstance(row.count, int)


@pytest.mark.parametrize(("data", "message"), [
    ({"count": 1, "share": 1, "ok": True}, "missing 'row.name'"),
    ({"name": "a", "count": 1.5, "share": 1, "ok": True}, "'row.count' must be a whole number >= 0, got 1.5"),
    ({"name": "a", "count": True, "share": 1, "ok": True}, "'row.count' must be a whole number"),
    ({"name": "a", "count": -5, "share": 1, "ok": True}, "'row.count' must be a whole number >= 0, got -5"),
    ({"name": "a", "count": 1, "share": -0.5, "ok": True}, "'row.share' must be a number >= 0, got -0.5"),
    ({"name": "a", "count": 1, "share": float("nan"), "ok": True}, "'row.share' must be a number"),
    ({"name": "a", "count": 1, "share": 1, "ok": 1}, "'row.ok' must be true or false"),
    ({"name": 1, "count": 1, "share": 1, "ok": True}, "'row.name' must be a string"),
])  # fmt: skip
def test_record_errors_name_the_key(data: dict[str, object], message: str) -> None:
    with pytest.raises(_Malformed, match=re.escape(message)):
        READ.record(_Row, data, "row")


def test_table_checks_columns_and_row_length() -> None:
    columns = ("name", "count", "share", "ok")
    rows = READ.table(_Row, columns, {"columns": list(columns), "rows": [["a", 1, 0.5, False]]}, "t")
    assert rows == (_Row("a", 1, 0.5, False),)
    with pytest.raises(_Malformed, match=r"'t.rows\[0\]' must have 4 values"):
        READ.table(_Row, columns, {"columns": list(columns), "rows": [["a", 1]]}, "t")
    with pytest.raises(_Malformed, match="'t.columns' must be"):
        READ.table(_Row, columns, {"columns": ["x"], "rows": []}, "t")


def test_converters_choice_and_lists() -> None:
    assert READ.list_of(READ.as_int)([1, 2], "k") == (1, 2)
    assert READ.choice("a", "b")("a", "k") == "a"
    with pytest.raises(_Malformed, match=r"'k' must be one of a, b; got 'c'"):
        READ.choice("a", "b")("c", "k")
    with pytest.raises(_Malformed, match=r"'k\[1\]' must be a whole number"):
        READ.list_of(READ.as_int)([1, "x"], "k")


def test_a_device_or_a_pipe_is_written_in_place_not_replaced(tmp_path: Path) -> None:
    """Run as root, replacing /dev/null atomically would put a regular file in its place."""
    link = tmp_path / "null"
    link.symlink_to("/dev/null")
    write_atomic(link, "discarded")
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        write_output(fifo, "through the pipe")
        assert os.read(reader, 100) == b"through the pipe"
    finally:
        os.close(reader)
    assert stat.S_ISFIFO(fifo.stat().st_mode)


def test_a_symlink_to_a_file_stays_a_link(tmp_path: Path) -> None:
    real = tmp_path / "real.json"
    real.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(real)
    write_atomic(link, "new")
    assert link.is_symlink() and real.read_text() == "new"


def test_dev_stdout_into_a_pipe_is_written_in_place(tmp_path: Path) -> None:
    """`pounder bench URL --json /dev/stdout | jq`: /dev/stdout resolves to a pipe."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", "from pounder._files import write_output; "
                           "write_output('/dev/stdout', 'through /dev/stdout', '--json')"],
                          capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
    assert (done.returncode, done.stdout, done.stderr) == (0, "through /dev/stdout", "")
    redirected = tmp_path / "out.txt"
    with redirected.open("w") as out:  # stdout redirected to a file: written there, not swapped for a new one
        subprocess.run([sys.executable, "-c", "from pounder._files import write_output; "
                        "write_output('/dev/stdout', 'json\\n'); print('report')"],
                       stdout=out, timeout=60, check=True)  # fmt: skip
    assert redirected.read_text() == "json\nreport\n"


def test_an_existing_file_keeps_its_permission_bits(tmp_path: Path) -> None:
    target = tmp_path / "private.json"
    target.write_text("old")
    target.chmod(0o600)
    write_atomic(target, "new")
    assert stat.S_IMODE(target.stat().st_mode) == 0o600 and target.read_text() == "new"


def test_check_distinct(tmp_path: Path) -> None:
    from pounder._files import check_distinct

    check_distinct([("--json", "/dev/null"), ("--csv", "/dev/null"), ("--tsv", "-"), ("--x", None)])
    check_distinct([("--json", tmp_path / "a")], [("--body", tmp_path / "b")])
    with pytest.raises(UsageError, match=r"^--csv .*/a would overwrite the --json output: give another file$"):
        check_distinct([("--json", tmp_path / "a"), ("--csv", tmp_path / "x" / ".." / "a")])


def test_check_distinct_compares_files_not_names(tmp_path: Path) -> None:
    """Issue 25: a hard link of an input is the input (device and inode), under any name."""
    from pounder._files import check_distinct

    urls = tmp_path / "urls.txt"
    urls.write_text("http://127.0.0.1:1/\n")
    os.link(urls, tmp_path / "run.tsv")
    with pytest.raises(UsageError, match=r"^--tsv .*/run.tsv would overwrite the -f input: give another file$"):
        check_distinct([("--tsv", tmp_path / "run.tsv")], [("-f", urls)])
    os.link(urls, tmp_path / "out.json")
    with pytest.raises(UsageError, match=r"^--hdr-log .*/run.tsv would overwrite the --json output"):
        check_distinct([("--tsv", tmp_path / "other.tsv"), ("--json", tmp_path / "out.json"),
                        ("--hdr-log", tmp_path / "run.tsv")])
    check_distinct([("--tsv", tmp_path / "new.tsv")], [("-f", urls)])  # distinct files pass


def test_size_text() -> None:
    from pounder._units import size_text

    assert [size_text(n) for n in (512, 4096, 1536 * 1024, 64 * MIB, 3 << 30)] == [
        "512 bytes", "4 KiB", "1.5 MiB", "64 MiB", "3 GiB"]


def test_plain_numbers_have_no_exponent_and_no_20_digits() -> None:
    """Issue 25 item 17: numbers in messages were printed as 1e+09 or with 20 digits."""
    from pounder._units import plain

    assert [plain(v) for v in (1e9, 1e-7, 2.5, 0.1 + 0.2, 1234.5678, 0.0, -3.25)] == [
        "1,000,000,000", "0.0000001", "2.5", "0.3", "1,234.57", "0", "-3.25"]
    assert [plain(v) for v in (123_456_789_012, 10**20, 1.5e20, 9.99e15, -1e30)] == [
        "123,456,789,012", "about 10^20", "about 1.5 x 10^20", "about 10^16", "about -10^30"]
    with pytest.raises(UsageError, match=r"between 1 and 100,000, got about 10\^20$"):
        count_in_range(10**20, "-c/--connections", 1, 100_000)
    with pytest.raises(UsageError, match=r"--rate must be between 0 and 10,000,000 req/s, got 1,000,000,000$"):
        BenchSpec.from_options("http://127.0.0.1:9/", options=LoadOptions(rate=1e9))


def test_counts_agree_with_their_noun() -> None:
    assert [children_text(n) for n in (0, 1, 2, 1000)] == ["0 children", "1 child", "2 children", "1,000 children"]
    assert [count_text(n, "client") for n in (1, 32)] == ["1 client", "32 clients"]
