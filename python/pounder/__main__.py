"""``python -m pounder``: the CLI."""

from pounder.cli import main

if __name__ == "__main__":
    main()
