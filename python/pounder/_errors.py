"""Exceptions raised by pounder."""

from __future__ import annotations


class PounderError(Exception):
    """Base class of every error pounder raises on purpose.

    The message is always one line meant for a human: the CLI prints it as
    ``pounder: error: <message>``.
    """


class UsageError(PounderError, ValueError):
    """Bad input: an option, URL, file or value the user gave cannot be used.

    The CLI exits with status 2 on it (like other usage errors).
    """
