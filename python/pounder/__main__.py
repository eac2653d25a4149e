"""``pounder`` and ``python -m pounder``: the CLI, with SIGINT, SIGTERM and SIGHUP handled from
the first moment (importing the CLI takes a few tenths of a second; a signal then is one line
and exit 130, or 143 for SIGTERM, as later)."""

from __future__ import annotations

import sys

from pounder import _interrupt


def main() -> None:
    with _interrupt.handled():
        try:
            from pounder.cli import main as run_cli
        except KeyboardInterrupt:
            sys.stderr.write(f"pounder: error: interrupted by {_interrupt.cause()}\n")
            sys.exit(_interrupt.exit_code())
        run_cli()


if __name__ == "__main__":
    main()
