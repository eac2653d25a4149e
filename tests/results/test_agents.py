"""The ``agents`` section of a bench result (``--ray``): its JSON against the schema, the round
trip, the report's per-agent lines and the warnings a reader needs. No cluster: the section is
built by hand (tests/e2e/test_bench_ray.py runs real agents)."""

from __future__ import annotations

import dataclasses
import json
import socket
from pathlib import Path
from typing import Any

import jsonschema
import pytest

import pounder
from pounder import BenchResult, BenchSpec, UsageError, render_report
from pounder.agents import Cluster
from pounder.agents._agent import Agent, machine_id, target_hosts
from pounder.results import AgentReport, Agents
from support.schemas import REGISTRY

DATA = Path(__file__).resolve().parents[1] / "data"
SCHEMA = json.loads((Path(pounder.__file__).parent / "schemas" / "bench-result.schema.json").read_text())


def _agent(index: int, **changes: Any) -> AgentReport:
    agent = AgentReport(
        index=index, host=f"node{index}", node_id=f"id{index}", node_ip=f"10.0.0.{index + 1}", pid=100 + index,
        connections=5, threads=2, offset_ms=0.4, clock_error_ms=0.2, began_ms=0.1 * index, complete=1000, failed=0,
        elapsed_s=10.0, client_cpu_s=0.5, cpu_busy=0.025, p50_us=2000, p90_us=3000, p99_us=5000, max_us=9000,
        lost=None,
    )  # fmt: skip
    return dataclasses.replace(agent, **changes)


def _result(agents: Agents) -> BenchResult:
    spec = BenchSpec.from_options("http://127.0.0.1:8080/", connections=10, duration="10s")
    return BenchResult.from_engine((DATA / "engine_result.json").read_text(), options=spec.run_options(),
                                   started_at="2026-01-01T00:00:00.000Z", interrupted=False, tool_version="0.1.0",
                                   agents=agents)  # fmt: skip


def _agents(*members: AgentReport, skew: float | None = 0.2) -> Agents:
    return Agents(address="10.0.0.1:6379", per_node=1, nodes=len(members), start_skew_ms=skew, members=members)


def test_the_section_is_written_to_the_schema_and_read_back() -> None:
    result = _result(_agents(_agent(0), _agent(1, lost="it died (ActorDiedError)", cpu_busy=None, p50_us=None,
                                              p90_us=None, p99_us=None, max_us=None, began_ms=None)))  # fmt: skip
    document = json.loads(result.to_json())
    jsonschema.Draft202012Validator(SCHEMA, registry=REGISTRY).validate(document)
    assert document["agents"]["members"][1]["lost"] == "it died (ActorDiedError)"
    assert BenchResult.from_json(result.to_json()) == result
    broken = {**document, "agents": {**document["agents"], "members": []}}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft202012Validator(SCHEMA, registry=REGISTRY).validate(broken)


def test_a_result_from_one_machine_has_no_agents_and_older_results_read() -> None:
    result = _result(_agents(_agent(0)))
    document = json.loads(result.to_json())
    document["schema"] = "pounder/bench-result/2"
    del document["agents"]
    assert BenchResult.from_json(json.dumps(document)).agents is None


def test_the_report_has_a_line_per_agent() -> None:
    text = render_report(_result(_agents(_agent(0), _agent(1))))
    assert "Agents (2 on 2 nodes of Ray cluster 10.0.0.1:6379, began within 0.2 ms; clocks to ±0.2 ms)" in text
    lines = [line for line in text.splitlines() if line.startswith(("0 node0", "1 node1"))]
    assert len(lines) == 2 and lines[0].split()[3:] == ["5", "1,000", "0", "2.000", "5.000", "2%"]
    assert "Warning" not in text


def test_warnings_say_what_the_figures_lack() -> None:
    agents = _agents(_agent(0, cpu_busy=0.97), _agent(1, lost="it answered nothing for 10 s", complete=400,
                                                      cpu_busy=None), skew=80.0)  # fmt: skip
    warnings = agents.warnings()
    assert agents.partial
    assert warnings[0].startswith("agent 1 (node1) was lost: it answered nothing for 10 s; its share is not in the "
                                  "figures (400 complete")  # fmt: skip
    assert "agent 0 (node0) used 97% of the CPU it could use" in warnings[1]
    assert "began 80.0 ms apart" in warnings[2]
    text = render_report(_result(agents))
    assert all(f"Warning: {warning}" in text for warning in warnings)
    assert "lost" in [line for line in text.splitlines() if line.startswith("1 node1")][0]


