"""The causes behind the numbers, named with their figures (pure, no I/O)."""

from __future__ import annotations

import math

from pounder._errors import public
from pounder._tune_point import Points, TunePoint, present, tune_points
from pounder._units import MIB, children_text, plain
from pounder.pool import ADAPTERS, Adapter
from pounder.procs import max_clients_from
from pounder.tune._analysis import ChildrenChoice, busy_basis, busy_seconds
from pounder.tune._life import Life
from pounder.tune._memory import MemoryBound
from pounder.tune._mrpc import MaxRequestsChoice
from pounder.tune._points import NEIGHBOUR, busy_measured
from pounder.tune._text import (
    Summary,
    _mib,
    _serve,
    cores_text,
    ms_text,
    rate_with_interval,
    rps_text,
)

CPU_SATURATED = 0.8
"""The CPUs count as saturated from this fraction of the machine's cores busy (server + load generator)."""
OTHER_BUSY = NEIGHBOUR
"""Other processes (neither the server nor pounder) using at least this fraction of the cores
during a point are named as the limit or the noise, not the application (the share that has a trial
measured again, :data:`pounder.tune._points.NEIGHBOUR`)."""
CPU_IDLE = 0.5
LOAD_NOTICED = 0.05
"""The load generator's cores from which the advice says it took the server's CPU (it prints them
to one decimal: below this, "0.0 of 2")."""
FIRST_REQUEST_GROWTH = 4 * MIB
COW_BROKEN = 0.5
"""Below this median (child shared / parent RSS) a preloading server has lost most sharing."""
PRIVATE_HEAVY = 2.0
"""Preloading is suggested when a child's private memory is at least this many times its shared."""
PRELOAD_WORTH = 4 * MIB
"""... and the child's private memory right after it started (what it loaded after the fork) is at least this."""
PRELOAD_KEEPS_PRIVATE = 0.25
"""The estimate never takes a preloaded child below this fraction of its private memory: copy-on-write
decays as children write to what they share (reference counts, caches)."""


# ---------------------------------------------------------------------------------------------
# Advice


def _adapter(kind: str) -> type[Adapter]:
    """The adapter class of server ``kind`` (the base's defaults for an unknown one)."""
    return ADAPTERS[kind] if kind in ADAPTERS else Adapter


def _parent_language(kind: str) -> str:
    return _adapter(kind).language


@public
def preload_gain(measure: Summary, memory: MemoryBound) -> int | None:
    """MaxClients if what each child loads after the fork were loaded once in the parent: an
    estimate from one run's sizes, (RAM - shared - cold USS) / (USS - cold USS), where the cold USS
    (a child's private memory right after the server started, before any request) would become
    shared (at most down to ``PRELOAD_KEEPS_PRIVATE`` of the USS). None when the run preloads
    already, or a child's private memory is not at least ``PRIVATE_HEAVY`` times its shared, or the
    cold USS is under ``PRELOAD_WORTH``, or the estimate is no better."""
    if measure.get("preload"):
        return None
    cold = int(measure["cold"]["median_uss"])
    if memory.child_uss < PRIVATE_HEAVY * memory.shared or cold < PRELOAD_WORTH:
        return None
    moved = _preload_moved(cold, memory)
    after = max_clients_from(memory.ram, memory.shared + moved, memory.child_uss - moved, memory.child_rss).max_clients
    return after if after > memory.max_clients else None


def _preload_moved(cold: int, memory: MemoryBound) -> int:
    """What preloading would move from each child's private memory to shared: the cold USS, but
    never more than leaves ``PRELOAD_KEEPS_PRIVATE`` of the private memory."""
    return max(0, min(cold, memory.child_uss - math.ceil(PRELOAD_KEEPS_PRIVATE * memory.child_uss)))


