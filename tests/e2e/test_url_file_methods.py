"""A URL file line's own method, end to end (HEAD without a body to wait for)."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def test_url_file_line_methods_head_and_get(testserver: Any, run: Any, tmp_path: Path) -> None:
    """A HEAD line's response says Content-Length: 100000 and has no body: the engine must not
    wait for one (it would time out after 2 s); GET lines read the whole body."""
    srv = testserver(body_size=100_000)
    urls = tmp_path / "urls.txt"
    urls.write_text(f"HEAD {srv.url}/h\nGET {srv.url}/g\n{srv.url}/d\n")
    result = run(url_file=str(urls), requests=300, connections=3, threads=1, timeout="2s", method="HEAD")
    assert result.requests.failed == 0 and result.errors.nonzero() == {}
    assert srv.by_request() == {"HEAD /h": 100, "GET /g": 100, "HEAD /d": 100}
    assert result.bytes.body == 100 * 100_000
