"""Scenario files (``pounder bench --scenario FILE``): the steps of logged-in virtual users, read
from TOML (:func:`read_scenario`) into a :class:`Scenario` and built into the engine's
pre-serialised templates with slots (:meth:`Scenario.engine_scenario`). docs/reference/scenarios.md
describes the format.

A value of ``[vars]`` is substituted when the file is read (it is text like any other); a variable
a step captures is a slot the engine fills per virtual user, encoded for where it stands
(traffic/_templates.py): in the path with what a path cannot hold percent-encoded, in the query and
a ``form`` body as a form value, inside a string of a ``json`` body as JSON, raw in a header (the
engine refuses a captured value with CR, LF or NUL there) and in a ``body`` text. Every mistake is
one :class:`~pounder.UsageError` naming the file, the step and the key, raised before anything is
sent."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pounder._errors import QUOTE_LIMIT, UsageError, check_path, clip, public, quoted
from pounder._files import SMALL_LIMIT, parse_toml, read_input
from pounder._native import load_engine
from pounder._units import parse_duration, plain
from pounder.traffic._parse import check_token, parse_header
from pounder.traffic._request import BODY_METHODS, POUNDER_HEADERS
from pounder.traffic._templates import (
    Encoding,
    Slot,
    Template,
    engine_pieces,
    form_text,
    head_pieces,
    joined,
    json_text,
    path_text,
    split_query,
)  # fmt: skip

if TYPE_CHECKING:
    from pounder._engine import EngineScenario, EngineStep

SCENARIO_LIMIT = SMALL_LIMIT
"""The largest scenario file read (1 MiB)."""
MAX_STEPS = 1000
MAX_THINK_S = 3600.0
_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SLOT_RE = re.compile(r"\{\{(.*?)\}\}", re.DOTALL)
_NAME_RULE = "letters, digits and _, not starting with a digit"
_STEP_KEYS = ("name", "method", "path", "headers", "form", "json", "body", "expect", "think", "capture")
_CAPTURE_KEYS = ("var", "header", "cookie", "body", "regex")
_TOP_KEYS = ("vars", "login", "loop")


@dataclass(frozen=True)
class Capture:
    """What a step takes from its response into the variable ``var`` (an index)."""

    var: int
    source: Literal["header", "cookie", "body"]
    name: str | None
    regex: str | None


@dataclass(frozen=True)
class ScenarioStep:
    """One request of a virtual user, as read (the Host and pounder's headers are added when it is
    built for a URL)."""

    name: str
    part: Literal["login", "loop"]
    method: str
    target: Template
    """The request target (path and query), percent-encoded."""
    headers: tuple[tuple[str, Template], ...]
    body: Template | None
    content_type: str | None
    """From ``form`` or ``json``; a ``Content-Type`` in ``headers`` replaces it."""
    expect: tuple[int, ...] | None
    think_s: float
    captures: tuple[Capture, ...]


@public
@dataclass(frozen=True)
class Scenario:
    """A scenario file read and checked (:func:`read_scenario`): the login steps (run once per
    virtual user) then the loop steps; ``variables`` are the names the steps capture."""

    path: str
    variables: tuple[str, ...]
    steps: tuple[ScenarioStep, ...]
    login: int

    @property
    def loop(self) -> int:
        return len(self.steps) - self.login

    def describe(self) -> str:
        """``"scenario.toml: 2 login steps, 1 loop step"``."""

        def steps(count: int, part: str) -> str:
            return f"{count} {part} step{'s' * (count != 1)}"

        return f"{self.path}: {steps(self.login, 'login')}, {steps(self.loop, 'loop')}"

    def engine_scenario(
        self, host: str, *, keepalive: bool, headers: Sequence[tuple[str, str]] = (),
        generated: Sequence[tuple[str, str]] = (), target: int = 0,
    ) -> EngineScenario:  # fmt: skip
        """The engine's scenario for the server whose Host header is ``host``: each step's head is
        the request line, Host, User-Agent and Accept as bench sends them, ``headers`` (-H, given
        to every step; a step's own header of the same name replaces it), ``generated``
        (Authorization from -A), the body's Content-Type, ``Connection: close`` without
        keep-alive; no Cookie (the jar's) nor Content-Length (the engine adds both)."""
        return {
            "vars": list(self.variables),
            "login": self.login,
            "steps": [_engine_step(step, host, keepalive, headers, generated, target) for step in self.steps],
        }


def _engine_step(step: ScenarioStep, host: str, keepalive: bool, headers: Sequence[tuple[str, str]],
                 generated: Sequence[tuple[str, str]], target: int) -> EngineStep:  # fmt: skip
    if any(name.lower() == "cookie" for name, _ in headers):
        raise UsageError("-H 'Cookie: ...' cannot go with --scenario: each virtual user's cookie jar sends the cookies")
    head = head_pieces(step.method, step.target, step.headers, host, keepalive=keepalive, headers=headers,
                       generated=generated, content_type=step.content_type)  # fmt: skip
    return {
        "name": step.name,
        "target": target,
        "head": head,
        "body": None if step.body is None else engine_pieces(step.body),
        "is_head": step.method == "HEAD",
        "expect": None if step.expect is None else list(step.expect),
        "think_s": step.think_s,
        "captures": [{"var": c.var, "from": c.source, "name": c.name, "regex": c.regex} for c in step.captures],
    }


# ---------------------------------------------------------------------------------------------
# Reading


class _Reader:
    """Reads one file: its static variables, the variables captured so far, and the error words
    (the file, the step, the key)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.static: dict[str, str] = {}
        self.captured: dict[str, int] = {}
        """Every variable some step captures, by name → index."""
        self.available: set[str] = set()
        """The variables captured by the steps before the one being read."""
        self.first_capture: dict[str, str] = {}
        self.where = ""

    def fail(self, key: str, message: str) -> UsageError:
        where = f"{self.where}: " if self.where else ""
        return UsageError(f"{self.path}: {where}{key + ': ' if key else ''}{message}")

    def template(self, text: str, key: str, enc: Encoding, quote_text: Callable[[str], str],
                 quote_value: Callable[[str], str] | None = None) -> Template:  # fmt: skip
        """``text`` with ``{{name}}`` read: the text around is encoded by ``quote_text``, a static
        variable's value by ``quote_value`` (default ``quote_text``); a captured variable is a
        slot. ``{{`` always opens a variable."""
        parts: list[str | Slot] = []
        position = 0
        for match in [*_SLOT_RE.finditer(text), None]:
            around = text[position : len(text) if match is None else match.start()]
            if "{{" in around:
                raise self.fail(key, "an unclosed {{: a variable is {{name}} ({{ always opens one)")
            parts.append(quote_text(around))
            if match is None:
                break
            position = match.end()
            name = match[1].strip()
            if not _NAME_RE.fullmatch(name):
                raise self.fail(key, f"invalid variable {quoted(match[0])}: a name is {_NAME_RULE}, e.g. {{{{csrf}}}}")
            if name in self.static:
                parts.append((quote_value or quote_text)(self.static[name]))
            elif name in self.available:
                parts.append(Slot(self.captured[name], enc))
            elif name in self.captured:
                raise self.fail(
                    key,
                    f"{{{{{name}}}}} is used before any step captures it (the first to capture it "
                    f"is {self.first_capture[name]})",
                )
            else:
                raise self.fail(
                    key, f"unknown variable {{{{{name}}}}}: define it in [vars] or capture it in an earlier step"
                )
        return joined(parts)


def _as_text(value: object) -> str | None:
    """A TOML scalar as text (a string, a number, true/false); None for anything else."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float)):
        return plain(value) if isinstance(value, float) else str(value)
    return None


def _parse_toml(path: Path) -> dict[str, Any]:
    raw = read_input(path, "scenario file", limit=SCENARIO_LIMIT, directory="scenario file {path} is a directory")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise UsageError(f"{path}: not UTF-8 text") from None
    return parse_toml(text, path, "a scenario file")


@public
def read_scenario(path: str | Path) -> Scenario:
    """Read and check a scenario file (TOML, see docs/reference/scenarios.md): ``[vars]``, ``[[login]]``
    steps run once per virtual user, ``[[loop]]`` steps repeated. :class:`~pounder.UsageError`
    with one line naming the file, the step and the key."""
    path = Path(check_path(path, "scenario"))
    data = _parse_toml(path)
    r = _Reader(str(path))
    unknown = sorted(set(data) - set(_TOP_KEYS))
    if unknown:
        raise r.fail(unknown[0], f"unknown key (a scenario file has {', '.join(_TOP_KEYS)})")
    static = data.get("vars", {})
    if not isinstance(static, dict):
        raise r.fail("vars", 'must be a table of name = value, e.g. [vars] user = "admin"')
    for name, value in static.items():
        text = _as_text(value)
        if not _NAME_RE.fullmatch(name):
            raise r.fail(f"vars.{name}", f"a variable's name is {_NAME_RULE}")
        if text is None:
            raise r.fail(f"vars.{name}", "must be text, a number or true/false")
        r.static[name] = text
    parts = [("login", _tables(r, data, "login")), ("loop", _tables(r, data, "loop"))]
    if not parts[1][1]:
        raise r.fail("", "no [[loop]] step: a virtual user repeats the loop steps (give at least one)")
    if len(parts[0][1]) + len(parts[1][1]) > MAX_STEPS:
        raise r.fail("", f"more than {MAX_STEPS} steps")
    _find_captures(r, parts)
    steps: list[ScenarioStep] = []
    names: dict[str, str] = {}
    for part, tables in parts:
        for number, table in enumerate(tables, 1):
            r.where = f"{part} step {number}"
            step = _step(r, table, part)  # type: ignore[arg-type]
            if step.name in names:
                raise r.fail(
                    "name", f"{quoted(step.name)} is also the name of {names[step.name]}: give each step its own name"
                )
            names[step.name] = r.where
            steps.append(step)
            taken = {capture.var for capture in step.captures}
            r.available.update(name for name, index in r.captured.items() if index in taken)
    return Scenario(path=str(path), variables=tuple(r.captured), steps=tuple(steps), login=len(parts[0][1]))


def _tables(r: _Reader, data: Mapping[str, Any], part: str) -> list[dict[str, Any]]:
    tables = data.get(part, [])
    if not isinstance(tables, list) or not all(isinstance(table, dict) for table in tables):
        raise r.fail(part, f"must be steps, each a [[{part}]] table")
    return tables


def _find_captures(r: _Reader, parts: Sequence[tuple[str, list[dict[str, Any]]]]) -> None:
    """Every variable some step captures, first (so that an early use is told from a typo)."""
    for part, tables in parts:
        for number, table in enumerate(tables, 1):
            captures = table.get("capture", [])
            for item in captures if isinstance(captures, list) else []:
                name = item.get("var") if isinstance(item, dict) else None
                if isinstance(name, str) and _NAME_RE.fullmatch(name) and name not in r.static:
                    r.first_capture.setdefault(name, f"{part} step {number}")
                    r.captured.setdefault(name, len(r.captured))


def _step(r: _Reader, table: Mapping[str, Any], part: Literal["login", "loop"]) -> ScenarioStep:
    unknown = sorted(set(table) - set(_STEP_KEYS))
    if unknown:
        raise r.fail(unknown[0], f"unknown key (a step has {', '.join(_STEP_KEYS)})")
    path = table.get("path")
    if path is None:
        raise r.fail("path", "needed: the path (and query) under the URL, starting with /, e.g. /admin/login/")
    if not isinstance(path, str) or not path.startswith("/"):
        raise r.fail("path", "must start with / (the path and query under the URL, e.g. /admin/login/), got "
                     f"{quoted(path)}")
    name = table.get("name", None)
    if name is not None and (not isinstance(name, str) or not name.strip() or len(name) > 100):
        raise r.fail("name", "must be text of 1 to 100 characters")
    if name is not None and "{{" in name:
        raise r.fail("name", "a step's name is plain text (no {{variable}})")
    bodies = [key for key in ("form", "json", "body") if key in table]
    if len(bodies) > 1:
        raise r.fail(bodies[1], f"a step has one body: {bodies[0]} or {bodies[1]}, not both")
    method = table.get("method", "POST" if bodies else "GET")
    if not isinstance(method, str):
        raise r.fail("method", 'must be text, e.g. "POST"')
    method = _checked(r, "method", lambda: check_token(method.upper(), "method"))
    if method == "HEAD" and bodies:
        raise r.fail(bodies[0], "a HEAD request cannot have a body")
    before, query = split_query(path.split("#", 1)[0])
    target = joined([*r.template(before, "path", "path", path_text), *r.template(query, "path", "form", path_text,
                                                                                   form_text)])  # fmt: skip
    body, content_type = _body(r, table, bodies[0] if bodies else None)
    if body is None and method in BODY_METHODS:
        body = ()  # sent with Content-Length: 0
    return ScenarioStep(
        name=name or f"{method} {clip(path, QUOTE_LIMIT - len(method) - 1)}", part=part, method=method,
        target=target, headers=_headers(r, table),
        body=body, content_type=content_type, expect=_expect(r, table.get("expect")),
        think_s=_think(r, table.get("think")), captures=_captures(r, table.get("capture", [])),
    )  # fmt: skip


def _checked(r: _Reader, key: str, check: Any) -> Any:
    """``check()``, its :class:`~pounder.UsageError` said with the file, the step and ``key``."""
    try:
        return check()
    except UsageError as error:
        raise r.fail(key, str(error)) from None


def _headers(r: _Reader, table: Mapping[str, Any]) -> tuple[tuple[str, Template], ...]:
    headers = table.get("headers", {})
    if not isinstance(headers, dict):
        raise r.fail("headers", 'must be a table, e.g. headers = { Referer = "http://127.0.0.1:8000/" }')
    pairs = []
    for name, value in headers.items():
        key = f"headers.{name}"
        text = _as_text(value)
        if text is None:
            raise r.fail(key, "must be text")
        _checked(r, key, lambda: parse_header(f"{name}: {text}", "header"))  # noqa: B023
        lower = name.lower()
        if lower == "cookie":
            raise r.fail(
                key, "the virtual user's cookie jar sends the cookies: capture them or let Set-Cookie set them"
            )
        if lower in POUNDER_HEADERS:
            raise r.fail(key, f"not allowed: pounder sets {name} itself")
        value = r.template(text.strip(), key, "raw", str)
        if any(isinstance(part, str) and any(c in part for c in "\r\n\0") for part in value):
            raise r.fail(key, "holds a CR, LF or NUL (from a [vars] value): a header value is one line")
        pairs.append((name, value))
    return tuple(pairs)


def _body(r: _Reader, table: Mapping[str, Any], kind: str | None) -> tuple[Template | None, str | None]:
    """The body's template and its Content-Type."""
    if kind is None:
        return None, None
    value = table[kind]
    if kind == "body":
        if not isinstance(value, str):
            raise r.fail("body", "must be text (for a form or JSON give form = {...} or json = {...})")
        return r.template(value, "body", "raw", str), None
    if kind == "json" and not isinstance(value, (dict, list)):
        raise r.fail("json", 'must be a table or a list, e.g. json = { user = "admin" }')
    if kind == "form":
        if not isinstance(value, dict):
            raise r.fail("form", 'must be a table of fields, e.g. form = { username = "admin" }')
        parts: list[str | Slot] = []
        for field, item in value.items():
            for one in item if isinstance(item, list) else [item]:
                text = _as_text(one)
                if text is None:
                    raise r.fail(f"form.{field}", "must be text, a number, true/false or a list of them")
                if parts:
                    parts.append("&")
                parts += [
                    *r.template(field, f"form.{field}", "form", form_text),
                    "=",
                    *r.template(text, f"form.{field}", "form", form_text),
                ]
        return joined(parts), "application/x-www-form-urlencoded"
    return joined(_json(r, value, "json")), "application/json"


def _json(r: _Reader, value: object, key: str) -> list[str | Slot]:
    """The JSON text of ``value`` with the variables of its strings (keys too) as slots."""
    if isinstance(value, str):
        return ['"', *r.template(value, key, "json", json_text), '"']
    if isinstance(value, dict):
        parts: list[str | Slot] = ["{"]
        for index, (name, item) in enumerate(value.items()):
            parts += [*([","] if index else []), *_json(r, name, key), ":", *_json(r, item, f"{key}.{name}")]
        return [*parts, "}"]
    if isinstance(value, list):
        parts = ["["]
        for index, item in enumerate(value):
            parts += [*([","] if index else []), *_json(r, item, f"{key}[{index}]")]
        return [*parts, "]"]
    if isinstance(value, bool) or isinstance(value, int) or (isinstance(value, float) and math.isfinite(value)):
        return [json.dumps(value)]
    raise r.fail(key, f"{type(value).__name__} has no JSON form: use text, numbers, true/false, lists and tables")


def _expect(r: _Reader, value: object) -> tuple[int, ...] | None:
    if value is None:
        return None
    codes = value if isinstance(value, list) else [value]
    if not codes or not all(
        isinstance(code, int) and not isinstance(code, bool) and 100 <= code <= 599 for code in codes
    ):
        raise r.fail("expect", "must be statuses from 100 to 599, e.g. expect = [200] or [301, 302], got "
                     f"{clip(repr(value))}")
    return tuple(dict.fromkeys(codes))


def _think(r: _Reader, value: object) -> float:
    if value is None:
        return 0.0
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise r.fail("think", f'must be a time such as "500ms" or "2s", got {clip(repr(value))}')
    seconds = _checked(r, "think", lambda: parse_duration(value, "think")) if isinstance(value, str) else value
    if not 0 <= seconds <= MAX_THINK_S:
        raise r.fail("think", f"must be between 0 and 1h, got {clip(repr(value))}")
    return float(seconds)


def _captures(r: _Reader, value: object) -> tuple[Capture, ...]:
    if not isinstance(value, list):
        raise r.fail("capture", 'must be a list, e.g. capture = [{ var = "sid", cookie = "sessionid" }]')
    captures = []
    for index, item in enumerate(value):
        key = f"capture[{index}]"
        if not isinstance(item, dict):
            raise r.fail(key, 'must be a table, e.g. { var = "sid", cookie = "sessionid" }')
        unknown = sorted(set(item) - set(_CAPTURE_KEYS))
        if unknown:
            raise r.fail(f"{key}.{unknown[0]}", f"unknown key (a capture has {', '.join(_CAPTURE_KEYS)})")
        name = item.get("var")
        if name is None:
            raise r.fail(f"{key}.var", f"needed: the variable's name ({_NAME_RULE})")
        if not isinstance(name, str) or not _NAME_RE.fullmatch(name):
            raise r.fail(f"{key}.var", f"a variable's name is {_NAME_RULE}, got {clip(repr(name))}")
        if name in r.static:
            raise r.fail(f"{key}.var", f"{quoted(name)} is a [vars] value: a captured variable needs a name of its own")
        sources = [source for source in ("header", "cookie", "body") if source in item]
        if not sources:
            raise r.fail(key, "needs one of header = NAME, cookie = NAME or body = 'REGEX'")
        if len(sources) > 1:
            raise r.fail(key, f"only one of header, cookie or body: {sources[0]} or {sources[1]}, not both")
        source = sources[0]
        if source == "body" and "regex" in item:
            raise r.fail(f"{key}.regex", "the body's regex is body = '...' itself")
        text = item[source]
        if not isinstance(text, str) or not text:
            raise r.fail(f"{key}.{source}", "must be text" + (" (a regex)" if source == "body" else " (a name)"))
        regex = text if source == "body" else item.get("regex")
        if regex is not None:
            _check_regex(r, f"{key}.{'body' if source == 'body' else 'regex'}", regex)
        captures.append(
            Capture(
                var=r.captured[name],
                source=source,  # type: ignore[arg-type]
                name=None if source == "body" else text,
                regex=regex,
            )
        )
    return tuple(captures)


def _check_regex(r: _Reader, key: str, regex: object) -> None:
    """Compiled by the engine's own regex crate (Rust syntax: no lookaround, backreferences, ...)."""
    if not isinstance(regex, str) or not regex:
        raise r.fail(key, "must be a regular expression (text)")
    try:
        groups: int = load_engine().regex_groups(regex)
    except ValueError as error:
        raise r.fail(key, f"invalid regular expression (the engine's Rust syntax): {error}") from None
    if groups != 1:
        raise r.fail(
            key,
            f"the regular expression must have exactly one group (...), the value taken; it has "
            f"{groups} (use (?:...) for the others)",
        )
