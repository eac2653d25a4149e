"""The strace log parser of ``pounder syscalls`` (pure: no process is started), on lines as
``strace -f -qq -o FILE -p ...`` 6.x writes them (taken from a real trace of Apache + mod_perl
serving a virtual URI), plus the per-request tables, the text and the JSON form.

(Named test_strace_parse.py, not test_parse.py: tests/ has no __init__.py files, so two test
modules may not share a basename; tests/load/test_parse.py exists.)
"""

# ruff: noqa: E501  (the strace lines are kept whole, as strace writes them)

from __future__ import annotations

import json
from collections import Counter

import jsonschema
import pytest

from pounder.syscalls import (
    SYSCALLS_SCHEMA,
    StraceLogParser,
    SyscallReport,
    count_tables,
    decode_c_string,
    parse_strace_log,
    render_syscalls,
)
from pounder.syscalls._parse import first_string_argument, parse_call
from support.schemas import validate

# One request served by child 8640 while child 8639 waits in accept4 and then serves the next
# one: the calls of the two children interleave and are split in unfinished/resumed halves.
APACHE_LOG = """\
8640  accept4(3,  <unfinished ...>
8639  accept4(3,  <unfinished ...>
8640  <... accept4 resumed>{sa_family=AF_INET, sin_port=htons(47512), sin_addr=inet_addr("127.0.0.1")}, [128 => 16], SOCK_CLOEXEC) = 7
8640  fcntl(7, F_GETFL)                 = 0x2 (flags O_RDWR)
8640  fcntl(7, F_SETFL, O_RDWR|O_NONBLOCK) = 0
8640  read(7, "GET /news/perl/mod_perl/summary "..., 8000) = 145
8640  newfstatat(AT_FDCWD, "/srv/htdocs/news/perl/mod_perl/summary", 0x7ffc87163a30, 0) = -1 ENOENT (No such file or directory)
8640  openat(AT_FDCWD, "/.htaccess", O_RDONLY|O_CLOEXEC) = -1 ENOENT (No such file or directory)
8640  newfstatat(AT_FDCWD, "/srv", {st_mode=S_IFDIR|0755, st_size=4096, ...}, AT_SYMLINK_NOFOLLOW) = 0
8640  openat(AT_FDCWD, "/srv/.htaccess", O_RDONLY|O_CLOEXEC) = -1 ENOENT (No such file or directory)
8640  newfstatat(AT_FDCWD, "/srv/htdocs", {st_mode=S_IFDIR|0755, st_size=4096, ...}, AT_SYMLINK_NOFOLLOW) = 0
8640  openat(AT_FDCWD, "/srv/htdocs/.htaccess", O_RDONLY|O_CLOEXEC) = -1 ENOENT (No such file or directory)
8640  newfstatat(AT_FDCWD, "/srv/htdocs/news", 0x7ffc87163a30, AT_SYMLINK_NOFOLLOW) = -1 ENOENT (No such file or directory)
8640  getpid()                          = 8640
8640  writev(7, [{iov_base="HTTP/1.1 200 OK\\r\\nDate: Sun, 22 N"..., iov_len=190}, {iov_base="hello from pid 8640\\n", iov_len=20}], 2) = 210
8639  <... accept4 resumed>{sa_family=AF_INET, sin_port=htons(47522), sin_addr=inet_addr("127.0.0.1")}, [128 => 16], SOCK_CLOEXEC) = 7
8640  times( <unfinished ...>
8639  fcntl(7, F_GETFL <unfinished ...>
8640  <... times resumed>{tms_utime=0, tms_stime=0, tms_cutime=0, tms_cstime=0}) = 1719177069
8639  <... fcntl resumed>)              = 0x2 (flags O_RDWR)
8640  shutdown(7, SHUT_WR <unfinished ...>
8639  fcntl(7, F_SETFL, O_RDWR|O_NONBLOCK <unfinished ...>
8640  <... shutdown resumed>)           = 0
8639  <... fcntl resumed>)              = 0
8640  poll([{fd=7, events=POLLIN}], 1, 2000 <unfinished ...>
8639  read(7,  <unfinished ...>
8640  <... poll resumed>)               = 1 ([{fd=7, revents=POLLIN|POLLHUP}])
8639  <... read resumed>"GET /news/perl/mod_perl/summary "..., 8000) = 145
8640  read(7,  <unfinished ...>
8639  newfstatat(AT_FDCWD, "/srv/htdocs/news/perl/mod_perl/summary",  <unfinished ...>
8640  <... read resumed>"", 512)        = 0
8639  <... newfstatat resumed>0x7ffc87163a30, 0) = -1 ENOENT (No such file or directory)
8640  close(7 <unfinished ...>
8639  openat(AT_FDCWD, "/.htaccess", O_RDONLY|O_CLOEXEC <unfinished ...>
8640  <... close resumed>)              = 0
8639  <... openat resumed>)             = -1 ENOENT (No such file or directory)
8640  read(4,  <unfinished ...>
8639  newfstatat(AT_FDCWD, "/srv",  <unfinished ...>
8640  <... read resumed>0x7ffc87163dbf, 1) = -1 EAGAIN (Resource temporarily unavailable)
8639  <... newfstatat resumed>{st_mode=S_IFDIR|0755, st_size=4096, ...}, AT_SYMLINK_NOFOLLOW) = 0
8640  accept4(3,  <unfinished ...>
8639  openat(AT_FDCWD, "/srv/.htaccess", O_RDONLY|O_CLOEXEC) = -1 ENOENT (No such file or directory)
8639  newfstatat(AT_FDCWD, "/srv/htdocs", {st_mode=S_IFDIR|0755, st_size=4096, ...}, AT_SYMLINK_NOFOLLOW) = 0
8639  openat(AT_FDCWD, "/srv/htdocs/.htaccess", O_RDONLY|O_CLOEXEC) = -1 ENOENT (No such file or directory)
8639  newfstatat(AT_FDCWD, "/srv/htdocs/news", 0x7ffc87163a30, AT_SYMLINK_NOFOLLOW) = -1 ENOENT (No such file or directory)
8639  getpid()                          = 8639
8639  writev(7, [{iov_base="HTTP/1.1 200 OK\\r\\nDate: Sun, 22 N"..., iov_len=190}, {iov_base="hello from pid 8639\\n", iov_len=20}], 2) = 210
8639  times({tms_utime=0, tms_stime=0, tms_cutime=0, tms_cstime=0}) = 1719177069
8639  shutdown(7, SHUT_WR)              = 0
8639  poll([{fd=7, events=POLLIN}], 1, 2000) = 1 ([{fd=7, revents=POLLIN|POLLHUP}])
8639  read(7, "", 512)                  = 0
8639  close(7)                          = 0
8639  read(4, 0x7ffc87163dbf, 1)        = -1 EAGAIN (Resource temporarily unavailable)
8639  accept4(3,  <detached ...>
"""

