"""How a managed server fails (:class:`ServerFailure`: the reason, then what its own logs say)
and the parent-death signal its parent starts with (:func:`die_with_parent_hook`)."""

from __future__ import annotations

import ctypes
import os
from collections.abc import Callable
from pathlib import Path

from pounder._errors import PounderError, public

_PR_SET_PDEATHSIG = 1


class ServerFailure(PounderError):
    """A server failed. ``str(error)`` is the reason on its first line, then what the server's
    own logs say (``log_tail``: errors first, at most 18 lines) - never a Python traceback.
    ``logs``: where its whole logs were kept, when the caller kept them."""

    def __init__(self, reason: str, log_tail: str = "", logs: tuple[Path, ...] = ()) -> None:
        self.reason = reason
        self.log_tail = log_tail
        self.logs = logs
        super().__init__(f"{reason}\n{log_tail}" if log_tail else reason)


@public
class ServerStartError(ServerFailure):
    """A server did not come up (see :class:`ServerFailure`)."""


@public
class ServerExitedError(ServerFailure):
    """A server that was running exited while it was measured (its parent killed, or it halted
    on its workers' failures): not bad input (see :class:`ServerFailure`)."""


class _PortTaken(Exception):
    """The chosen port was taken between choosing and binding it (retried once)."""

    def __init__(self, log_tail: str) -> None:
        super().__init__(log_tail)
        self.log_tail = log_tail


@public
def die_with_parent_hook(signum: int) -> Callable[[], None]:
    """A ``preexec_fn`` asking the kernel to send ``signum`` to the child when this process
    (thread) dies."""
    prctl = ctypes.CDLL(None, use_errno=True).prctl
    parent = os.getpid()

    def hook() -> None:
        prctl(_PR_SET_PDEATHSIG, signum, 0, 0, 0)
        if os.getppid() != parent:  # the parent died before the prctl took effect
            os.kill(os.getpid(), signum)

    return hook
