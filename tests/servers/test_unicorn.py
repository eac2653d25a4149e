"""Unicorn serving tests/apps/rack_app.ru (pounder.servers.UnicornServer): its configuration and command
line; what it keeps in common with the other servers is tests/servers/test_contract.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pounder import UsageError
from pounder.servers import UnicornSettings, render_unicorn_config
from pounder.servers._unicorn import unicorn_command


def test_config_and_command_are_pure() -> None:
    settings = UnicornSettings(workers=3, preload_app=True, extra_args=("-N",))
    text = render_unicorn_config(settings, port=8123, host="127.0.0.1", pidfile="/w/run/unicorn.pid",
                                 stderr_path="/w/logs/error.log", stdout_path="/w/logs/access.log")
    assert text.splitlines() == [
        'listen "127.0.0.1:8123", backlog: 1024', "worker_processes 3", "preload_app true", "timeout 60",
        'pid "/w/run/unicorn.pid"', 'stderr_path "/w/logs/error.log"', 'stdout_path "/w/logs/access.log"']
    assert render_unicorn_config(UnicornSettings(workers=1), port=None).splitlines() == [
        "worker_processes 1", "preload_app false", "timeout 60"]
    assert unicorn_command(settings, config=Path("/w/unicorn.conf.rb"), rackup=Path("/app/config.ru")) == [
        "unicorn", "-E", "production", "-c", "/w/unicorn.conf.rb", "-N", "/app/config.ru"]


@pytest.mark.parametrize("bad", [{"workers": 0}, {"backlog": 0}, {"timeout_s": 2}])
def test_bad_settings_are_refused(bad: dict[str, Any]) -> None:
    with pytest.raises(UsageError, match="^unicorn: "):
        UnicornSettings(**bad).validate()