ONE_REQUEST = Counter(
    {"accept4": 1, "fcntl": 2, "read": 3, "newfstatat": 4, "openat": 3, "getpid": 1, "writev": 1, "times": 1,
     "shutdown": 1, "poll": 1, "close": 1}
)  # fmt: skip


def test_two_interleaved_requests_are_counted_once_each() -> None:
    counts = parse_strace_log(APACHE_LOG.splitlines(keepends=True))
    assert counts.calls == Counter({name: 2 * number for name, number in ONE_REQUEST.items()})
    assert counts.total == 2 * sum(ONE_REQUEST.values()) == 38
    assert counts.pids == {8639, 8640}
    # 8640's last accept4 never resumed; 8639's was cut by the detach: neither returned.
    assert counts.unfinished == 2
    assert counts.unparsed == 0 and counts.signals == 0
    assert counts.succeeded("accept4") == 2


def test_failures_keep_errno_and_path_also_across_unfinished_halves() -> None:
    counts = parse_strace_log(APACHE_LOG.splitlines())
    assert counts.failures == Counter(
        {
            ("newfstatat", "ENOENT", "/srv/htdocs/news/perl/mod_perl/summary"): 2,  # path in the first half
            ("newfstatat", "ENOENT", "/srv/htdocs/news"): 2,
            ("openat", "ENOENT", "/.htaccess"): 2,  # errno in the resumed half
            ("openat", "ENOENT", "/srv/.htaccess"): 2,
            ("openat", "ENOENT", "/srv/htdocs/.htaccess"): 2,
            ("read", "EAGAIN", None): 2,  # read takes no path
        }
    )
    assert counts.errors == Counter({"newfstatat": 4, "openat": 6, "read": 2})


def test_the_parent_is_left_out() -> None:
    log = APACHE_LOG + (
        "8638  wait4(-1, 0x7ffd6d6c5a8c, WNOHANG|WSTOPPED, NULL) = 0\n"
        "8638  select(0, NULL, NULL, NULL, {tv_sec=1, tv_usec=0} <unfinished ...>\n"
        "8638  <... select resumed>)            = 0 (Timeout)\n"
    )
    counts = parse_strace_log(log.splitlines(), exclude_pids={8638})
    assert counts.total == 38 and 8638 not in counts.pids
    assert counts.excluded_calls == 2 and "wait4" not in counts.calls


