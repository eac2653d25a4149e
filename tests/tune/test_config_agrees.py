"""The configuration ``pounder tune`` prints never contradicts the advice printed above it (issue 39):
``pounder tune puma --quick`` printed ``preload_app! false`` beside "Remedy: add preload_app! to
puma.rb". Checked on every recorded run in tests/data (decided again, no server started; the
tune-puma run is Puma without preloading, 64 MB built at load in every worker), and on each
adapter's rendering of a pool measured without preloading."""

from __future__ import annotations

from pathlib import Path

import pytest

from pounder.pool import ADAPTERS, PoolParams, make_adapter
from pounder.servers import apache_missing, phpfpm_missing, puma_missing
from support.recorded import DATA, decided_again

RECORDED = sorted(path.name for path in DATA.glob("tune-*") if (path / "tune.json").is_file())
APPS = Path(__file__).resolve().parents[1] / "apps"
NOTE = "the advice recommends it"
OFF = {"puma": "preload_app! false", "unicorn": "preload_app false", "uwsgi": "lazy-apps = true"}
"""The line that sets preloading off in each server's configuration, where it has one."""


def _sections(text: str) -> tuple[str, str]:
    """(the Advice section, the Configuration section) of a tune text."""
    advice = text.split("\nAdvice\n", 1)[1].split("\nConfiguration (", 1)[0] if "\nAdvice\n" in text else ""
    return advice, text.split("\nConfiguration (", 1)[1]


def _recommends_preload(advice: str, remedy: str) -> bool:
    flat = " ".join(advice.split())
    return bool(remedy) and remedy in flat or "- turn it on" in flat


@pytest.mark.parametrize("name", RECORDED)
def test_the_configuration_never_contradicts_the_advice(tmp_path: Path, name: str) -> None:
    if name == "tune-apache" and apache_missing(perl=True):
        pytest.skip(str(apache_missing(perl=True)))
    if name == "tune-phpfpm-leak" and phpfpm_missing():
        pytest.skip(str(phpfpm_missing()))
    if name == "tune-puma" and puma_missing():
        pytest.skip(str(puma_missing()))
    data, text = decided_again(name, tmp_path)
    kind = data["server"]["kind"]
    advice, config = _sections(text)
    recommends = _recommends_preload(advice, ADAPTERS[kind].preload_remedy)
    lines = [line.strip() for line in config.splitlines()]
    if recommends:  # the setting as measured, with a comment pointing at the advice, above its line
        assert NOTE in config, config
        if kind in OFF:
            at = lines.index(OFF[kind])
            assert NOTE in lines[at - 2], lines[at - 2: at + 1]
    else:
        assert NOTE not in config, config
    if name == "tune-puma":  # the run that showed it: the advice recommends preloading, measured without
        assert recommends and OFF["puma"] in lines, text


@pytest.mark.parametrize("kind", sorted(ADAPTERS))
def test_every_adapter_marks_a_setting_the_advice_would_change(tmp_path: Path, kind: str) -> None:
    """Each server's rendering of a pool measured without preloading: as measured (its off line
    kept) with the comment above it when the advice recommends preloading; unchanged when not, or
    when the pool preloads."""
    targets = {"apache": None, "gunicorn": "wsgi_app:app", "starman": APPS / "app.psgi",
               "php-fpm": APPS / "php" / "pool.conf", "puma": APPS / "rack_app.ru",
               "unicorn": APPS / "rack_app.ru", "uwsgi": "wsgi_app:app", "command": "srv {port}"}
    extra = ({"perl_handlers": {"/hello": "PounderTest::Hello"}} if kind == "apache" else
             {"root": APPS / "php"} if kind == "php-fpm" else
             {"pythonpath": str(APPS)} if kind in ("gunicorn", "uwsgi") else {})
    if kind == "uwsgi":
        extra["preload"] = False
    adapter = make_adapter(kind, targets[kind], check=False, **extra)  # type: ignore[arg-type]
    params = PoolParams(4, max_requests=1000, preload=False if adapter.preload_toggle else None)
    plain = adapter.render(params)
    assert adapter.render_advised(params, preload_advised=False) == plain
    advised = adapter.render_advised(params, preload_advised=True)
    if adapter.with_preload(params):
        assert advised == plain
        return
    assert NOTE in advised and all(line in advised.splitlines() for line in plain.splitlines())
    comment = "; " if kind == "php-fpm" else "# "
    assert all(line.startswith(comment) for line in advised.splitlines() if NOTE in line or "measure again" in line)
    if kind in OFF:
        lines = advised.splitlines()
        assert NOTE in lines[lines.index(OFF[kind]) - 2]
