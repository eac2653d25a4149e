"""``pounder run EXPERIMENT.toml``: run an experiment file (see :mod:`pounder.experiment`)."""

from __future__ import annotations

import sys
from datetime import datetime
from typing import Annotated

import typer

from pounder._errors import PounderError, UsageError
from pounder.cli._common import EXIT_FAILURE, EXIT_INTERRUPTED, option, print_error
from pounder.experiment import load_experiment
from pounder.servers import ServerStartError
from pounder.tune._store import ResultsDir

RUN_HELP = "\n\n".join([
    "Run an experiment file: a server (apache, gunicorn, starman, command, or plain URLs), its variants "
    "(paths, config lines, pool settings) and one or more loads. Each distinct server setting gets its own server, "
    "all side by side on loopback ports; the variants are compared with interleaved trials (pounder compare) "
    "and the children's memory is recorded.",
    "The classic experiments ship in examples/experiments/. Everything is written to the results directory as it "
    "is measured.",
    "Exit status: 0 done, 1 a server or a measurement failed, 2 bad input (a bad file names its line and key), "
    "130 interrupted.",
])

RESULTS = option("--results", panel="Output", metavar="DIR", help=(
    "Where to write the results (default ./pounder-run-NAME-DATE-TIME); must not exist or be empty."))
QUICK = option("--quick", panel="Run", help="At most 3 trials of 1 s per variant and load.")


def run_command(
    experiment: Annotated[str, typer.Argument(metavar="EXPERIMENT.toml", show_default=False)],
    results: Annotated[str | None, RESULTS] = None,
    quick: Annotated[bool, QUICK] = False,
) -> int:
    from pounder.experiment._run import run_experiment

    exp = load_experiment(experiment)
    where = results if results is not None else f"pounder-run-{exp.path.stem}-{datetime.now():%Y%m%d-%H%M%S}"
    ResultsDir.check_new(where)

    def log(line: str) -> None:
        sys.stderr.write(f"pounder: {line}\n")
        sys.stderr.flush()

    try:
        outcome = run_experiment(exp, where, quick=quick, log=log)
    except ServerStartError as error:
        print_error(f"the server did not start: {error.reason}")
        if error.log_tail:
            sys.stderr.write(error.log_tail.rstrip("\n") + "\n")
        return EXIT_FAILURE
    except KeyboardInterrupt:
        print_error(f"interrupted; every server was stopped; what was measured is in {where}")
        return EXIT_INTERRUPTED
    except UsageError:
        raise
    except PounderError as error:
        raise PounderError(f"{error} (what was measured is in {where})") from None
    sys.stdout.write(outcome.render())
    return 0