def _preload_advice(kind: str, measure: Summary, memory: MemoryBound) -> list[str]:
    remedy = _adapter(kind).preload_remedy
    if not remedy:
        return []
    after = preload_gain(measure, memory)
    if after is None:
        return []
    cold = int(measure["cold"]["median_uss"])
    moved = _preload_moved(cold, memory)
    kept = ("" if moved == cold else
            f", at most {_mib(moved)} of it (a quarter of a child's private memory is taken to stay private: "
            "copy-on-write decays as children write to what they share)")
    return [f"preloading would allow about {children_text(after)} instead of {memory.max_clients}: an estimate from "
            f"this run's sizes, not a measurement. Each child ends at {_mib(memory.child_uss)} private next to "
            f"{_mib(memory.shared)} shared, and {_mib(cold)} of it was there right after it started (the "
            f"application, loaded after the fork); loaded once in the parent it would be shared{kept}: "
            f"({_mib(memory.ram)} - {_mib(memory.shared)} - {_mib(moved)}) / ({_mib(memory.child_uss)} - "
            f"{_mib(moved)}) = {after}. Remedy: {remedy}, then measure again."]


def _cpu_share(point: TunePoint, cores: float) -> str:
    other = point.other_cores
    if point.pod_cores is not None:  # the pod's quota is the server's CPU: its own cgroup's count
        return (f"server {cores_text(point.pod_cores)} of its quota of {_cpus(cores)}, throttled in "
                f"{point.throttled_share or 0:.0%} of the periods")
    return (f"server {cores_text(present(point.server_cores))} of {_cores(cores)}, load generator "
            f"{cores_text(present(point.client_cores))}"
            + ("" if other is None or other < 0.05 else f", other processes {cores_text(other)}"))


def _cores(cores: float) -> str:
    """``1 core``, ``2 cores``, ``1.5 cores``."""
    return f"{plain(cores)} core{'' if cores == 1 else 's'}"


def _cpus(cores: float) -> str:
    """``1 CPU``, ``1.5 CPUs``."""
    return f"{plain(cores)} CPU{'' if cores == 1 else 's'}"


def pod_sizing(point: TunePoint, cores: float) -> str | None:
    """With a pod (``--cpus``): the pool is sized for the quota, said with what the server used at
    ``point``; None without."""
    if point.pod_cores is None:
        return None
    return (f"sized for the pod's {_cpus(cores)} (--cpus: every trial ran in a cgroup with that CPU quota, the "
            f"decisions count it as the server's cores): at {children_text(point.children)} the server used "
            f"{cores_text(point.pod_cores)} of it, throttled in {point.throttled_share or 0:.0%} of the periods")


def _others_busy(point: TunePoint, cores: float) -> str | None:  # cores: the CPUs the server may run on
    """The sentence naming other processes as the limit or the noise, with their share, when they
    used at least ``OTHER_BUSY`` of the cores at ``point`` or a trial there was measured again for
    them (``neighbour``); None otherwise."""
    other = point.other_cores
    first = [t for t in point.trials if t.get("neighbour") and not t.get("again")]
    busy = other is not None and other >= OTHER_BUSY * cores
    if not busy and not first:
        return None
    at = children_text(point.children)
    again = "" if not first else (
        f"{' and '.join(cores_text(float(t['other_cores'])) for t in first)} of {_cores(cores)} during "
        f"{'trial' if len(first) == 1 else 'trials'} {', '.join(str(t['trial']) for t in first)}, "
        f"{'that trial' if len(first) == 1 else 'those trials'} measured again and left out of the figures")
    if not busy or other is None:
        counted = "" if other is None else f"; {cores_text(other)} in the trials counted"
        return (f"other processes on this machine (neither the server nor pounder) took {again} (at {at}): a "
                f"neighbour's share of the CPU, not the application's{counted}")
    return (f"other processes on this machine (neither the server nor pounder) took {cores_text(other)} of "
            f"{_cores(cores)} at {at}{'' if not first else f' ({again})'}: that is a neighbour's share of the "
            "CPU, not the application's; it limits what was measured here and adds noise")


