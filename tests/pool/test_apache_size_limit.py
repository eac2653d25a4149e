"""ApacheAdapter.size_limit: the Apache2::SizeLimit lines and their arithmetic, from figures of a
warmed child as ``pounder tune`` measures them (USS from smaps_rollup, VmSize and statm's shared
from /proc/PID/statm). The figures are computed here from the definitions, never from pounder's
code; tests/e2e/test_size_limit.py applies the lines to a live Apache."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pounder.pool import ApacheAdapter, ChildLimit

KIB = 1024
MIB = 1024 * KIB
OVERSHOOT = 0.02  # the growth allowed between two checks, as a fraction of the limit
HANDLERS = {"/leak": "PounderTest::Leak"}
# a warmed child of a preloading app, as measured live: VmSize 53.1 MiB, statm's shared 4.5 MiB, USS 0.6 MiB
WARMED = ChildLimit(children=3, start=632 * KIB, limit=16 * MIB, shared=45 * MIB, requests=0, growth=100 * KIB,
                    vm_size=54384 * KIB, statm_shared=4632 * KIB)


def _figure(text: str, call: str) -> int:
    found = re.search(rf"^    Apache2::SizeLimit->{call}\((\d+)\);$", text, re.MULTILINE)
    assert found is not None, text
    return int(found.group(1))


def test_max_process_size_is_vmsize_plus_the_room_to_grow() -> None:
    text = ApacheAdapter(perl_handlers=HANDLERS).size_limit(WARMED)
    # statm's size is VmSize: the warmed child's VmSize plus the private memory it may still gain
    assert _figure(text, "set_max_process_size") == 54384 + (16 * 1024 - 632)
    assert "= 70,136 KB" in text
    # never the USS limit itself as the unshared size: statm's unshared already exceeds the USS by 48 MiB
    assert "set_max_unshared_size" not in text and "set_min_shared_size" not in text
    assert f"= {(54384 - 4632) / 1024:.1f} MiB already, {(54384 - 4632 - 632) / 1024:.1f} MiB above the USS" in text
    assert "VmSize 53.1 MiB + (the 16.0 MiB each of 3 children may reach - USS 0.6 MiB)" in text


def test_check_interval_bounds_the_overshoot_at_the_measured_growth() -> None:
    text = ApacheAdapter(perl_handlers=HANDLERS).size_limit(WARMED)
    every = _figure(text, "set_check_interval")
    # the largest interval whose growth between two checks stays within the overshoot allowed
    assert every * 100 * KIB <= OVERSHOOT * 16 * MIB < (every + 1) * 100 * KIB
    assert every == 3
    assert "after about 157 requests" in text  # (16 MiB - 632 KiB) / 100 KiB
    assert "3 x 100.0 = 300 KB (1.8% of 16.0 MiB)" in text


@pytest.mark.parametrize(("growth", "every"), [(1 * KIB, 327), (10 * MIB, 1), (0.0, 1)])
def test_check_interval_at_other_growths(growth: float, every: int) -> None:
    limit = ChildLimit(3, 632 * KIB, 16 * MIB, 45 * MIB, 0, growth=growth, vm_size=54384 * KIB, statm_shared=4632 * KIB)
    text = ApacheAdapter(perl_handlers=HANDLERS).size_limit(limit)
    assert _figure(text, "set_check_interval") == every
    if not growth:
        assert "Checked at every request (the module's default): no leak was measured" in text


def test_the_lines_are_what_mod_perl_2_takes() -> None:
    text = ApacheAdapter(perl_handlers=HANDLERS).size_limit(WARMED)
    assert text.splitlines()[1:] == [
        "  # httpd.conf, after LoadModule perl_module",
        "  PerlLoadModule Apache2::SizeLimit",
        "  <Perl>",
        "    # KB = VmSize 53.1 MiB + (USS limit 16.0 MiB - USS 0.6 MiB)",
        "    Apache2::SizeLimit->set_max_process_size(70136);",
        "    Apache2::SizeLimit->set_check_interval(3);",
        "  </Perl>",
        "  PerlCleanupHandler Apache2::SizeLimit",
    ]


def test_nothing_when_it_would_mean_nothing(tmp_path: Path) -> None:
    adapter = ApacheAdapter(perl_handlers=HANDLERS)
    assert adapter.size_limit(ChildLimit(3, 632 * KIB, 16 * MIB, 45 * MIB, 0)) == ""  # VmSize not measured
    full = ChildLimit(3, 16 * MIB, 16 * MIB, 45 * MIB, 0, growth=100 * KIB, vm_size=54384 * KIB, statm_shared=1)
    assert adapter.size_limit(full) == ""  # no room to grow
    static = tmp_path / "static.conf"
    static.write_text("DocumentRoot /srv/www\n")
    assert ApacheAdapter(static).size_limit(WARMED) == ""  # no mod_perl to run it in
    perl = tmp_path / "perl.conf"
    perl.write_text("LoadModule perl_module /usr/lib/apache2/modules/mod_perl.so\n")
    assert "set_max_process_size" in ApacheAdapter(perl).size_limit(WARMED)


def test_with_statm_moves_the_vmsize_to_the_child_at_start() -> None:
    bare = ChildLimit(3, 632 * KIB, 16 * MIB, 45 * MIB, 0, growth=100 * KIB)
    assert bare.with_statm(None) == bare
    # measured on a child 368 KiB larger than start: its VmSize taken back by as much
    measured = bare.with_statm({"pid": 7, "vm_size": 54752 * KIB, "statm_shared": 4632 * KIB, "uss": 1000 * KIB})
    assert (measured.vm_size, measured.statm_shared) == (54384 * KIB, 4632 * KIB)
