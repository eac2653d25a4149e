"""The tuning runs the report tests read (made once per session, never changed: a test that
changes a directory works on a copy)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from support.recorded import recorded_copy

DATA = Path(__file__).resolve().parents[1] / "data"
DEMO = DATA / "tune-demo"


@pytest.fixture(scope="session")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real ``pounder tune --demo --quick --ram 512M`` run (gunicorn, a fixed pool, 16 KB leaked
    per request, 3 trials per point, the confirmation), kept in tests/data/tune-demo."""
    return Path(shutil.copytree(DEMO, tmp_path_factory.mktemp("tune-report") / "demo"))


@pytest.fixture(scope="session")
def apache_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real run on Apache + mod_perl answering /hello, 4 clients expected, so the spare-server
    step ran (``--ram 256M --clients 4 --quick --point-duration 1s --mrpc 0,1000 --max-children
    4``), kept in tests/data/tune-apache."""
    return recorded_copy("tune-apache", tmp_path_factory.mktemp("tune-report"))


@pytest.fixture(scope="session")
def gthread_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real run on gunicorn answering /sleep?ms=40 at 16 clients that compared workers x threads
    at the offered load (gthread workers), kept in tests/data/tune-gthread (tests/data/record.py)."""
    return recorded_copy("tune-gthread", tmp_path_factory.mktemp("tune-report"))
