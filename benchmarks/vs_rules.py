"""pounder's answer against the rules of thumb users pick instead: requests/s, p99 and footprint, side by side.

For each app (--apps): `pounder tune` (quick, at --clients concurrent clients, --ram budget) gives
pounder's recommendation (read from the run's recommendation.json); then ONE `pounder run`
experiment puts it against the rule of thumb for that server, the two variants each on a server
of its own, side by side on loopback ports, with interleaved trials (--rounds per variant, after
one uncounted warm-up each) at the load the tune was offered (--clients connections, a new
connection per request). The figures are the experiment's own: each variant's median requests/s
and p99 over the counted trials with their 95 % bootstrap intervals, the ratio pounder / rule
with its interval (pounder compare's), and the footprint of each server's children (sum of PSS,
memory.json) after the loads, read once (no interval).

The rules (cores = the CPUs this process may run on, nproc):

- gunicorn: --workers 2 x cores + 1 (gunicorn's docs, "How Many Workers?"), --max-requests 0 (its default).
- Puma: its deployment guide's cluster-mode procedure (puma/puma docs/deployment.md, "Cluster Mode
  Tips"): workers = CPU cores (minimum 2), threads 5 ("Puma defaults to 5, and that's a decent
  number"), written as threads 5, 5; pounder measures threads 1, 1 unless told (--threads).
- php-fpm: pm.max_children = RAM budget / the average child (its RSS after warm-up, from the tune's
  size measurement: median USS + median shared), with Debian's stock www.conf for the rest: pm =
  dynamic, pm.start_servers 2, pm.min_spare_servers 1, pm.max_spare_servers 3, pm.max_requests 0.
- Apache prefork + mod_perl: Debian's stock mods-available/mpm_prefork.conf: StartServers 5,
  MinSpareServers 5, MaxSpareServers 10, MaxRequestWorkers 150, MaxConnectionsPerChild 0.
- Starman: its defaults, --workers 5 --max-requests 1000.

pounder's variant is the recommendation as printed: its children, MaxRequestsPerChild (Puma has
none) and, for servers that start children on demand, its spare settings; the preloading of the
tune for both variants.

This is a benchmark, not a test: it prints a table and asserts nothing. Every run's directory is
kept under --results (pounder report DIR draws any of them).

    python benchmarks/vs_rules.py [--apps demo,gunicorn,puma,php-fpm,apache,starman] [--clients 16]
                                  [--ram 1G] [--rounds 5] [--duration 4s] [--point-duration 1s]
                                  [--budget MINUTES] [--results DIR] [--markdown FILE] [--short]

Needs the servers (Debian: apache2 libapache2-mod-perl2 starman puma php-fpm nginx, gunicorn from
pip); an app whose server is missing is skipped and named. Ctrl-C, SIGTERM and SIGHUP stop the
running pounder with the same signal (it stops its servers and writes what it measured), then
this script, with what was measured so far.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
APPS_DIR = ROOT / "tests" / "apps"
APACHE_CONF = ROOT / "examples" / "experiments" / "apache" / "experiments.conf"
DEMO_ENV = {"DEMO_PRELOAD_MB": "64", "DEMO_CPU_MS": "4", "DEMO_LEAK_KB": "16"}  # pounder tune --demo's app
PUMA_GUIDE = "puma/puma docs/deployment.md (Cluster Mode Tips), commit 02ee3e30"
STOP_WAIT_S = 120  # a pounder asked to stop is killed (its process group) after this long
MIB = 1024 * 1024


class Stopped(Exception):
    """A signal (SIGINT, SIGTERM, SIGHUP) asked this script to stop."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _raise_stopped(signum: int, _frame: object) -> None:
    raise Stopped(signum)


# ----------------------------------------------------------------------------------- the apps


Rec = dict[str, Any]  # a recommendation.json


@dataclass
class Rule:
    """The rule of thumb's variant: its [[variant]] keys and how it is written in the table."""

    keys: dict[str, Any]
    shape: str
    source: str


