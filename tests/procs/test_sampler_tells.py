"""What the server sampler tells whoever listens (``pounder._live``, ``--metrics-out``'s children
series): each sample's children, their USS and PSS summed as the report's own series has them,
and the CPU they used per second, which over the window adds up to what the children measured of
themselves."""

from __future__ import annotations

import time

import pytest

from pounder import _live
from pounder.procs import ServerSampler, find_server
from support.proctree import TreeFactory


class Recorder:
    """A listener that keeps what it is told."""

    def __init__(self) -> None:
        self.samples: list[_live.ChildrenSample] = []

    def seconds(self, *args: object) -> None:
        pass

    def children(self, sample: _live.ChildrenSample) -> None:
        self.samples.append(sample)

    def in_flight(self, *args: object) -> None:
        pass


def test_each_sample_of_the_children_is_told(trees: TreeFactory) -> None:
    tree = trees.start()
    first, second = tree.spawn(2)
    with _live.listening(Recorder()) as recorder:
        sampler = ServerSampler(find_server(pid=tree.pid), interval_s=0.1)
        began = time.time()
        sampler.start()
        burned = tree.burn(first, 0.3) + tree.burn(second, 0.2)
        time.sleep(0.15)
        report = sampler.stop()
    told = recorder.samples
    assert len(told) == report.samples >= 5
    assert [sample.children for sample in told] == [2] * len(told)
    times = [sample.at_unix for sample in told]
    assert times == sorted(times) and began - 0.1 < times[0] < times[-1] < time.time()
    # the memory, sample by sample, as the report's series has it
    by_t: dict[float, list[tuple[int, int]]] = {}
    for point in report.series:
        if point.pid in (first, second):
            by_t.setdefault(point.t, []).append((point.uss, point.pss))
    assert [(s.uss_bytes, s.pss_bytes) for s in told] == [
        (sum(u for u, _ in by_t[t]), sum(p for _, p in by_t[t])) for t in sorted(by_t)]
    # the CPU per second, over the window: what the children burned by their own clocks
    assert told[0].cpu_cores is None
    gaps = [b - a for a, b in zip(times, times[1:], strict=False)]
    used = sum(sample.cpu_cores * gap for sample, gap in zip(told[1:], gaps, strict=True) if sample.cpu_cores)
    assert used == pytest.approx(burned, abs=0.05)
