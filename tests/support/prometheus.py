"""A real Prometheus (Debian's ``prometheus``) for the tests of ``--metrics-out`` and ``pounder top
--prometheus``: started on a free loopback port with its remote-write receiver on (and scraping a
target when given one) and its data in a directory of the test's, asked back through its HTTP API,
stopped (also when a test fails). Never the distribution's service."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

from support.nginx import free_port

READY_TIMEOUT_S = 30.0
DOCS = Path(__file__).resolve().parents[2] / "docs"


def dashboard_queries() -> list[str]:
    """Every PromQL expression of docs/grafana/pounder.json (its panels' and its variables')."""
    dashboard = json.loads((DOCS / "grafana" / "pounder.json").read_text())
    queries = [target["expr"] for panel in dashboard["panels"] for target in panel["targets"]]
    variables = dashboard["templating"]["list"]
    return queries + [variable["definition"] for variable in variables if "definition" in variable]


def prometheus_binary() -> str | None:
    return shutil.which("prometheus", path="/usr/bin:/usr/local/bin:/bin")


class Prometheus:
    """``prometheus --web.enable-remote-write-receiver`` on 127.0.0.1 (see the module); with
    ``scrape``, a ``HOST:PORT`` it scrapes twice a second (job ``pounder_top``)."""

    def __init__(self, root: Path, scrape: str | None = None) -> None:
        self.root, self.scrape = root, scrape
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def write_url(self) -> str:
        """What ``--metrics-out`` takes to write to it."""
        return f"prometheus+http://127.0.0.1:{self.port}/api/v1/write"

    def start(self) -> Prometheus:
        binary = prometheus_binary()
        assert binary is not None, "prometheus is not installed"
        self.root.mkdir(parents=True, exist_ok=True)
        config = self.root / "prometheus.yml"
        if self.scrape is None:
            config.write_text("global:\n  scrape_interval: 1m\n")  # nothing scraped: only what is written to it
        else:
            config.write_text(json.dumps({  # JSON is YAML
                "global": {"scrape_interval": "500ms", "scrape_timeout": "400ms"},
                "scrape_configs": [{"job_name": "pounder_top", "static_configs": [{"targets": [self.scrape]}]}],
            }))
        with open(self.root / "prometheus.log", "wb") as log:
            self.proc = subprocess.Popen(
                [binary, f"--config.file={config}", f"--storage.tsdb.path={self.root / 'data'}",
                 f"--web.listen-address=127.0.0.1:{self.port}", "--web.enable-remote-write-receiver"],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)  # fmt: skip
        deadline = time.monotonic() + READY_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"prometheus exited: {(self.root / 'prometheus.log').read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/-/ready", timeout=1) as answer:
                    if answer.status == 200:
                        return self
            except OSError:
                time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"prometheus not ready within {READY_TIMEOUT_S} s")

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def query(self, promql: str, at: float) -> dict[str, Any]:
        """Prometheus's answer to an instant query (``label_values(...)``, Grafana's, as the series it reads)."""
        if promql.startswith("label_values("):
            promql = promql[len("label_values("):].rsplit(",", 1)[0]
        query = urllib.parse.urlencode({"query": promql, "time": f"{at:.3f}"})
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/api/v1/query?{query}", timeout=10) as answer:
            document: dict[str, Any] = json.load(answer)
        return document

    def samples(self, selector: str) -> dict[tuple[tuple[str, str], ...], list[tuple[float, float]]]:
        """Every sample written of the series ``selector`` selects (the last hour), by their labels
        (``__name__`` left out): [(time, value), ...] in time order."""
        query = urllib.parse.urlencode({"query": f"{selector}[1h]", "time": f"{time.time() + 60:.3f}"})
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/api/v1/query?{query}", timeout=10) as answer:
            document: dict[str, Any] = json.load(answer)
        assert document["status"] == "success", document
        found = {}
        for series in document["data"]["result"]:
            labels = tuple(sorted((k, v) for k, v in series["metric"].items() if k != "__name__"))
            found[labels] = [(float(t), float(v)) for t, v in series["values"]]
        return found