@pytest.mark.parametrize(
    ("quoted", "expected"),
    [
        (r"/srv/htdocs/.htaccess", "/srv/htdocs/.htaccess"),
        (r"/tmp/say \"hi\"", '/tmp/say "hi"'),
        (r"C:\\dos\\path", "C:\\dos\\path"),
        (r"/tmp/tab\there\nnewline", "/tmp/tab\there\nnewline"),
        (r"/tmp/caf\303\251", "/tmp/café"),  # strace -x off: octal bytes of UTF-8
        (r"/tmp/caf\xc3\xa9", "/tmp/café"),  # strace -x: hex bytes
        (r"/tmp/\33[0m", "/tmp/\x1b[0m"),
        (r"/tmp/nul\0end", "/tmp/nul\x00end"),
        (r"/tmp/\377", "/tmp/\udcff"),  # not UTF-8: a surrogate escape, as os.fsdecode makes
        ("", ""),
    ],
)
def test_c_string_escapes(quoted: str, expected: str) -> None:
    assert decode_c_string(quoted) == expected


def test_quoted_paths_with_escapes_are_decoded_in_failures() -> None:
    log = (
        '501   openat(AT_FDCWD, "/srv/a \\"quoted\\" dir/.htaccess", O_RDONLY|O_CLOEXEC) = -1 ENOENT '
        "(No such file or directory)\n"
        '501   stat("/srv/caf\\303\\251/x", 0x7ffe5a0c) = -1 ENOENT (No such file or directory)\n'
        '501   access("/etc/ld.so.preload", R_OK) = -1 ENOENT (No such file or directory)\n'
        '501   readlink("/proc/self/exe, (x)", 0x7ffe5a0c, 4096) = -1 EACCES (Permission denied)\n'
        '501   statx(AT_FDCWD, "/srv/x", AT_STATX_SYNC_AS_STAT, STATX_ALL, 0x7ffe) = -1 ENOTDIR (Not a directory)\n'
        '501   faccessat2(AT_FDCWD, "/srv/y", X_OK, AT_EACCESS) = -1 EACCES (Permission denied)\n'
    )
    counts = parse_strace_log(log.splitlines())
    assert set(counts.failures) == {
        ("openat", "ENOENT", '/srv/a "quoted" dir/.htaccess'),
        ("stat", "ENOENT", "/srv/café/x"),
        ("access", "ENOENT", "/etc/ld.so.preload"),
        ("readlink", "EACCES", "/proc/self/exe, (x)"),
        ("statx", "ENOTDIR", "/srv/x"),
        ("faccessat2", "EACCES", "/srv/y"),
    }


def test_strings_with_parentheses_and_equal_signs_do_not_end_the_call() -> None:
    line = '77    write(2, "oops) = -1 ENOENT (fake\\")\\n", 27) = 27\n'
    counts = parse_strace_log([line])
    assert counts.calls == Counter({"write": 1}) and counts.errors == Counter()
    call = parse_call(77, "write", line.split("write(", 1)[1])
    assert call is not None and call.result == "27" and call.errno is None and call.path is None


def test_signals_exits_restarts_and_odd_results() -> None:
    log = """\
900   --- SIGCHLD {si_signo=SIGCHLD, si_code=CLD_EXITED, si_pid=901, si_uid=33, si_status=0, si_utime=0, si_stime=0} ---
900   rt_sigreturn({mask=[]})           = -1 EINTR (Interrupted system call)
900   epoll_wait(5, [], 2, 1000)        = 0
902   read(7,  <unfinished ...>
902   <... read resumed>0x55d0, 8000)   = ? ERESTARTSYS (To be restarted if SA_RESTART is set)
902   --- SIGTERM {si_signo=SIGTERM, si_code=SI_USER, si_pid=900, si_uid=0} ---
902   restart_syscall(<... resuming interrupted read ...>) = 0
903   futex(0x7f00, FUTEX_WAIT_PRIVATE, 2, NULL <unfinished ...>
903   +++ killed by SIGKILL +++
904   read(9,  <unfinished ...>
904   <... read resumed> <unfinished ...>) = ?
904   exit_group(0)                     = ?
904   +++ exited with 0 +++
905   --- stopped by SIGSTOP ---
"""
    counts = parse_strace_log(log.splitlines())
    assert counts.signals == 3
    assert counts.exited == {903, 904}
    assert counts.calls == Counter(
        {"rt_sigreturn": 1, "epoll_wait": 1, "read": 1, "restart_syscall": 1, "exit_group": 1}
    )
    assert counts.failures == Counter({("rt_sigreturn", "EINTR", None): 1, ("read", "ERESTARTSYS", None): 1})
    # futex: its process was killed inside it; read of 904: cut short by the exit.
    assert counts.unfinished == 2


