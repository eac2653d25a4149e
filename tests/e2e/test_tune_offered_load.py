"""``pounder tune`` recommends what it measured best at the load the pool is for (issue 24), on
Apache prefork + mod_perl with a CPU-bound handler, a RAM budget and no target, loopback only.

The tune run is a recorded one (tests/data/tune-apache-cpu, made by tests/data/record.py with the
options below: at most 4 children, the sweep at the 4 clients offered, whose points are the pools
compared, no confirmation), decided again by this pounder. The recommendation is checked by an
independent measurement made now, on this machine: ``pounder run`` compares the recommended pool
with another size at the same offered load, in interleaved trials, as a user would; the
recommended pool must not be distinguishably slower, and its p99 no more than 1.5 x the other's.
Apache's whole live tune run is tests/e2e/test_tune_debian.py (a copy of Debian's layout); the
confirmation and both spare settings are decided on recorded runs (tests/tune/test_recorded.py,
tests/data/tune-apache).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from pounder._units import available_cpus
from pounder.servers import apache_missing
from pounder.servers._apache import find_apache
from support.cliutil import run_pounder
from support.leftovers import processes_mentioning
from support.recorded import decided_again
from support.schemas import validate_results_dir
from support.tune_check import check_consistent

PERL_APPS_DIR = Path(__file__).resolve().parents[1] / "apps" / "perl"
LIMIT_S = 420

pytestmark = pytest.mark.skipif(apache_missing(perl=True) is not None, reason=str(apache_missing(perl=True)))


def _conf(folder: Path) -> Path:
    """The user's side of an httpd.conf: /cpu burns 4 ms of CPU per request (PounderTest::Cpu),
    the modules preloaded by a startup file."""
    found = find_apache()
    assert found is not None
    shutil.copytree(PERL_APPS_DIR / "lib", folder / "lib")
    shutil.copy(PERL_APPS_DIR / "startup_preload.pl", folder / "startup_preload.pl")
    conf = folder / "app.conf"
    conf.write_text("\n".join([
        f"LoadModule perl_module {found[1]}/mod_perl.so",
        f"PerlSwitches -I{folder}/lib",
        "PerlRequire startup_preload.pl",
        "<Location /cpu>", "    SetHandler modperl", "    PerlResponseHandler PounderTest::Cpu", "</Location>",
        "",
    ]))
    for path in folder.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    return conf


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return run_pounder(*args, timeout=LIMIT_S)


def test_the_recommended_pool_is_as_good_as_another_size_at_the_offered_load(public_dir: Path) -> None:
    # recorded with: pounder tune apache APP.conf --path /cpu?ms=4 --ram 256M --quick --point-duration 1s
    # --mrpc 0 --max-children 4 --clients 4 --measure-children 2 --no-confirm (APP.conf: _conf below)
    data, text = decided_again("tune-apache-cpu", public_dir / "recorded")
    if data["cores"] != available_cpus():
        pytest.skip(f"recorded with {data['cores']} CPUs for the server, this machine has {available_cpus()}")
    validate_results_dir(public_dir / "recorded" / "tune-apache-cpu")
    check_consistent(text, data)
    pools, offered = data["pools"], data["offered"]
    # the offered load: the 4 clients given, which the sweep measured every count at (its points are
    # the pools compared, none measured again); with no target it is as many clients as the pool may
    # have children (decided on the recorded runs tune-cpu and tune-twice, tests/tune/test_recorded.py)
    assert offered["connections"] == 4 and offered["rate"] is None
    assert pools["reasons"][0].startswith("the children sweep measured these pools at the offered load"), pools
    chosen = data["params"]["max_clients"]
    assert chosen == pools["chosen"]  # no confirmation to lower it
    assert "4. Pools at the offered load" in text and "\nDetails\n" in text
    # Why holds the deciding facts, one line per parameter
    assert data["why"][0].startswith(f"MaxRequestWorkers {pools['chosen']}: the "), data["why"]
    folder = public_dir / "cpu"
    folder.mkdir()
    conf = _conf(folder)
    # the independent check: the recommended pool against the other end of the candidates, at the
    # same offered load, by `pounder run` (interleaved trials)
    sizes = sorted(int(p["children"]) for p in pools["points"])
    other = sizes[-1] if sizes[-1] != chosen else sizes[0]
    if other == chosen:
        pytest.skip(f"a single candidate pool ({sizes}): nothing to compare")
    experiment = public_dir / "check.toml"
    experiment.write_text("\n".join([
        'title = "the recommended pool against another size"',
        'baseline = "other"',
        'record = ["rps", "latency"]',
        "[server]", 'adapter = "apache"', f'conf = "{conf}"', "workers = 4",
        "[[load]]", f"connections = {offered['connections']}", 'duration = "1s"', "trials = 3",
        "[[variant]]", 'label = "other"', 'path = "/cpu?ms=4"', f"workers = {other}",
        "[[variant]]", 'label = "recommended"', 'path = "/cpu?ms=4"', f"workers = {chosen}",
        "",
    ]))
    checked = public_dir / "checked"
    run = _run("run", str(experiment), "--results", str(checked))
    assert run.returncode == 0, run.stdout + run.stderr
    assert not processes_mentioning(str(checked))
    compared = json.loads((checked / "load-1.json").read_text())
    versus = next(c for c in compared["comparisons"] if c["label"] == "recommended")
    rps = versus["requests_per_s"]
    # not distinguishably slower: the interval of recommended / other reaches 1 (or beyond)
    assert rps["high"] is None or rps["high"] >= 0.95, (versus, chosen, other)
    p99 = versus["p99_us"]
    assert p99["ratio"] <= 1.5, (versus, chosen, other)
