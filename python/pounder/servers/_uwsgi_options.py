"""The options a uWSGI binary knows, and those of a user's ini it does not: uWSGI ignores an option it
does not know without a word (a misspelt ``proccesses = 8`` runs with one process), so pounder says
so, as a warning (the server runs as uWSGI would run it).

The options are what ``uwsgi --help`` lists with the plugins the ini loads (and the python3 plugin
pounder loads): read once per binary and plugin set. A key the ini uses as a placeholder
(``%(name)`` elsewhere in the file) or declares (``declare-option``, ``set-placeholder``...) is
its own, not a mistake."""

from __future__ import annotations

import functools
import os
import re
import subprocess
from pathlib import Path

from pounder._errors import public
from pounder._units import count_text
from pounder.servers._uwsgi import INI_SECTION, PLUGIN, _ini_key, _sections, find_plugin, find_uwsgi

MAX_WARNINGS = 5
"""At most this many options named, then how many more."""
_HELP_LINE = re.compile(r"^\s+(?:-\S\|)?--(?P<name>[A-Za-z0-9][A-Za-z0-9_.-]*)\s")
_PLACEHOLDER = re.compile(r"%\((?P<name>[^)]+)\)")
_DECLARING = frozenset({"declare-option", "declare-option2", "set-placeholder", "set-ph", "set-option-placeholder",
                        "set-opt-placeholder"})
_LOADING = frozenset({"plugin", "plugins", "need-plugin", "need-plugins"})


@functools.lru_cache(maxsize=16)
def _known(binary: str, plugins: tuple[str, ...]) -> frozenset[str] | None:
    """The options ``uwsgi --plugin P,... --help`` lists (None: it cannot be asked)."""
    argv = [binary] + (["--plugin", ",".join(plugins)] if plugins else []) + ["--help"]
    try:
        done = subprocess.run(argv, capture_output=True, timeout=10, check=False, stdin=subprocess.DEVNULL,
                              env={"PATH": os.defpath})
    except (OSError, subprocess.SubprocessError):
        return None
    names = {match["name"] for line in done.stdout.decode(errors="replace").splitlines()
             if (match := _HELP_LINE.match(line))}
    return frozenset(names) if len(names) > 100 else None  # a help without its options: cannot tell


@public
def uwsgi_unknown_options(path: str | os.PathLike[str], text: str, binary: str | None = None) -> list[str]:
    """One warning per option of the ini ``text`` (the file ``path``; its ``[uwsgi]`` section, the
    one uWSGI reads) that the uWSGI ``binary`` does not know, with the plugins the ini loads:
    ``x.ini: line N: uwsgi does not know option 'foo' (it ignores it)``; at most
    :data:`MAX_WARNINGS`, then how many more. Empty when every option is known, or when uWSGI
    cannot be asked."""
    binary = binary or find_uwsgi()
    if binary is None:
        return []
    lines = [(number, section, _ini_key(line), line) for number, (section, line) in enumerate(_sections(text), 1)]
    keys = [(number, key, line) for number, section, key, line in lines if section == INI_SECTION and key]
    plugins = {PLUGIN} if find_plugin() is not None else set()
    own = {match["name"] for match in _PLACEHOLDER.finditer(text)}
    for _, key, line in keys:
        value = line.partition("=")[2].strip()
        if key in _LOADING:
            plugins.update(word.strip() for word in value.split(",") if re.fullmatch(r"[\w.-]+", word.strip()))
        elif key in _DECLARING:
            own.add(value.partition("=")[0].strip())
    known = _known(binary, tuple(sorted(plugins)))
    if known is None:
        return []
    unknown = [(number, key) for number, key, _ in keys if key not in known and key not in own]
    name = Path(path)
    said = [f"{name}: line {number}: uwsgi does not know option {key!r} (it ignores it)"
            for number, key in unknown[:MAX_WARNINGS]]
    if len(unknown) > MAX_WARNINGS:
        more = count_text(len(unknown) - MAX_WARNINGS, "more option", "more options")
        said.append(f"{name}: {more} uwsgi does not know (it ignores them)")
    return said
