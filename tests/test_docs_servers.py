"""The servers table of docs/guide/tune.md and docs/architecture.md is the adapters' own declaration
(``names``, ``target_form``, ``request_limit``): a server added or renamed
without its row fails here. Print the table with ``python tests/test_docs_servers.py``."""

from __future__ import annotations

from pathlib import Path

import pytest

from pounder.pool import ADAPTERS

ROOT = Path(__file__).resolve().parents[1]
COLUMNS = (("max_clients", "MaxClients"), ("max_requests", "MaxRequestsPerChild"), ("start_servers", "StartServers"),
           ("min_spare", "MinSpareServers"), ("max_spare", "MaxSpareServers"), ("preload", "preload"))


def _cell(name: str) -> str:
    return "—" if name == "-" else f"`{name}`"


def servers_table() -> str:
    """The markdown table of every server pounder starts, in its own names."""
    head = "| server (`pounder tune SERVER TARGET`) | TARGET | " + " | ".join(title for _, title in COLUMNS) + " |"
    rows = [head, "|" + "---|" * (len(COLUMNS) + 2)]
    for kind, adapter in ADAPTERS.items():
        names = adapter.names
        cells = [_cell(names.get(key, "-")) for key, _ in COLUMNS]
        if not adapter.request_limit:
            cells[1] = "none (a worker killer, see the advice)"
        rows.append(f"| {kind} | `{adapter.target_form}` | " + " | ".join(cells) + " |")
    return "\n".join(rows)


@pytest.mark.parametrize("doc", ["docs/guide/tune.md", "docs/architecture.md"])
def test_the_servers_table_is_the_adapters_declaration(doc: str) -> None:
    text = (ROOT / doc).read_text()
    assert servers_table() in text, f"{doc}: the servers table differs from the adapters; put in:\n{servers_table()}"


if __name__ == "__main__":
    print(servers_table())