@public
def explain_throughput(sweep: Points, choice: ChildrenChoice, cores: float, *,
                       machine: float | None = None) -> list[str]:
    """Why throughput stops growing where it does (CPU, the offered concurrency, something the
    children share, or memory), each with its figures; the I/O-bound case as concurrency:
    throughput = children / time a child is held per request."""
    if len(sweep) < 2:
        return []
    ordered = sorted(tune_points(sweep, "sweep"), key=lambda p: p.children)
    n = choice.throughput
    at = next(p for p in ordered if p.children == n)
    bigger = [p for p in ordered if p.children > n]
    used = present(at.server_cores) + present(at.client_cores) + (at.other_cores or 0.0)
    pod = pod_sizing(at, cores)
    said: list[str] = [] if pod is None else [pod]
    if pod is not None:  # the quota, not the machine, is what the server's CPU is measured against
        used = present(at.pod_cores)
    others = _others_busy(at, cores if machine is None else machine)  # a neighbour takes the machine's CPUs
    if others is not None:
        said.append(others)
    if used >= CPU_SATURATED * cores:
        if bigger and others is None:
            last = bigger[-1]
            said.append(f"the server is CPU-bound: at {children_text(n)} the CPUs are busy ({_cpu_share(at, cores)}), "
                        f"and {children_text(last.children)} served {rate_with_interval(last)}, no more than "
                        f"{children_text(n)}'s {rate_with_interval(at)}: more children only queue on the CPU and cost "
                        "memory")
        if present(at.client_cores) >= LOAD_NOTICED and cores < 4 and pod is None:
            said.append(f"the load generator ran on the server's cores ({cores_text(present(at.client_cores))} of "
                        f"{plain(cores)} at {children_text(n)}): on a machine of its own the server would have more "
                        "CPU")
        return said
    busy = busy_seconds(at)
    if busy > 0:
        cpu = at.server_cpu_us
        cpu_text = "" if cpu is None else f", {cpu:,.0f} us of it on the server's CPU"
        # an upper bound of the busy time gives a lower bound of what the children can serve
        exact = busy_measured(at)
        held, serve = ("", "at most") if exact else ("at most ", "at least")
        said.append(f"the CPUs are not saturated at {children_text(n)} ({_cpu_share(at, cores)}): throughput is "
                    f"concurrency here. Each request holds a child for {held}{ms_text(busy * 1000)} ms{cpu_text} "
                    f"({busy_basis(at)}), so {_serve(n)} {serve} {n} / {ms_text(busy * 1000)} ms = "
                    f"{rps_text(n / busy)} req/s; measured {rate_with_interval(at)}")
    offered = at.connections
    if offered <= n and all(p.connections <= n for p in bigger):
        said.append(f"throughput stops growing at {children_text(n)} because the load offered {offered} concurrent "
                    f"clients: each holds one child, so children beyond {offered} have nothing to do; what more "
                    "children would give at a higher load was not measured")
    elif bigger:
        tried = [p for p in bigger if p.connections > n]
        if tried and others is None:
            last = tried[-1]
            said.append(f"{children_text(last.children)} with {last.connections} clients served "
                        f"{rate_with_interval(last)}, no more than {children_text(n)}'s {rate_with_interval(at)}: more "
                        "children will not help at this load. Neither the CPUs nor the pool limit it: something the "
                        "children share does (a lock, a database, the network, the load generator)")
    elif n == choice.memory_cap:
        said.append(f"throughput still grows at {children_text(n)}, the most the memory allows: memory, not CPU, "
                    "limits this server; a smaller child or more RAM means more throughput")
    else:
        said.append(f"throughput still grows at {children_text(n)}, the largest count measured: more children may "
                    "serve more")
    return said


def _first_growth(measure: Summary) -> float:
    """What a child grew on its first requests, less what the per-request growth explains (a leak)."""
    per_child = int(measure.get("warm_requests", 0)) / max(1, int(measure["children"]))
    return (int(measure["warm"]["median_uss"]) - int(measure["cold"]["median_uss"])
            - max(0.0, float(measure["growth_first"])) * per_child)


def _preload_saves(measure: Summary, other: Summary) -> int:
    """The private memory per child preloading saves (max child USS without - with; < 0: it costs)."""
    on, off = (measure, other) if measure.get("preload") else (other, measure)
    return int(off["end"]["max_uss"]) - int(on["end"]["max_uss"])