def test_resumed_without_its_start_and_a_start_that_never_resumes() -> None:
    log = (
        "10    <... accept4 resumed>{sa_family=AF_INET}, [16], SOCK_CLOEXEC) = 7\n"  # began before the log
        "11    poll([{fd=3, events=POLLIN}], 1, -1 <unfinished ...>\n"
        "11    getpid()                          = 11\n"  # 11's poll was never resumed: lost
        "12    nanosleep({tv_sec=1, tv_nsec=0},  <unfinished ...>\n"  # still asleep at the end of the log
    )
    counts = parse_strace_log(log.splitlines())
    assert counts.calls == Counter({"accept4": 1, "getpid": 1})
    assert counts.unfinished == 2


def test_unparsed_lines_are_tallied_not_guessed() -> None:
    log = "strace: Process 123 attached\n123   ???( <garbage\n\n123   read(3, \"x\", 1) = 1\n"
    counts = parse_strace_log(log.splitlines())
    assert counts.calls == Counter({"read": 1})
    assert counts.unparsed == 2 and counts.first_unparsed == "strace: Process 123 attached"


def test_lines_without_pid_and_bracketed_pids() -> None:
    counts = parse_strace_log(['stat("/a", 0x1) = -1 ENOENT (No such file or directory)\n',
                               '[pid  4242] lstat("/b", 0x1) = 0\n'])  # fmt: skip
    assert counts.calls == Counter({"stat": 1, "lstat": 1})
    assert counts.pids == {0, 4242}


def test_parser_can_be_fed_line_by_line() -> None:
    parser = StraceLogParser(exclude_pids={1})
    for line in APACHE_LOG.splitlines():
        parser.feed(line)
    assert parser.finish().total == 38


def test_first_string_argument() -> None:
    assert first_string_argument('AT_FDCWD, "/x", O_RDONLY') == "/x"
    assert first_string_argument('3, {a="no"}, "yes"') == "yes"  # strings inside structures are not arguments
    assert first_string_argument("3, 0x7ffc, 16") is None


# -- per request: tables, text, JSON ----------------------------------------------------------


def report_of(text: str, requests: int) -> SyscallReport:
    counts = parse_strace_log(text.splitlines())
    calls, failures = count_tables(counts, requests)
    return SyscallReport(
        tool_version="0.1.0", started_at="2025-01-01T12:00:00.000Z", server_pid=8638, server_name="apache2",
        found_by="pid 8638", url="http://127.0.0.1:8080/news/perl/mod_perl/summary", method="GET",
        requests=requests, non_2xx=0, connections=2, keepalive=False, warmup_requests=100, elapsed_s=0.01,
        connections_opened=requests, connections_accepted=counts.succeeded("accept4"), strace_version="6.1",
        attached=(8639, 8640), processes=tuple(sorted(counts.pids)), started=(), exited=(),
        total_calls=counts.total, calls=calls, failures=failures, parent_calls=0,
        unfinished_calls=counts.unfinished, signals=counts.signals, unparsed_lines=counts.unparsed,
    )  # fmt: skip


def test_per_request_tables_are_sorted_and_divided() -> None:
    report = report_of(APACHE_LOG, requests=2)
    assert [(c.name, c.calls, c.per_request) for c in report.calls[:3]] == [
        ("newfstatat", 8, 4.0), ("openat", 6, 3.0), ("read", 6, 3.0)]  # fmt: skip
    assert report.per_request("accept4") == 1.0 and report.per_request("execve") == 0.0
    assert report.total_per_request == 19.0
    assert all(f.per_request == 1.0 for f in report.failures)
    assert [f.path for f in report.failures][:2] == ["/srv/htdocs/news", "/srv/htdocs/news/perl/mod_perl/summary"]
    with pytest.raises(ValueError):
        count_tables(parse_strace_log([]), 0)


def test_text_shows_both_tables_and_top_limits_them() -> None:
    report = report_of(APACHE_LOG, requests=2)
    text = render_syscalls(report)
    assert "System calls per request" in text and "Failing calls per request" in text
    assert "         4.00            8          4  newfstatat" in text
    assert "        19.00           38         12  total" in text
    assert "         1.00            2  ENOENT       openat       /.htaccess" in text
    assert "         1.00            2  EAGAIN       read         -" in text
    short = render_syscalls(report, top=2)
    assert "... 9 more system calls" in short and "... 4 more" in short
    assert "getpid" not in short


def test_json_follows_the_schema() -> None:
    report = report_of(APACHE_LOG, requests=2)
    document = json.loads(json.dumps(report.to_dict()))
    validate(document, "syscalls")
    assert document["schema"] == SYSCALLS_SCHEMA
    assert document["total"] == {"calls": 38, "per_request": 19.0}
    assert {"name": "openat", "errno": "ENOENT", "path": "/.htaccess", "calls": 2, "per_request": 1.0} in document[
        "failures"
    ]
    document["failures"][0]["errno"] = "enoent"
    with pytest.raises(jsonschema.ValidationError):
        validate(document, "syscalls")