def test_a_lost_agent_keeps_the_seconds_it_reported_apart_from_the_totals() -> None:
    agents = _agents(_agent(0), _agent(1, lost="it died (ActorDiedError)", complete=812, failed=3, kept_seconds=2,
                                       cpu_busy=None, p50_us=5100, p99_us=7400))  # fmt: skip
    warning = agents.warnings()[0]
    assert "its share is not in the figures (812 complete, 3 failed in the 2 seconds it reported)" in warning
    line = [line for line in render_report(_result(agents)).splitlines() if line.startswith("1 node1")][0]
    assert line.split()[3:] == ["5", "(812)", "(3)", "(5.100)", "(7.400)", "lost"]  # all in parentheses
    document = json.loads(_result(agents).to_json())
    jsonschema.Draft202012Validator(SCHEMA, registry=REGISTRY).validate(document)
    assert [m["kept_seconds"] for m in document["agents"]["members"]] == [None, 2]
    assert BenchResult.from_json(_result(agents).to_json()).agents == agents
    del document["agents"]["members"][1]["kept_seconds"]  # a result of an older pounder
    assert BenchResult.from_json(json.dumps(document)).agents.members[1].kept_seconds is None  # type: ignore[union-attr]
    none = _agents(_agent(0, lost="it died (ActorDiedError)", complete=40, kept_seconds=0))
    assert "(40 complete, 0 failed when last heard)" in none.warnings()[0]


def test_cluster_options_are_checked() -> None:
    for args, message in (
        (("local", 0), "--agents must be between 1 and 1000"),
        (("local", None, 0), "--agents-per-node must be between 1 and 1000"),
        (("ray://10.0.0.1:10001",), "not a ray:// client address"),
        (("10.0.0.1",), "HOST:PORT"),
        (("10.0.0.1:99999",), "HOST:PORT"),
    ):
        with pytest.raises(UsageError, match=message):
            Cluster(*args)
    assert Cluster("auto").address == "auto" and Cluster("[::1]:6379", 2, 2).per_node == 2


def test_an_agent_on_another_machine_refuses_a_loopback_target(tmp_path: Path) -> None:
    """An agent elsewhere would load its own machine's 127.0.0.1 (or Unix socket), not the one
    the user named."""
    agent = Agent()
    spec = BenchSpec.from_options("http://127.0.0.1:1/", connections=2).share_spec(0, 1)
    assert "it would load its own machine" in (agent.check(spec, True, "elsewhere/0") or "")
    assert "cannot connect to 127.0.0.1:1" in (agent.check(spec, False, machine_id()) or "")
    assert agent.check(spec, False, machine_id(), probe=False) is None  # a host reached before: the rule only
    assert "it would load its own machine" in (agent.check(spec, True, "elsewhere/0", probe=False) or "")
    assert target_hosts(spec) == {"127.0.0.1"}
    remote = BenchSpec.from_options("http://10.9.9.9:1/", connections=2, allow_remote=True).share_spec(0, 1)
    assert "not on this machine's loopback" in (agent.check(remote, False, machine_id()) or "")
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(tmp_path / "s.sock"))
        unix = BenchSpec.from_options("http://x/", unix_socket=str(tmp_path / "s.sock")).share_spec(0, 1)
    assert "Unix socket, and this agent is on another machine" in (agent.check(unix, False, "elsewhere/0") or "")


def test_the_html_page_has_a_table_of_the_agents(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    from pounder.report import render_report as render_page

    path = tmp_path / "r.json"
    agents = _agents(_agent(0), _agent(1, lost="it died (ActorDiedError)", cpu_busy=None, p50_us=None, p90_us=None,
                                        p99_us=None, max_us=None, began_ms=None))  # fmt: skip
    path.write_text(_result(agents).to_json())
    page = render_page([str(path)])
    assert "Agents: r (2 on 2 nodes of Ray cluster 10.0.0.1:6379, began within 0.2 ms)" in page
    assert "it died (ActorDiedError)" in page and "was lost" in page


def test_without_t_the_threads_are_the_agents_own() -> None:
    assert BenchSpec.from_options("http://127.0.0.1:1/").auto_threads
    assert not BenchSpec.from_options("http://127.0.0.1:1/", threads=3).auto_threads


def test_an_agent_refuses_io_uring_where_it_cannot_be_taken() -> None:
    """The driver's check_io refuses --io uring for what the spec needs (HTTPS, a throttle) and for
    its own kernel; each agent asks its own kernel too, before anything starts."""
    agent = Agent()
    spec = BenchSpec.from_options("http://127.0.0.1:1/", connections=2, throttle="1MB/s", io="uring")
    problem = agent.check(spec.share_spec(0, 1), False, machine_id(), probe=False)
    assert problem == "--io uring: a throttled receive runs on the epoll path only on this agent's machine"
    auto = BenchSpec.from_options("http://127.0.0.1:1/", connections=2, throttle="1MB/s").share_spec(0, 1)
    assert agent.check(auto, False, machine_id(), probe=False) is None
