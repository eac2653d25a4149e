"""The tuning runs the report tests read (made once per session, never changed: a test that
changes a directory works on a copy)."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from pounder.servers import apache_missing
from pounder.tune import ApacheAdapter, make_options, tune

PERL = Path(__file__).resolve().parents[1] / "apps" / "perl"


DEMO = Path(__file__).resolve().parents[1] / "data" / "tune-demo"


@pytest.fixture(scope="session")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real ``pounder tune --demo --quick --ram 512M`` run (gunicorn, a fixed pool, 16 KB leaked
    per request, 3 trials per point, the confirmation), kept in tests/data/tune-demo."""
    return Path(shutil.copytree(DEMO, tmp_path_factory.mktemp("tune-report") / "demo"))


@pytest.fixture(scope="session")
def apache_run() -> Iterator[Path]:
    """Apache + mod_perl answering /hello, 4 clients expected: the spare-server step runs. In a
    directory under /tmp that the children (www-data when we are root) can reach."""
    missing = apache_missing(perl=True)
    if missing:
        pytest.skip(missing)
    folder = Path(tempfile.mkdtemp(prefix="pounder-tune-report-", dir="/tmp"))
    folder.chmod(0o755)
    try:
        adapter = ApacheAdapter(perl_handlers={"/hello": "PounderTest::Hello"}, startup_pl=PERL / "startup.pl",
                                perl_lib=PERL / "lib")
        options = make_options(path="/hello", ram="256M", clients=4, quick=True, point_duration="1s",
                               mrpc="0,1000", max_children=4)
        tune(adapter, options, results=folder / "apache")
        yield folder / "apache"
    finally:
        shutil.rmtree(folder, ignore_errors=True)
