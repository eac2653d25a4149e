"""Fixtures for the ``pounder.procs`` tests: real process trees (see ``tests/support/proctree.py``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from support.proctree import TreeFactory


@pytest.fixture
def trees() -> Iterator[TreeFactory]:
    """``tree = trees.start(mb=40); kids = tree.spawn(3)``; every tree is stopped at teardown."""
    factory = TreeFactory()
    try:
        yield factory
    finally:
        factory.stop_all()
