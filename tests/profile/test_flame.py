"""The flame graph of a profile (inferno, in the native engine): a synthetic profile's SVG opens in
headless Chromium without console messages, names every function and is the same every time."""

from __future__ import annotations

from pathlib import Path

import pytest

from pounder import _engine
from pounder.profile import flame_svg
from support.chromium import CHROMIUM, console_messages, rendered_dom, run_chromium

STACKS = {
    "main;handle_request;render_page;hot_loop": 800,
    "main;handle_request;render_page;escape_html": 120,
    "main;handle_request;read_body": 60,
    "main;accept_wait": 20,
}
chromium = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)")


@chromium
def test_the_svg_opens_in_chromium_and_names_every_function(tmp_path: Path) -> None:
    svg = flame_svg(STACKS, title="php-fpm (pid 42): http://127.0.0.1:1/", unit="samples")
    page = tmp_path / "flame.svg"
    page.write_text(svg)
    dom = rendered_dom(page)
    for name in ("main", "handle_request", "render_page", "hot_loop", "escape_html", "read_body", "accept_wait"):
        assert name in dom, name
    assert "php-fpm (pid 42)" in dom
    # hot_loop's frame title carries its weight and share of the 1,000 samples
    assert "hot_loop (800 samples, 80.00%)" in dom


@chromium
def test_a_console_error_in_an_svg_would_be_seen(tmp_path: Path) -> None:
    page = tmp_path / "broken.svg"
    page.write_text(
        '<svg xmlns="http://www.w3.org/2000/svg"><script>console.error("pounder-check");nothing();</script></svg>'
    )
    messages = console_messages(run_chromium(page, "--dump-dom").stderr)
    assert any("pounder-check" in line for line in messages), messages


def test_the_same_profile_gives_the_same_svg_and_ns_are_named() -> None:
    assert flame_svg(STACKS, title="t", unit="samples") == flame_svg(dict(reversed(STACKS.items())), title="t",
                                                                     unit="samples")  # fmt: skip
    assert " ns" in flame_svg({"a;b": 1_000_000}, title="t", unit="ns")


def test_bad_input_is_one_line() -> None:
    with pytest.raises(ValueError, match="nothing was sampled"):
        flame_svg({}, title="t", unit="samples")
    with pytest.raises(ValueError, match="unit must be one of"):
        flame_svg(STACKS, title="t", unit="ms")
    with pytest.raises(ValueError, match="line 2 is not"):
        _engine.flamegraph_svg("a;b 1\na;c\n", "t", "samples")


def test_collapse_perf_keeps_the_pid_in_the_root() -> None:
    script = (
        "php-fpm8.2 4242/4242 100.000001: cpu-clock:ppp: \n\t 1 zend_hot (/usr/sbin/php-fpm8.2)\n"
        "\t 2 execute_ex (/usr/sbin/php-fpm8.2)\n\n"
        "php-fpm8.2 4243/4243 100.000002: cpu-clock:ppp: \n\t 1 zend_hot (/usr/sbin/php-fpm8.2)\n\n"
    )
    assert _engine.collapse_perf(script).splitlines() == ["php-fpm8.2-4242;execute_ex;zend_hot 1",
                                                          "php-fpm8.2-4243;zend_hot 1"]  # fmt: skip
