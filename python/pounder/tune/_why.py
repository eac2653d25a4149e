"""The deciding facts of a recommendation, one line per parameter (pure): the constraint that
decided it, with its figure and interval. The criteria and the arithmetic behind them stay in each
choice's ``reasons``, printed under "Details"."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from pounder._tune_run import SpareChoice
from pounder._units import children_text, mib_unit
from pounder.pool import own_name
from pounder.tune._analysis import ChildrenChoice
from pounder.tune._memory import MemoryBound
from pounder.tune._mrpc import (
    MaxRequestsChoice,
)
from pounder.tune._pools import PoolChoice
from pounder.tune._shapes import ShapeChoice
from pounder.tune._text import (
    share_text,
)

_DECIDED = {
    "clients": "every one of the --clients connections holds a child (no buffering proxy in front)",
    "peak-rate": "the peak rate by Little's law, with headroom for random arrivals",
    "p99": "the smallest count whose p99 met --p99",
    "cpu-knee": "where more children stopped adding throughput",
    "memory": "as many as the RAM budget holds",
    "max-children": "capped by --max-children",
    "confirmation": "lowered by the footprint the confirmation measured",
}


def _pool_line(name: str, choice: ChildrenChoice, pools: PoolChoice | None, memory: MemoryBound) -> str:
    if choice.decided_by == "offered-load" and pools is not None:
        return f"{name} {pools.why}"
    if choice.decided_by == "memory" and pools is not None and choice.chosen < pools.chosen:
        return (f"{name} {choice.chosen}: a leaking child needs room to grow between respawns, so fewer fit the "
                f"budget of {mib_unit(memory.ram)} than the {pools.chosen} chosen at the offered load")
    text = f"{name} {choice.chosen}: {_DECIDED.get(choice.decided_by, choice.decided_by)}"
    if choice.decided_by == "peak-rate" and choice.little:
        text += f" ({choice.little})"
    return text


def _mrpc_line(name: str, mrpc: MaxRequestsChoice) -> str:
    value = f"{mrpc.value:,}" if mrpc.value else "0 (unlimited)"
    cost = "" if mrpc.loss is None else f", measured cost {share_text(mrpc.loss)}"
    if mrpc.leak and not mrpc.value:  # a server without a request limit (unlimited_only)
        return (f"{name} {value}: a leak of {mrpc.growth_bytes_per_request:,.0f} bytes per request, and the server "
                f"cannot replace a child after a number of requests: a worker killer must, before a child reaches "
                f"its share of the budget ({mib_unit(mrpc.child_limit_bytes)}; see the advice)")
    if mrpc.decided_by == "unsharing" and mrpc.unsharing is not None:
        return (f"{name} {value}: the children unshare ({mrpc.unsharing.fall:.0%} of their shared memory lost within "
                f"{mrpc.unsharing.horizon:,} requests); replaced at this count a child's private memory stays within "
                f"its share of the budget ({mib_unit(mrpc.child_limit_bytes)}){cost}")
    if mrpc.leak:
        return (f"{name} {value}: a leak of {mrpc.growth_bytes_per_request:,.0f} bytes per request; replaced at this "
                f"count a child stays within its share of the budget ({mib_unit(mrpc.child_limit_bytes)}){cost}")
    if mrpc.value == 0:
        return (f"{name} {value}: no leak measured ({mrpc.growth_bytes_per_request:,.0f} bytes per request), so as "
                "large as possible")
    return f"{name} {value}: decided by {mrpc.decided_by}{cost}"


def deciding_facts(names: Mapping[str, str], choice: ChildrenChoice, pools: PoolChoice | None, memory: MemoryBound,
                   mrpc: MaxRequestsChoice, spare: SpareChoice | None, max_children: int,
                   shapes: ShapeChoice | None = None) -> list[str]:
    """One line per parameter: the pool, the threads of each child (when workers x threads were
    compared), the memory bound that caps it, MaxRequestsPerChild, spare servers."""
    name = names["max_clients"]
    if shapes is None:
        facts = [_pool_line(name, choice, pools, memory)]
    else:  # the shape chosen, then the one-thread pool it was compared from
        one_thread = replace(choice, chosen=shapes.points[0].children)
        facts = [f"{name} {choice.chosen}, {own_name(names, 'threads')} {shapes.threads}: {shapes.why}",
                 f"with one thread per worker, {_pool_line(name, one_thread, pools, memory)}"]
    cap = min(memory.max_clients, max_children)
    facts.append(f"the memory bound: at most {children_text(memory.max_clients)} in {mib_unit(memory.ram)} "
                 f"(shared {mib_unit(memory.shared)} once, {mib_unit(memory.child_uss)} per child)"
                 + ("" if cap == memory.max_clients else f"; --max-children {max_children}"))
    facts.append(_mrpc_line(own_name(names, "max_requests"), mrpc))
    if spare is not None:
        facts.append(str(spare.why))
    return facts
