"""What ``ray.init`` does to this process, kept in bounds: pounder's signal handlers stay, the token
authentication a local cluster turns on is turned off again, and every process of a local cluster
(``--ray local``) is in one process group that pounder kills, however it ends.

Ray starts a local node's processes (GCS, raylet, log monitor, dashboard) as children of this
process, in its process group, with a parent-death signal; the raylet starts its agents
(``ray::DashboardAgent``, ``ray::RuntimeEnvAgent``, ~90 MB each) in its group and the workers each
in a group of its own. Stopped during ``ray.init``, nothing knew the node: the GCS and the raylet
died with pounder, their children stayed for minutes (ppid 1). Here the first process Ray starts
leads a new group, every later one joins it and the raylet keeps its workers in it
(``RAY_process_group_cleanup_enabled``); the guard (:func:`pounder.servers.guard_group`) kills
the group should pounder die, and :meth:`LocalNode.stop` kills it when pounder is done with the
node. Ray's own names used here are private: on a Ray without them, Ray's behaviour is left as is.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import ModuleType
from typing import Any

from pounder import _interrupt
from pounder.servers import guard_group, release_group

AUTH_MODE = "RAY_AUTH_MODE"
_NODE_ENV = {"RAY_process_group_cleanup_enabled": "false"}
"""For the node's processes: the raylet starts its workers in its own group, not one each."""


@contextmanager
def _replaced(module_name: str, name: str, value: Any) -> Iterator[None]:
    """Ray's private ``module_name.name`` is ``value`` for the block (without it: nothing replaced)."""
    try:
        module: ModuleType | None = importlib.import_module(module_name)
        original = getattr(module, name)
    except (ImportError, AttributeError):
        module = None
    if module is None:
        yield
        return
    setattr(module, name, value)
    try:
        yield
    finally:
        setattr(module, name, original)


@contextmanager
def kept_signal_handlers() -> Iterator[None]:
    """Around ``ray.init``, which would make SIGTERM exit at once (``sys.exit(15)``, without a word):
    its handler is not installed and any other it sets is put back, so pounder's handlers (stop,
    write, exit 143) stay. A signal waits until ``ray.init`` has returned: raised in it, it can
    leave Ray's C++ driver made but not yet Ray's to stop (in ``CoreWorker``'s constructor), which
    then talks to the killed node and crashes the exit (SIGSEGV) seconds later; meanwhile the
    watcher of :func:`pounder._interrupt.watched` ends the command."""
    saved = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    try:
        with _replaced("ray._private.utils", "set_sigterm_handler", lambda handler: None), _interrupt.deferred():
            yield
    finally:
        for sig, handler in saved.items():
            if handler is not None:
                signal.signal(sig, handler)


def restore_auth_mode(saved: str | None) -> None:
    """Undo what starting a local cluster did to this process: Ray turns its token authentication
    on (``RAY_AUTH_MODE=token`` in our environment and its cached configuration) and
    ``ray.shutdown`` leaves it on, so this process's next driver would refuse the calls of a
    cluster without tokens - whose GCS then kills every actor it places at once ("all references to
    the actor were removed")."""
    if saved is None:
        os.environ.pop(AUTH_MODE, None)
    else:
        os.environ[AUTH_MODE] = saved
    try:
        raylet = importlib.import_module("ray._raylet")  # not in its type stub
        raylet.Config.initialize("")  # re-reads RAY_* from the environment
        raylet.AuthenticationTokenLoader.instance().reset_cache()
    except (ImportError, AttributeError):  # a Ray without token authentication: nothing to undo
        pass


class LocalNode:
    """The processes of the local cluster this process starts: one process group, guarded."""

    def __init__(self) -> None:
        self.group = 0
        """The group's id (the first process Ray started); 0 before."""

    @contextmanager
    def starting(self) -> Iterator[None]:
        """Around ``ray.init``: every process Ray starts joins the node's group (the first leads it)."""
        popen: type = getattr(importlib.import_module("ray._private.services"), "ConsolePopen", object)
        node = self

        class Grouped(popen):  # type: ignore[misc]
            def __init__(self, *args: Any, preexec_fn: Callable[[], None] | None = None,
                         env: dict[str, str] | None = None, **kwargs: Any) -> None:
                group = node.group

                def preexec() -> None:  # in the child, before it runs Ray's program
                    os.setpgid(0, group)
                    if preexec_fn is not None:
                        preexec_fn()

                try:
                    super().__init__(*args, preexec_fn=preexec, env={**(env or os.environ), **_NODE_ENV}, **kwargs)
                finally:  # also when a signal stopped the start after the fork
                    pid = getattr(self, "pid", None)
                    if not node.group and pid:
                        node.group = pid
                        guard_group(pid)

        with _replaced("ray._private.services", "ConsolePopen", Grouped):
            yield

    def kill(self) -> None:
        """SIGKILL to every process of the node at once."""
        if self.group:
            with contextlib.suppress(OSError):  # all gone already
                os.killpg(self.group, signal.SIGKILL)
            release_group(self.group)

    def stop(self, ray: ModuleType, *, at_once: bool) -> None:
        """Disconnect this process and stop the node as Ray does (``ray.shutdown``: SIGTERM to one
        process after the other, with up to a second's grace each), then kill what is left. With
        ``at_once`` (after a signal, or a start that failed), the node is killed instead: this
        process disconnects while the node still answers (a driver whose node is gone waits for it
        for seconds, at exit too), then the group is killed."""
        try:
            if at_once:
                with contextlib.suppress(ImportError):  # Ray's own node stop, skipped
                    setattr(importlib.import_module("ray._private.worker"), "_global_node", None)  # noqa: B010
            ray.shutdown()
        finally:
            self.kill()
