"""The request templates of a scenario's steps (traffic/_scenario.py): text and slots, the encodings
a value gets for where it stands, and the engine's pieces (``EnginePiece``) of a step's head and
body. The engine fills each slot with the virtual user's value in the same encoding
(crates/engine/src/scenario.rs ``encode``), so that a ``[vars]`` value and a captured one come
out the same."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal
from urllib.parse import quote, quote_plus

from pounder._version import __version__
from pounder.traffic._request import merge_headers

if TYPE_CHECKING:
    from pounder._engine import EnginePiece

Encoding = Literal["raw", "form", "json", "path"]
"""raw: as it is (headers, a text body); form: an x-www-form-urlencoded value (a form body, the
query); json: inside a JSON string; path: in the path of a request target."""

_PATH_SAFE = "!$&'()*+,;=:@/?%"
_LONE_PERCENT = re.compile(r"%(?![0-9A-Fa-f]{2})")
_SLOT_OR_QUERY = re.compile(r"\{\{.*?\}\}|\?", re.DOTALL)


@dataclass(frozen=True)
class Slot:
    """Where a captured variable goes: its index in ``Scenario.variables``, and its encoding."""

    var: int
    enc: Encoding


Template = tuple["str | Slot", ...]
"""Text (as it is sent) and slots."""


def path_text(text: str) -> str:
    """``text`` as the engine's ``path`` encoding writes it: RFC 3986's unreserved and sub-delims,
    ``:@/?`` and a ``%`` followed by two hex digits as they are, every other byte (UTF-8) ``%XX``
    (a space ``%20``)."""
    return _LONE_PERCENT.sub("%25", quote(text, safe=_PATH_SAFE))


def form_text(text: str) -> str:
    """An x-www-form-urlencoded value, as the engine's ``form`` encoding writes it: unreserved
    (letters, digits, ``-._~``) as they are, a space ``+``, every other byte ``%XX``."""
    return quote_plus(text, safe="")


def json_text(text: str) -> str:
    """``text`` inside a JSON string (without the quotes)."""
    return json.dumps(text, ensure_ascii=False)[1:-1]


def split_query(path: str) -> tuple[str, str]:
    """A step's ``path`` cut before its query's ``?`` (the first outside ``{{...}}``), or at its
    end when it has none."""
    for match in _SLOT_OR_QUERY.finditer(path):
        if match[0] == "?":
            return path[: match.start()], path[match.start() :]
    return path, ""


def joined(parts: Sequence[str | Slot]) -> Template:
    """``parts`` with adjacent texts joined and empty ones left out."""
    result: list[str | Slot] = []
    for part in parts:
        if isinstance(part, str) and result and isinstance(result[-1], str):
            result[-1] += part
        elif part != "":
            result.append(part)
    return tuple(result)


def engine_pieces(template: Template) -> list[EnginePiece]:
    pieces: list[EnginePiece] = []
    for part in template:
        if isinstance(part, Slot):
            pieces.append({"var": part.var, "enc": part.enc})
        elif part:
            pieces.append({"text": part.encode("utf-8")})
    return pieces


def head_pieces(
    method: str, target: Template, own: Sequence[tuple[str, Template]], host: str, *, keepalive: bool,
    headers: Sequence[tuple[str, str]], generated: Sequence[tuple[str, str]], content_type: str | None,
) -> list[EnginePiece]:  # fmt: skip
    """A step's request line and headers: Host, User-Agent and Accept as bench sends them, the
    step's ``own`` headers, ``headers`` (-H) that none of them replaces, ``generated``
    (Authorization from -A), ``content_type``, ``Connection: close`` without keep-alive; each
    line ending CRLF, no blank line."""
    slots: list[Slot] = []

    def marked(template: Template) -> str:  # a slot as \0N\0 (no header value nor target holds a NUL)
        text = ""
        for part in template:
            if isinstance(part, Slot):
                slots.append(part)
                part = f"\0{len(slots) - 1}\0"
            text += part
        return text

    names = {name.lower() for name, _ in own}
    user = [(name, marked(value)) for name, value in own]
    user += [(name, value) for name, value in headers if name.lower() not in names]
    last = [*generated, *([("Content-Type", content_type)] if content_type else [])]
    if not keepalive:
        last.append(("Connection", "close"))
    first = [("Host", host), ("User-Agent", f"pounder/{__version__}"), ("Accept", "*/*")]
    merged = merge_headers(first, user, last)
    head = f"{method} {marked(target)} HTTP/1.1\r\n" + "".join(f"{n}: {v}\r\n" for n, v in merged)
    pieces: list[str | Slot] = []
    for index, text in enumerate(head.split("\0")):
        pieces.append(slots[int(text)] if index % 2 else text)
    return engine_pieces(tuple(pieces))