@dataclass
class App:
    name: str
    server: str  # the pounder server (adapter) name
    path: str
    tune_target: list[str]  # pounder tune's SERVER TARGET and server options (or --demo)
    table: dict[str, Any]  # the experiment's [server] table, less workers and preload
    rule: Callable[[Rec, int, int], Rule]  # (recommendation, cores, RAM budget) -> the rule's variant
    missing: Callable[[], str | None]


def gunicorn_rule(_rec: Rec, cores: int, _ram: int) -> Rule:
    n = 2 * cores + 1
    return Rule({"workers": n, "max_requests": 0}, f"--workers {n} (2 x {cores} cores + 1), --max-requests 0",
                "gunicorn docs, How Many Workers?: (2 x $num_cores) + 1")


def puma_rule(_rec: Rec, cores: int, _ram: int) -> Rule:
    n = max(2, cores)
    return Rule({"workers": n, "threads": "5,5"}, f"workers {n} (= cores, at least 2), threads 5, 5", PUMA_GUIDE)


def average_child(rec: Rec) -> int:
    """The average child as a user reads it (ps RSS): the tune's median child USS + median shared after warm-up."""
    warm = rec["measure"]["warm"]
    return int(warm["median_uss"]) + int(warm["median_shared"])


def phpfpm_rule(rec: Rec, _cores: int, ram: int) -> Rule:
    child = average_child(rec)
    n = max(1, min(1024, ram // child))  # an experiment file takes 1 to 1024 workers
    capped = " (capped at 1024)" if ram // child > 1024 else ""
    return Rule(
        {"workers": n, "start_servers": 2, "min_spare": 1, "max_spare": 3, "max_requests": 0},
        f"pm = dynamic, pm.max_children {n} ({ram // MIB} MiB / {child / MIB:.1f} MiB a child{capped}), "
        "start 2, min spare 1, max spare 3, pm.max_requests 0",
        "RAM / average child; Debian's stock /etc/php/8.2/fpm/pool.d/www.conf",
    )


def apache_rule(_rec: Rec, _cores: int, _ram: int) -> Rule:
    return Rule(
        {"workers": 150, "start_servers": 5, "min_spare": 5, "max_spare": 10, "max_requests": 0},
        "StartServers 5, MinSpareServers 5, MaxSpareServers 10, MaxRequestWorkers 150, MaxConnectionsPerChild 0",
        "Debian's stock /etc/apache2/mods-available/mpm_prefork.conf",
    )


def starman_rule(_rec: Rec, _cores: int, _ram: int) -> Rule:
    return Rule({"workers": 5, "max_requests": 1000}, "--workers 5 --max-requests 1000", "Starman's defaults")


def _missing(name: str) -> Callable[[], str | None]:
    def check() -> str | None:
        import pounder.servers as servers

        return getattr(servers, f"{name}_missing")()  # type: ignore[no-any-return]

    return check


APPS = {
    app.name: app
    for app in (
        App("demo", "gunicorn", "/", ["--demo"],
            {"adapter": "gunicorn", "app": "pounder.demo.app:app", "env": DEMO_ENV},
            gunicorn_rule, _missing("gunicorn")),
        App("gunicorn", "gunicorn", "/sleep?ms=20", ["gunicorn", "wsgi_app:app", "--pythonpath", str(APPS_DIR)],
            {"adapter": "gunicorn", "app": "wsgi_app:app", "pythonpath": str(APPS_DIR)},
            gunicorn_rule, _missing("gunicorn")),
        App("puma", "puma", "/cpu?ms=5", ["puma", str(APPS_DIR / "rack_app.ru")],
            {"adapter": "puma", "rackup": str(APPS_DIR / "rack_app.ru")}, puma_rule, _missing("puma")),
        App("php-fpm", "php-fpm", "/cpu.php?ms=5",
            ["php-fpm", str(APPS_DIR / "php" / "pool.conf"), "--root", str(APPS_DIR / "php")],
            {"adapter": "php-fpm", "conf": str(APPS_DIR / "php" / "pool.conf"), "root": str(APPS_DIR / "php")},
            phpfpm_rule, _missing("phpfpm")),
        App("apache", "apache", "/perl/heavy", ["apache", str(APACHE_CONF)],
            {"adapter": "apache", "conf": str(APACHE_CONF)}, apache_rule, _missing("apache")),
        App("starman", "starman", "/cpu?ms=5", ["starman", str(APPS_DIR / "app.psgi")],
            {"adapter": "starman", "psgi": str(APPS_DIR / "app.psgi")}, starman_rule, _missing("starman")),
    )
}
TAKES_PRELOAD = {"gunicorn", "puma", "starman"}
ON_DEMAND = {"apache", "php-fpm"}


# ----------------------------------------------------------------------------------- running pounder


def run_pounder(argv: list[str], log: Path) -> int:
    """`python -m pounder ARGV` in a session of its own, its output to log; its exit status. A signal
    to this script is passed on to it once (pounder stops its servers, writes what it measured), it
    is waited for (its whole process group killed after STOP_WAIT_S), and Stopped raised again."""
    with log.open("w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "pounder", *argv], stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
        try:
            return proc.wait()
        except BaseException as error:
            stop(proc, error.signum if isinstance(error, Stopped) else signal.SIGTERM)
            raise


def stop(proc: subprocess.Popen[bytes], signum: int) -> None:
    """Pass signum to proc's process group, wait for it, kill the group after STOP_WAIT_S; no signal
    to this script interrupts the wait (they are blocked until it is over)."""
    stops = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}
    old = signal.pthread_sigmask(signal.SIG_BLOCK, stops)
    try:
        if proc.poll() is None:
            _signal_group(proc.pid, signum)
            try:
                proc.wait(timeout=STOP_WAIT_S)
            except subprocess.TimeoutExpired:
                _signal_group(proc.pid, signal.SIGKILL)
                proc.wait()
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def _signal_group(pgid: int, signum: int) -> None:
    try:
        os.killpg(pgid, signum)
    except ProcessLookupError:
        pass


def tail(path: Path, lines: int = 3) -> str:
    try:
        text = path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return ""
    return " / ".join(line.strip() for line in text[-lines:])


def tune_argv(app: App, args: argparse.Namespace, results: Path) -> list[str]:
    argv = ["tune", *app.tune_target, "--quick", "--clients", str(args.clients), "--max-children",
            str(args.clients), "--ram", args.ram, "--point-duration", args.point_duration, "--results", str(results)]
    if app.path != "/":
        argv += ["--path", app.path]
    if args.short:
        argv += ["--mrpc", "0", "--no-confirm", "--measure-children", "2", "--requests-per-child", "20"]
    return argv


# ----------------------------------------------------------------------------------- the experiment


def toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {toml_value(v)}" for k, v in value.items()) + " }"
    return json.dumps(str(value))  # a TOML basic string is a JSON string


def toml_table(header: str, keys: dict[str, Any]) -> list[str]:
    return [header, *(f"{k} = {toml_value(v)}" for k, v in keys.items() if v is not None), ""]


def pounder_variant(app: App, rec: Rec) -> dict[str, Any]:
    """The recommendation as an experiment variant: children, MaxRequestsPerChild, spare settings."""
    params = rec["params"]
    keys: dict[str, Any] = {"workers": params["max_clients"]}
    if app.server != "puma":  # Puma has no request limit (the recommendation's is 0)
        keys["max_requests"] = params["max_requests"]
    if app.server in ON_DEMAND:
        keys.update({name: params.get(name) for name in ("start_servers", "min_spare", "max_spare")})
    return keys


def pounder_shape(app: App, rec: Rec) -> str:
    params, names = rec["params"], rec["names"]
    parts = [f"{names['max_clients']} {params['max_clients']}"]
    if app.server == "puma":
        parts.append("threads 1, 1")
    else:
        parts.append(f"{names['max_requests']} {params['max_requests']}")
    if app.server in ON_DEMAND and params.get("start_servers") is not None:
        parts += [f"{names[n]} {params[n]}" for n in ("start_servers", "min_spare", "max_spare")]
    return ", ".join(parts)


def experiment_text(app: App, rec: Rec, rule: Rule, args: argparse.Namespace) -> str:
    server = dict(app.table)
    params = rec["params"]
    server["workers"] = params["max_clients"]
    if app.server in TAKES_PRELOAD and params.get("preload") is not None:
        server["preload"] = bool(params["preload"])
    load = {"connections": int(rec["offered"]["connections"]), "duration": args.duration, "trials": args.rounds,
            "keepalive": bool(rec["target"]["keepalive"])}
    lines = [f"title = {toml_value(f'pounder against the rule of thumb: {app.name}')}",
             'record = ["rps", "latency", "cpu", "memory"]', 'baseline = "rule"', ""]
    lines += toml_table("[server]", server)
    lines += toml_table("[[load]]", load)
    lines += toml_table("[[variant]]", {"label": "pounder", "path": app.path, **pounder_variant(app, rec)})
    lines += toml_table("[[variant]]", {"label": "rule", "path": app.path, **rule.keys})
    return "\n".join(lines)


# ----------------------------------------------------------------------------------- one app


@dataclass
class Outcome:
    app: App
    folder: Path
    rec: Rec | None = None
    rule: Rule | None = None
    compare: Rec | None = None
    memory: Rec | None = None
    notes: list[str] = field(default_factory=list)
    error: str | None = None
    seconds: float = 0.0


def measure(app: App, args: argparse.Namespace, results: Path, cores: int, ram: int) -> Outcome:
    folder = results / app.name
    folder.mkdir(parents=True)
    out = Outcome(app, folder)
    start = time.monotonic()
    try:
        _tune_and_run(out, args, cores, ram)
    finally:
        out.seconds = time.monotonic() - start
    return out


def _tune_and_run(out: Outcome, args: argparse.Namespace, cores: int, ram: int) -> None:
    app, folder = out.app, out.folder
    say(f"{app.name}: pounder tune ({app.server} {app.path}, {args.clients} clients)")
    status = run_pounder(tune_argv(app, args, folder / "tune"), folder / "tune.log")
    recommendation = folder / "tune" / "recommendation.json"
    if not recommendation.is_file():
        out.error = f"pounder tune exited {status} without a recommendation: {tail(folder / 'tune.log')}"
        return
    if status != 0:
        out.notes.append(f"pounder tune exited {status} (its confirmation not met?): {tail(folder / 'tune.log', 1)}")
    out.rec = json.loads(recommendation.read_text())
    out.rule = app.rule(out.rec, cores, ram)
    (folder / "experiment.toml").write_text(experiment_text(app, out.rec, out.rule, args))
    say(f"{app.name}: pounder run: pounder ({pounder_shape(app, out.rec)}) against the rule ({out.rule.shape})")
    status = run_pounder(["run", str(folder / "experiment.toml"), "--results", str(folder / "run")],
                         folder / "run.log")
    load = folder / "run" / "load-1.json"
    if not load.is_file():
        out.error = f"pounder run exited {status} without a comparison: {tail(folder / 'run.log')}"
        return
    if status != 0:
        out.notes.append(f"pounder run exited {status}: {tail(folder / 'run.log', 1)}")
    out.compare = json.loads(load.read_text())
    memory = folder / "run" / "memory.json"
    out.memory = json.loads(memory.read_text()) if memory.is_file() else None


def say(line: str) -> None:
    print(f"vs_rules {time.strftime('%H:%M:%S')}: {line}", file=sys.stderr, flush=True)


# ----------------------------------------------------------------------------------- reporting


def _num(value: float, scale: float, digits: int) -> str:
    return f"{value * scale:,.{digits}f}"


def spread(stat: Rec | None, scale: float = 1.0, digits: int = 0) -> str:
    """median (low-high), the 95 % interval of a compare figure; n/a without one."""
    if not stat or stat.get("median") is None:
        return "n/a"
    text = _num(stat["median"], scale, digits)
    if stat.get("low") is not None and stat.get("high") is not None:
        text += f" ({_num(stat['low'], scale, digits)}-{_num(stat['high'], scale, digits)})"
    return text


def ratio(stat: Rec | None) -> str:
    if not stat or stat.get("ratio") is None:
        return "n/a"
    text = f"{stat['ratio']:.2f}x"
    if stat.get("low") is not None and stat.get("high") is not None:
        text += f" ({stat['low']:.2f}-{stat['high']:.2f})"
    return text


def footprint(out: Outcome, label: str) -> tuple[str, float | None]:
    sizes = (out.memory or {}).get("variants", {}).get(label, {})
    after = sizes.get("after") or sizes.get("warm")
    if not after or after.get("footprint") is None:
        return "n/a", None
    value = float(after["footprint"])
    return f"{value / MIB:,.0f} ({after['children']})", value


HEAD = ["app (server, path)", "variant", "shape", "requests/s", "p99 ms", "footprint MiB (children)",
        "requests/s pounder/rule", "p99 pounder/rule", "footprint pounder/rule"]


def rows(outcomes: list[Outcome]) -> list[list[str]]:
    table = []
    for out in outcomes:
        what = f"{out.app.name} ({out.app.server} {out.app.path})"
        if out.compare is None or out.rec is None or out.rule is None:
            table.append([what, "-", "not measured (see below)", *["n/a"] * 6])
            continue
        variants = {v["label"]: v for v in out.compare["variants"]}
        versus: Rec = next((c for c in out.compare.get("comparisons", []) if c["label"] == "pounder"), {})
        mine, mine_bytes = footprint(out, "pounder")
        theirs, theirs_bytes = footprint(out, "rule")
        size = f"{mine_bytes / theirs_bytes:.2f}x" if mine_bytes and theirs_bytes else "n/a"
        for label, shape in (("pounder", pounder_shape(out.app, out.rec)), ("rule", out.rule.shape)):
            v = variants.get(label, {})
            cells = [what if label == "pounder" else "", label, shape, spread(v.get("requests_per_s")),
                     spread(v.get("p99_us"), 1e-3, 1), mine if label == "pounder" else theirs]
            cells += ([ratio(versus.get("requests_per_s")), ratio(versus.get("p99_us")), size] if label == "pounder"
                      else ["", "", ""])
            table.append(cells)
    return table


def machine() -> str:
    model = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
        total = next(int(line.split()[1]) for line in Path("/proc/meminfo").read_text().splitlines()
                     if line.startswith("MemTotal:"))
        memory = f", {total / 1024 / 1024:.0f} GiB"
    except (OSError, StopIteration, ValueError):
        memory = ""
    return f"{len(os.sched_getaffinity(0))} CPUs (nproc; {model}){memory}, Linux {platform.release()}"


def method(args: argparse.Namespace) -> str:
    return (
        f"Method: for each app, `pounder tune --quick --clients {args.clients} --max-children {args.clients} "
        f"--ram {args.ram} --point-duration {args.point_duration}` (pounder's recommendation, read from its "
        "recommendation.json), "
        f"then one `pounder run` experiment: pounder's recommendation against the rule of thumb, each on a server "
        f"of its own side by side, {args.rounds} interleaved trials of {args.duration} per variant (after one "
        f"uncounted warm-up each) at the tune's offered load ({args.clients} connections, a new connection per "
        "request). Requests/s and p99 (corrected, from each request's intended send time): medians over the "
        "trials with 95 % bootstrap intervals; pounder/rule: the ratio of the medians with its 95 % interval "
        "(pounder compare's); footprint: the sum of the children's PSS (memory.json) after the loads, read once "
        "(no interval), with the children counted then."
    )


def report(outcomes: list[Outcome], args: argparse.Namespace, results: Path, command: str) -> None:
    table = rows(outcomes)
    notes = [f"rule for {o.app.name}: {o.rule.shape} ({o.rule.source})" for o in outcomes if o.rule]
    notes += [f"{o.app.name}: {n}" for o in outcomes for n in o.notes]
    notes += [f"{o.app.name}: not measured: {o.error}" for o in outcomes if o.error]
    notes += [f"{o.app.name}: tune and run took {o.seconds / 60:.1f} min" for o in outcomes]
    notes.append(f"results (tune and run directories; pounder report DIR draws any of them): {results}")
    head = [f"Machine: {machine()}", "", method(args), ""]
    widths = [max(len(row[i]) for row in [HEAD, *table]) for i in range(len(HEAD))]
    text = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in [HEAD, *table]]
    print("\n".join([*head, *text, "", *notes, "", f"command: {command}"]))
    if args.markdown:
        md = [*head, "| " + " | ".join(HEAD) + " |", "|" + "---|" * len(HEAD)]
        md += ["| " + " | ".join(row) + " |" for row in table]
        md += ["", *(f"- {n}" for n in notes), "", f"Command: `{command}`"]
        Path(args.markdown).write_text("\n".join(md) + "\n")
        print(f"\nMarkdown written to {args.markdown}")


