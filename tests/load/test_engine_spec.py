"""The engine reads the spec dict strictly (crates/engine/src/spec/dict.rs): every key pounder sends is
one it knows, and a key it does not know (a misspelt one, nested ones too) is a ValueError naming it,
not a default. ``choose_io`` reads the spec as ``start`` does, without sending anything."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pounder import BenchSpec, _engine

URL = "http://127.0.0.1:8080/"
SCENARIO = """
[[login]]
name = "form"
path = "/login/"
capture = [{ var = "csrf", body = 'value="([^"]+)"' }]

[[loop]]
name = "index"
path = "/?t={{csrf}}"
think = "250ms"
"""


def read(spec: Any) -> str:
    """The engine's reading of ``spec`` (on epoll: no kernel probe): its I/O path."""
    given: Any = {**spec, "io": "epoll"}  # not an EngineSpec: misspelt keys, wrong types
    path, _ = _engine.choose_io(given)
    return path


def test_every_key_pounder_sends_is_one_the_engine_reads(tmp_path: Path) -> None:
    scenario = tmp_path / "s.toml"
    scenario.write_text(SCENARIO)
    specs = [
        BenchSpec.from_options(URL, requests=10, warmup="2", rate="100", tsv_path=tmp_path / "a.tsv"),
        BenchSpec.from_options("https://127.0.0.1:8443/", duration="1s", insecure=True, tls_resume=False),
        BenchSpec.from_options(URL, scenario=str(scenario), requests=10, connections=2),
    ]
    for spec in specs:
        assert read(spec.engine_spec()) == "epoll"
        assert read(spec.share_spec(1, 2, start_at_unix_us=1)) == "epoll"


def test_a_misspelt_key_is_refused_naming_it() -> None:
    spec = BenchSpec.from_options(URL, requests=10).engine_spec()
    with pytest.raises(ValueError, match=r"^spec: threds: unknown field `threds`, expected one of `targets`"):
        read({**spec, "threds": 2})
    target = {**spec["targets"][0], "wieght": 2}
    with pytest.raises(ValueError, match=r"^spec: targets\[0\]\.wieght: unknown field `wieght`"):
        read({**spec, "targets": [target]})
    tls: Any = {"insecure": True, "ca_pem": None, "cert_pem": None, "key_pem": None, "resumption": False}
    with pytest.raises(ValueError, match=r"^tls: resumption: unknown field `resumption`"):
        _engine.tls_probe("127.0.0.1:1", "localhost", tls, 1.0)


def test_a_value_of_the_wrong_type_names_its_key_and_none_is_the_default(tmp_path: Path) -> None:
    spec = BenchSpec.from_options(URL, requests=10).engine_spec()
    with pytest.raises(ValueError, match=r"^spec: keepalive: invalid type: integer `1`, expected a bool"):
        read({**spec, "keepalive": 1})
    with pytest.raises(ValueError, match=r"^spec: connections: "):
        read({**spec, "connections": "4"})
    with pytest.raises(ValueError, match=r"^spec: tsv_path: "):
        read({**spec, "tsv_path": 3})
    with pytest.raises(ValueError, match=r"^spec: connections is required$"):
        read({**spec, "connections": None})
    # a path may be os.PathLike, as the stub says; None is missing: the default
    assert read({**spec, "tsv_path": tmp_path / "a.tsv", "threads": None, "keepalive": None}) == "epoll"
