"""Server adapters: one small class per server behind one interface, one module each
(``_gunicorn``, ``_starman``, ``_apache``, ``_command``; the interface in ``_adapter``).

An adapter knows how to make a :class:`~pounder.servers.ManagedServer` for a set of pool
parameters (:class:`PoolParams`, the five classic knobs plus preloading), and how to write the
final recommendation in the server's own syntax. Starting, warming, measuring and stopping are the
same for every server and live in :mod:`pounder.pool._runner`.

This module is the one place an adapter is built from a server kind and its target
(:func:`make_adapter`: ``pounder tune SERVER TARGET``, an experiment file's ``[server]``, a stored
``to_dict``). Adapters are plain data (``to_dict`` / :func:`adapter_from_dict`), so a results
directory can rebuild the adapter it was run with (``pounder tune --resume``). A new server: its
module here (its class with its ``kind``, ``target_field`` and ``from_options``), its entry in
:data:`REGISTRY`.
"""
from __future__ import annotations

import inspect
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import fields
from typing import Any

from pounder._errors import UsageError, public
from pounder.pool._adapter import ADAPTER_OPTION_NAMES, Adapter, AdapterOptions, option_refused
from pounder.pool._apache import ApacheAdapter
from pounder.pool._command import CommandAdapter
from pounder.pool._gunicorn import GunicornAdapter
from pounder.pool._phpfpm import PhpFpmAdapter
from pounder.pool._puma import PumaAdapter
from pounder.pool._starman import StarmanAdapter
from pounder.pool._unicorn import UnicornAdapter
from pounder.pool._uwsgi import UwsgiAdapter
from pounder.servers import NO_STATUS, StatusReader

DEMO_APP = "pounder.demo.app:app"
DEMO_ENV = {"DEMO_PRELOAD_MB": "64", "DEMO_CPU_MS": "4", "DEMO_LEAK_KB": "16"}

REGISTRY: tuple[type[Adapter], ...] = (
    ApacheAdapter, GunicornAdapter, StarmanAdapter, PhpFpmAdapter, PumaAdapter, UnicornAdapter, UwsgiAdapter,
    CommandAdapter)
"""Every adapter class, in the order servers are listed: the one declaration of the servers pounder
starts (each class its ``kind``, ``target_field`` and ``from_options``)."""
ADAPTERS: Mapping[str, type[Adapter]] = {adapter.kind: adapter for adapter in REGISTRY}
"""Every adapter class by its kind."""
KINDS = tuple(ADAPTERS)
TARGET_FIELDS: Mapping[str, str] = {adapter.kind: adapter.target_field for adapter in REGISTRY}
"""What each kind runs, by the name its results and experiment files give it."""


@public
def refused_option(kind: str, name: str, called: str | None = None) -> str | None:
    """Why server ``kind`` does not take the option ``name`` of :data:`SERVER_OPTIONS` (one
    line naming it ``called``, default its flag), None when it does: each adapter declares its
    options once (``Adapter.options``)."""
    return option_refused(ADAPTERS[kind], name, ADAPTERS.values(), called)


@public
def build_adapter(kind: str, target: str | os.PathLike[str] | None, options: AdapterOptions | None = None, *,
                  check: bool = True) -> Adapter:
    """The adapter of server ``kind`` (one of :data:`KINDS`) for ``target`` (see
    :meth:`Adapter.from_options`) with ``options`` (default: none given); ``check``:
    :meth:`Adapter.check` that what it names is there (False: only describe a stored run)."""
    if not isinstance(kind, str) or kind not in ADAPTERS:
        raise UsageError(f"unknown server kind {kind!r}: use one of {', '.join(KINDS)}")
    adapter = ADAPTERS[kind].from_options(target, AdapterOptions() if options is None else options)
    if check:
        adapter.check()
    return adapter


def _keywords_of_options(function: Callable[..., Adapter]) -> Callable[..., Adapter]:
    """``function`` whose signature names :class:`AdapterOptions`' fields as keywords (``**options``
    is how it takes them): what :func:`~pounder._errors.public` binds a call to (an unknown keyword
    said as such, before a missing argument) and what ``help()`` shows."""
    keyword = inspect.Parameter.KEYWORD_ONLY
    signature = inspect.signature(function)
    kind, target, check = (signature.parameters[name] for name in ("kind", "target", "check"))
    options = [inspect.Parameter(option.name, keyword, default=option.default, annotation=option.type)
               for option in fields(AdapterOptions)]
    function.__signature__ = signature.replace(parameters=[kind, target, check, *options])  # type: ignore[attr-defined]
    return function


@public
@_keywords_of_options
def make_adapter(kind: str, target: str | os.PathLike[str] | None, *, check: bool = True, **options: Any) -> Adapter:
    """:func:`build_adapter` with the :class:`AdapterOptions` as keywords (``pythonpath``,
    ``preload``, ``root``, ``env``, ...: its fields): the adapter of server ``kind`` for
    ``target``: the apache configuration file (None: handlers given directly), the gunicorn
    ``module:callable``, the Starman PSGI file, or the command. Options a kind does not use are
    ignored (Apache takes its environment and preloading from its configuration); ``preload`` None
    is the server's own default, as ``threads`` None (Puma's threads, "N" or "MIN,MAX": 1,1)."""
    for name in options:
        if name not in ADAPTER_OPTION_NAMES:  # as @public says it of any function's unknown keyword
            raise UsageError(f"make_adapter: unexpected argument {name!r}")
    return build_adapter(kind, target, AdapterOptions(**options), check=check)


@public
def adapter_from_dict(data: Mapping[str, Any], *, check: bool = False) -> Adapter:
    """Rebuild an adapter from its ``to_dict``; :class:`~pounder.UsageError` if it cannot be
    (``check``: or if what it names is no longer there, see :meth:`Adapter.check`)."""
    if not isinstance(data, Mapping):
        raise UsageError(f"adapter_from_dict needs a mapping (an adapter's to_dict()), not {type(data).__name__}")
    kind = data.get("kind")
    if not isinstance(kind, str) or kind not in ADAPTERS:
        raise UsageError(f"the results directory names an unknown server kind {kind!r}")
    try:
        target = ADAPTERS[kind].stored_target(data)
        return build_adapter(kind, target, AdapterOptions.from_dict(data), check=check)
    except (KeyError, TypeError, ValueError, AttributeError) as error:
        raise UsageError(f"the results directory describes its {kind} server badly ({error})") from None


@public
def status_reader(kind: str) -> StatusReader:
    """The status reader of server ``kind`` (:attr:`Adapter.status_reader`; a kind pounder does not
    know: one that says nothing)."""
    adapter = ADAPTERS.get(kind) if isinstance(kind, str) else None
    return NO_STATUS if adapter is None else adapter.status_reader


@public
def status_summary(trials: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """A point's ``server_status`` from its trials' (None when no trial read one): ``trials``, how
    many read one, and what the server whose figures they are says of them
    (:meth:`~pounder.servers.StatusReader.summary`)."""
    read = [t["server_status"] for t in trials if t.get("server_status")]
    if not read:
        return None
    point: dict[str, Any] = {"trials": len(read)}
    for reader in dict.fromkeys(adapter.status_reader for adapter in REGISTRY):
        if any(reader.owns(status) for status in read):
            point.update(reader.summary(read))
    return point


@public
def demo_adapter() -> GunicornAdapter:
    """The bundled demo: a WSGI app on gunicorn with 64 MB of preloaded data, ~4 ms of CPU per
    request and a 16 KB leak per request."""
    return GunicornAdapter(DEMO_APP, preload=True, env=DEMO_ENV)