# ----------------------------------------------------------------------------------- main


def parse_size(text: str) -> int:
    units = {"": 1, "K": 1024, "M": MIB, "G": 1024 * MIB}
    number, unit = text.rstrip("KMGkmgiB"), text[len(text.rstrip("KMGkmgiB")):].upper().rstrip("IB")
    if unit not in units or not number.replace(".", "", 1).isdigit():
        raise ValueError(text)
    return int(float(number) * units[unit])


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--apps", default=",".join(APPS), help=f"the apps, in order (default all: {','.join(APPS)})")
    ap.add_argument("--clients", type=int, default=16, help="concurrent clients: the tune's offered load (default 16)")
    ap.add_argument("--ram", default="1G", help="the RAM budget of the tune and of php-fpm's RAM rule (default 1G)")
    ap.add_argument("--rounds", type=int, default=5, help="interleaved trials per variant (default 5, at least 3)")
    ap.add_argument("--duration", default="4s", help="each trial's length (default 4s)")
    ap.add_argument("--point-duration", default="1s", help="the tune's sweep points (default 1s)")
    ap.add_argument("--budget", type=float, metavar="MINUTES", help="start an app only while the minutes spent so "
                    "far plus the longest app so far stay within this (the others are named as skipped)")
    ap.add_argument("--results", help="where to keep every run (default: a new directory under the temp dir)")
    ap.add_argument("--markdown", metavar="FILE", help="also write the table as Markdown")
    ap.add_argument("--short", action="store_true", help="a smoke run: tiny tunes (no MaxRequestsPerChild sweep, "
                    "no confirmation), 4 clients, 3 rounds of 1 s")
    args = ap.parse_args(argv)
    if args.short:
        args.clients, args.rounds, args.duration = min(args.clients, 4), 3, "1s"
    unknown = [name for name in args.apps.split(",") if name not in APPS]
    if unknown:
        ap.error(f"unknown app {', '.join(unknown)} (one of: {', '.join(APPS)})")
    if args.rounds < 3 or args.clients < 1:
        ap.error("--rounds must be at least 3 (pounder compare's least), --clients at least 1")
    try:
        args.ram_bytes = parse_size(args.ram)
    except ValueError:
        ap.error(f"--ram: a size such as 512M or 1G, not {args.ram!r}")
    if args.results and Path(args.results).exists() and any(Path(args.results).iterdir()):
        ap.error(f"--results {args.results}: not empty")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    command = shlex.join(["python3", "benchmarks/vs_rules.py", *(sys.argv[1:] if argv is None else argv)])
    results = Path(args.results or tempfile.mkdtemp(prefix="pounder-vs-rules-"))
    results.mkdir(parents=True, exist_ok=True)
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(signum) is not signal.SIG_IGN:
            signal.signal(signum, _raise_stopped)
    cores = len(os.sched_getaffinity(0))
    outcomes: list[Outcome] = []
    status = 0
    started = time.monotonic()
    try:
        for name in args.apps.split(","):
            app = APPS[name]
            spent = (time.monotonic() - started) / 60
            longest = max((o.seconds / 60 for o in outcomes), default=0.0)
            if args.budget is not None and spent + longest > args.budget:
                why = f"skipped: {spent:.1f} min spent + {longest:.1f} min (the longest app) > --budget {args.budget:g}"
                say(f"{name}: {why}")
                outcomes.append(Outcome(app, results / name, error=why))
                continue
            missing = app.missing()
            if missing:
                say(f"{name}: skipped: {missing}")
                outcomes.append(Outcome(app, results / name, error=f"skipped: {missing}"))
                continue
            outcomes.append(measure(app, args, results, cores, args.ram_bytes))
    except Stopped as stopped:
        say(f"stopped by {stopped}: the table has what was measured")
        status = 130 if stopped.signum == signal.SIGINT else 128 + stopped.signum
    report(outcomes, args, results, command)
    return status


if __name__ == "__main__":
    sys.exit(main())
