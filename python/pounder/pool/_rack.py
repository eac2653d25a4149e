"""What Puma and Unicorn share as pools under test: a Rack application (``config.ru``), its
checks, and no request limit (:class:`RackAdapter`; each server's module adds its own)."""

from __future__ import annotations

import os
import shlex
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, ClassVar

from pounder._errors import (
    UsageError,
    check_flag,
    check_path,
    check_str_mapping,
    check_strings,
)
from pounder._files import SMALL_LIMIT, check_input_file
from pounder.pool._adapter import Adapter, AdapterOptions, PoolParams


def check_rackup(rackup: Path, who: str) -> None:
    """:class:`~pounder.UsageError` unless ``rackup`` is a regular file of at most 1 MiB."""
    if not rackup.exists():
        raise UsageError(f"{who}: no such rackup file {rackup}")
    if rackup.is_dir():
        raise UsageError(f"{who}: the rackup file {rackup} is a directory (give its config.ru)")
    check_input_file(rackup, f"{who}: rackup file", SMALL_LIMIT)


class RackAdapter(Adapter):
    """A Rack server serving ``rackup`` (a config.ru): ``preload`` (default False, the servers'
    own default), ``env``, ``extra_args`` before the rackup file. Neither Puma nor Unicorn has a
    limit on the requests a worker serves: :meth:`refuse_request_limit` in ``server()``."""

    target_form = "CONFIG.RU"
    target_field = "rackup"
    target_file = True
    options = frozenset({"preload", "env"})
    preload_toggle = True
    request_limit = False
    language = "ruby"
    missing: ClassVar[Callable[[], str | None]]
    """Why the server cannot run here (None: it can)."""

    @classmethod
    def from_options(cls, target: str | os.PathLike[str] | None, options: AdapterOptions) -> RackAdapter:
        return cls(cls.given_target(target), env=options.env, extra_args=options.extra_args, **options.preloading)

    def __init__(self, rackup: str | os.PathLike[str], *, preload: bool = False,
                 env: Mapping[str, str] | None = None, extra_args: tuple[str, ...] = ()) -> None:
        self.rackup = Path(check_path(rackup, f"{self.who}: rackup")).resolve()
        self.preload = check_flag(preload, f"{self.who}: preload")
        self.env = check_str_mapping(env, f"{self.who}: env")
        self.extra_args = check_strings(extra_args, f"{self.who}: extra_args")

    def refuse_request_limit(self, params: PoolParams) -> None:
        """Measured without a request limit only (tune names a worker killer instead)."""
        if params.max_requests > 0:
            raise UsageError(f"{self.who} has no limit on the requests a worker serves: it can only be measured "
                             f"with max_requests 0, not {params.max_requests}")

    def command_tail(self) -> str:
        """The end of the command line: the extra arguments and the rackup file."""
        return " ".join(shlex.quote(word) for word in (*self.extra_args, str(self.rackup)))

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "rackup": str(self.rackup), "preload": self.preload, "env": self.env,
                "extra_args": list(self.extra_args)}

    def check(self) -> None:
        check_rackup(self.rackup, self.who)
        missing = type(self).missing()
        if missing is not None:
            raise UsageError(f"{self.who}: {missing}")

    def input_files(self) -> list[tuple[str, str]]:
        return [("rackup file", str(self.rackup))]
