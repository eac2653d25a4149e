"""The excerpt of a failing server's logs: bounded in lines and characters, errors first."""

from __future__ import annotations

from pathlib import Path

from pounder.servers._logs import EXCERPT_LINES, LINE_CHARS, log_excerpt


def test_the_cause_before_megabytes_of_noise_is_shown_first(tmp_path: Path) -> None:
    log = tmp_path / "error.log"
    noise = "".join(f"state {i}: {'x' * 1000}\n" for i in range(6000))
    log.write_text("booting\nTraceback (most recent call last):\n  File \"app.py\", line 3\n"
                   "RuntimeError: DATABASE_URL is not set\n" + noise + "exiting\n")
    assert log.stat().st_size > 6_000_000
    lines = log_excerpt([(log, 0)]).splitlines()
    assert len(lines) <= EXCERPT_LINES
    assert lines[0] == f"--- {log}: the errors it wrote before its last lines, then those ---"
    assert lines[1:4] == ["Traceback (most recent call last):", "RuntimeError: DATABASE_URL is not set", "  [...]"]
    assert lines[-1] == "exiting"
    assert lines[-2] == f"state 5999: {'x' * (LINE_CHARS - len('state 5999: '))} [... 712 more characters]"
    assert all(len(line) < LINE_CHARS + 40 for line in lines)


def test_only_what_was_written_since_the_start_and_nothing_hidden_twice(tmp_path: Path) -> None:
    log = tmp_path / "console.log"
    log.write_text("error: from the start before\n")
    since = log.stat().st_size
    with open(log, "a") as f:
        f.write("listening\nerror: port busy\nretrying\n")
    assert log_excerpt([(log, since)]).splitlines() == [f"--- last lines of {log} ---", "listening",
                                                        "error: port busy", "retrying"]
    assert log_excerpt([(log, log.stat().st_size)]) == ""  # nothing new


def test_many_logs_share_the_lines_and_control_characters_are_shown_harmless(tmp_path: Path) -> None:
    logs = []
    for name in ("first.log", "console.log", "third.log"):
        path = tmp_path / name
        path.write_text("".join(f"{name} {i} \x1b[31mred\r\n" for i in range(50)))
        logs.append((path, 0))
    lines = log_excerpt(logs).splitlines()
    assert len(lines) <= EXCERPT_LINES
    assert [line for line in lines if line.startswith("---")] == [f"--- last lines of {p} ---" for p, _ in logs]
    assert "first.log 49 \ufffd[31mred" in lines and not any("\x1b" in line or "\r" in line for line in lines)


def test_one_line_of_many_megabytes_is_cut_without_reading_it_whole(tmp_path: Path) -> None:
    log = tmp_path / "error.log"
    log.write_bytes(b"fatal: " + b"y" * 9_000_000 + b"\nlast\n")
    lines = log_excerpt([(log, 0)]).splitlines()
    assert lines == [f"--- last lines of {log} ---", f"fatal: {'y' * (LINE_CHARS - 7)} [... 8,999,707 more characters]",
                     "last"]