@public
def advises_preload(kind: str, measure: Summary, other: Summary | None, memory: MemoryBound,
                    other_memory: MemoryBound | None) -> bool:
    """Does :func:`advice` tell a run measured without preloading to preload (the first requests'
    growth loaded in every child, the other setting measured saving memory, or the estimate of what
    preloading would allow)? The configuration printed beside it then says so (see
    :meth:`pounder.pool.Adapter.render_advised`): the two never contradict each other."""
    if measure.get("preload"):
        return False
    if _first_growth(measure) >= FIRST_REQUEST_GROWTH:
        return True
    if other is not None and other_memory is not None:
        return _preload_saves(measure, other) > 0
    return bool(_adapter(kind).preload_remedy) and preload_gain(measure, memory) is not None


def advice(kind: str, measure: Summary, other: Summary | None, memory: MemoryBound, other_memory: MemoryBound | None,
           sweep: Points, choice: ChildrenChoice, cores: float, *,
           machine: float | None = None) -> list[str]:
    """The causes behind the numbers, each with its figures. ``cores``: the server's (a pod's
    quota); ``machine``: the CPUs it may run on, which a neighbour takes (default ``cores``)."""
    said: list[str] = []
    language = _parent_language(kind)
    first = _first_growth(measure)
    if first >= FIRST_REQUEST_GROWTH:
        unshared = int(measure["cold"]["median_shared"]) - int(measure["warm"]["median_shared"])
        if measure.get("preload") and unshared >= first / 2:  # pages copied, not code loaded
            said.append(f"each child grows {_mib(first)} on its first requests while its shared memory falls "
                        f"{_mib(unshared)}: most of the growth is copy-on-write, pages inherited from the parent "
                        "written on first use and copied, not code loaded (what writes them: below)")
        else:
            if measure.get("preload"):
                remedy = ("even with preloading, something is loaded on first use: imports inside functions, "
                          "caches or connections built lazily; do that at load time, in the parent")
            else:
                own = _adapter(kind).preload_remedy  # each server's own way
                remedy = f"load the code and data in the parent: {own}" if own else \
                    "load the code and data in the parent before it forks"
            said.append(f"each child grows {_mib(first)} on its first requests: code or data is loaded on first "
                        f"use, in every child, instead of once in the parent. Remedy: {remedy}.")
    sharing = measure.get("sharing")
    if measure.get("preload") and sharing is not None and float(sharing) < COW_BROKEN:
        parent_rss = int(measure["parent"]["rss"])
        shared = int(measure["end"]["median_shared"])
        cause = {
            "perl": "Perl writes to preloaded variables when it uses them (a string used as a number, reference "
                    "counts, hash iteration): keep preloaded data read-only, build it in startup.pl, and avoid "
                    "touching large structures per request",
            "python": "reference counting and the cycle collector write to every object they touch: call "
                      "gc.freeze() at the end of the preload (before the fork) and prefer few large objects "
                      "(bytes, arrays) to many small ones",
            "ruby": "Ruby's garbage collector marks and moves the objects it inherited, writing to their pages: "
                    "compact the heap before the fork (GC.compact in before_fork, or Process.warmup on Ruby 3.3+) "
                    "so the survivors sit on few pages, and keep preloaded data frozen",
            "php": "PHP shares only what OPcache keeps in its shared memory: compiled scripts (opcache.preload "
                   "in php.ini loads them in the master) and interned strings; data a request builds is the "
                   "child's own",
        }.get(language, "the children write to memory they inherited")
        said.append(f"copy-on-write is broken early: the children still share only {_mib(shared)} of the parent's "
                    f"{_mib(parent_rss)} ({float(sharing):.0%}). Cause: {cause}.")
    if other is not None and other_memory is not None:
        on, off = (measure, other) if measure.get("preload") else (other, measure)
        mem_on, mem_off = (memory, other_memory) if measure.get("preload") else (other_memory, memory)
        saved = _preload_saves(measure, other)
        verb = "saves" if saved > 0 else "costs"
        said.append(f"preloading {verb} {_mib(abs(saved))} of private memory per child (max child USS "
                    f"{_mib(int(off['end']['max_uss']))} without, {_mib(int(on['end']['max_uss']))} with): "
                    f"MaxClients {mem_off.max_clients} without, {mem_on.max_clients} with"
                    + ("" if measure.get("preload") or saved <= 0 else " - turn it on"))
    else:
        said += _preload_advice(kind, measure, memory)
    said += explain_throughput(sweep, choice, cores, machine=machine)
    if memory.max_clients_no_sharing < memory.max_clients:
        said.append("summing RSS (as ps and top suggest) would allow only "
                    f"{children_text(memory.max_clients_no_sharing)} instead of {memory.max_clients}: "
                    f"{_mib(memory.shared)} per child is shared with the parent")
    return said


