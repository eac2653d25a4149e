"""Folded stacks (``outer;...;leaf weight``, one per distinct stack, the format every profiler and
flame graph tool shares) and the function tables read from them: a function's *self* share is the
weight of the stacks it is the leaf of, its *inclusive* share the weight of the stacks it is on
(counted once per stack, so a recursive function is not counted twice). Pure functions."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

PidStacks = Mapping[tuple[int, str], int]
"""``(pid, "outer;...;leaf") -> weight``: what a profiler collected, per process."""


@dataclass(frozen=True)
class FunctionShare:
    """One function of a profile: its weight as the leaf (``self_weight``) and on the stack at all
    (``inclusive_weight``), each also as a share of the profile's total weight (0..1), and its calls
    when the profiler counts them (NYTProf), else None."""

    name: str
    self_weight: int
    inclusive_weight: int
    self_share: float
    inclusive_share: float
    calls: int | None = None

    def to_dict(self) -> dict[str, object]:
        return {"name": self.name, "self": self.self_weight, "inclusive": self.inclusive_weight,
                "self_share": self.self_share, "inclusive_share": self.inclusive_share,
                "calls": self.calls}  # fmt: skip


def merged(stacks: PidStacks) -> dict[str, int]:
    """The pool's stacks: every process's weights summed per stack."""
    total: Counter[str] = Counter()
    for (_pid, stack), weight in stacks.items():
        total[stack] += weight
    return dict(total)


def per_process(stacks: PidStacks) -> dict[int, dict[str, int]]:
    """Each process's own stacks."""
    found: dict[int, dict[str, int]] = {}
    for (pid, stack), weight in stacks.items():
        mine = found.setdefault(pid, {})
        mine[stack] = mine.get(stack, 0) + weight
    return found


def function_table(stacks: Mapping[str, int], calls: Mapping[str, int] | None = None) -> list[FunctionShare]:
    """Every function of ``stacks``, by self weight (then inclusive weight, then name)."""
    own: Counter[str] = Counter()
    on_stack: Counter[str] = Counter()
    total = 0
    for stack, weight in stacks.items():
        if weight <= 0 or not stack:
            continue
        frames = stack.split(";")
        total += weight
        own[frames[-1]] += weight
        for name in set(frames):
            on_stack[name] += weight
    rows = [
        FunctionShare(name, own[name], on_stack[name], own[name] / total, on_stack[name] / total,
                      None if calls is None or name not in calls else calls[name])
        for name in on_stack
    ]  # fmt: skip
    return sorted(rows, key=lambda row: (-row.self_weight, -row.inclusive_weight, row.name))


def by_inclusive(rows: Iterable[FunctionShare]) -> list[FunctionShare]:
    """The same rows by inclusive weight (then self weight, then name)."""
    return sorted(rows, key=lambda row: (-row.inclusive_weight, -row.self_weight, row.name))


def folded_text(stacks: Mapping[str, int]) -> str:
    """``stack weight`` lines, sorted by stack (the input of flame graph tools)."""
    return "".join(f"{stack} {weight}\n" for stack, weight in sorted(stacks.items()) if weight > 0)


def parse_folded(text: str) -> dict[str, int]:
    """The stacks of ``stack weight`` lines (the last space separates the weight); ValueError
    naming the first line that is not one."""
    found: Counter[str] = Counter()
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        stack, _, weight = line.rstrip().rpartition(" ")
        if not stack or not weight.isdigit():
            raise ValueError(f"line {number} is not 'stack weight': {line[:80]!r}")
        found[stack] += int(weight)
    return dict(found)
