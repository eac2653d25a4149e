"""``python -m pounder``: the CLI."""

import sys

try:
    from pounder.cli import main
except KeyboardInterrupt:  # Ctrl-C while the CLI is still being imported
    sys.stderr.write("pounder: interrupted\n")
    sys.exit(130)

if __name__ == "__main__":
    main()