_UNSHARING_REMEDY = {
    "puma": "refork from a warm worker: fork_worker in puma.rb (workers are then forked from worker 0 after its "
            "first 1,000 requests; fork_worker N to choose when) and pumactl refork, or Puma's own refork after N "
            "requests; compact the heap before the fork (GC.compact in before_fork, or nakayoshi_fork) so what is "
            "shared sits on few pages",
    "unicorn": "compact the heap before the fork: preload_app true with before_fork { GC.compact } in unicorn.rb "
               "(Process.warmup on Ruby 3.3+), so the objects the children inherit sit on few pages",
    "gunicorn": "with --preload, call gc.freeze() in the parent just before it forks (at the end of the preloaded "
                "module, or gc.freeze() in pre_fork in gunicorn.conf.py, with gc.disable() early in the import): "
                "the collector then leaves the inherited objects' pages alone (reference counts still write to "
                "those a request touches: keep large data in few objects such as bytes or arrays)",
    "uwsgi": "without lazy-apps (the app loaded in the master), call gc.freeze() at the end of the app's import, "
             "before the workers are forked: the collector then leaves the inherited objects' pages alone "
             "(reference counts still write to those a request touches)",
    "apache": "preload in startup.pl (PerlPostConfigRequire): use every module with () and build read-only data "
              "there, once, in the parent; keep it read-only in the handlers (a string used as a number, a hash "
              "iterated, writes to its page)",
    "starman": "preload (--preload-app) and load every module and read-only data in the app's file, before the "
               "fork; keep it read-only per request (a string used as a number, a hash iterated, writes to its page)",
}


@public
def unsharing_remedy(adapter: Adapter, life: Life | None, mrpc: MaxRequestsChoice) -> list[str]:
    """The remedy for children that unshare over their life, in the runtime's own terms, when the
    unsharing was measured to decide MaxRequestsPerChild (:func:`pounder.tune._life.unsharing`);
    nothing otherwise."""
    judged = mrpc.unsharing
    if life is None or judged is None or not judged.decides:
        return []
    loaded = life.loaded
    fell = (f"the children unshare: a child's shared memory fell from {_mib(loaded[0].shared)} to "
            f"{_mib(loaded[-1].shared)} ({life.fall:.0%}) over {life.reached:,.0f} requests, and its private "
            f"memory grew from {_mib(loaded[0].private)} to {_mib(loaded[-1].private)}: pages inherited from the "
            "parent written and copied (copy-on-write)")
    remedy = _UNSHARING_REMEDY.get(adapter.kind) or (
        "load what the children share in the parent before the fork and keep it read-only per request")
    said = [f"{fell}. Remedy: {remedy}."]
    threads = getattr(adapter, "threads", None)
    if _parent_language(adapter.kind) == "ruby":
        most = int(threads[1]) if isinstance(threads, tuple) and len(threads) == 2 else 1
        said.append("threaded Ruby workers (" + (f"this one runs up to {most} threads" if most > 1 else
                    "when a worker runs more than one thread") + ") grow one malloc arena per thread: "
                    "MALLOC_ARENA_MAX=2 in the workers' environment keeps them to two")
    return said
