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

            run_cli()
        except KeyboardInterrupt:  # while the CLI is imported or built, before a command handles it
            sys.stderr.write(f"pounder: error: interrupted by {_interrupt.cause()}\n")
            sys.exit(_interrupt.exit_code())


if __name__ == "__main__":
    main()
