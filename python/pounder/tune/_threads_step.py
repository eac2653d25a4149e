"""The threads step of a tuning run, measured (:func:`measure_shapes`): the workers x threads
shapes of :mod:`pounder.tune._shapes` in interleaved trials at the offered load, each trial stored
as the session stores every sweep's (``threads-WxT-tK``), and the choice among them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pounder._tune_run import OfferedLoad, Target
from pounder._units import shape_text
from pounder.pool import PoolParams
from pounder.tune._analysis import ChildrenChoice
from pounder.tune._memory import MemoryBound
from pounder.tune._pools import PoolChoice, needs
from pounder.tune._shapes import ShapeChoice, choose_shape, shape_slots, shapes, shapes_done

if TYPE_CHECKING:
    from pounder.tune._session import TuneSession


def measure_shapes(session: TuneSession, choice: ChildrenChoice, memory: MemoryBound, target: Target,
                   offered: OfferedLoad, pools: PoolChoice | None) -> ShapeChoice | None:
    """Workers x threads measured at the offered load in interleaved trials, the one-thread pool
    chosen first (:mod:`pounder.tune._shapes`): a first round stops after two shapes in a row more
    than the tolerance slower than the best before them, the other rounds measure the same shapes
    again.
    None when one worker of one thread is all there is to compare. The session asks only when its
    server runs threads not given and without ``--no-thread-sweep`` (its ``sweeps_threads``)."""
    options = session.options
    hard = max(1, min(memory.max_clients, options.max_children))
    # what the target needs at once: the clients of a closed loop, else Little's law for the rate
    need = offered.connections if offered.rate is None else max(needs(choice), default=0)
    slots = shape_slots(choice.chosen, need, hard)
    compared = shapes(choice.chosen, slots)
    if len(compared) < 2:  # one worker serving one request at a time: no shape with fewer workers
        return None
    plan = []
    first: list[dict[str, Any]] = []
    for workers, threads in compared:
        session._check_fits(workers, memory)
        key, params = f"threads-{workers}x{threads}", PoolParams(workers, threads=threads)
        label = f"{shape_text(workers, threads)} at {offered.short()}"
        plan.append((key, params, offered.connections, label))
        trial = session._trial(key, "threads", params, offered.connections, 1, label, rate=offered.rate)
        if trial.get("neighbour"):  # the round's trial that counts, as the rounds below measure it
            trial = session._trial(key, "threads", params, offered.connections, 1, label, rate=offered.rate,
                                   again=True)
        first.append(trial)
        if shapes_done(first, options.tolerance):
            break
    points = session._sweep("threads", plan, options.trials, rate=offered.rate)
    return choose_shape(points, offered, target, tolerance=options.tolerance, slots=slots,
                        lock=session.adapter.runtime_lock, cores=session.cores, ram=memory.ram,
                        floor=None if pools is None else pools.cpu_floor)
