"""The pure pieces of the HTTP bench: a series' figures, the medians of the rounds, the table and
the ratio figures, and the one request both servers get (its headers mirror its body)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from bench.bench_http import (
    CLIENTS,
    DBHUB,
    LEVELS,
    OURS,
    OURS_JWT,
    OURS_JWT_UNCACHED,
    Results,
    Sample,
    answer_line,
    call_request,
    client_figures,
    machine_note,
    median_sample,
    pinned_thread,
    ratio_figures,
    render_table,
    sample_of,
)
from bench.bench_peers import SMALL, WIDE
from bench.http_client import HttpResponse
from mcp_suite.protocol.http import check_mirrored_headers
from tests.support.wire import decoded


def sample(p50: float = 1.0, p99: float = 2.0, rate: float = 1_000, per_core: float = 1_500) -> Sample:
    return Sample(p50, p99, rate, per_core, client_us=40.0, client_busy=0.04)


def results(
    ours: Sample, peer: Sample, with_jwt: Sample | None = None, uncached: Sample | None = None
) -> Results:
    return {
        OURS: dict.fromkeys(LEVELS, ours),
        DBHUB: dict.fromkeys(LEVELS, peer),
        OURS_JWT: dict.fromkeys(LEVELS, with_jwt or ours),
        OURS_JWT_UNCACHED: dict.fromkeys(LEVELS, uncached or with_jwt or ours),
    }


def test_a_series_gives_its_percentiles_its_rates_and_what_the_client_cost() -> None:
    latencies = [float(n) for n in range(200, 0, -1)]  # 1..200 ms, unordered
    got = sample_of(latencies, wall_s=4.0, server_cpu_s=0.5, client_cpu_s=0.01)
    assert got.p50_ms == 100
    assert got.p99_ms == 198
    assert got.rate == 50  # 200 calls in 4 s
    assert got.per_core == 400  # 200 calls in 0.5 CPU s
    assert got.client_us == pytest.approx(50)  # 10 ms over 200 calls
    assert got.client_busy == pytest.approx(0.0025)


def test_a_server_that_used_no_measurable_cpu_is_infinitely_cheap_not_a_division_error() -> None:
    assert sample_of([1.0], wall_s=1.0, server_cpu_s=0.0, client_cpu_s=0.0).per_core == float("inf")


def test_the_medians_are_taken_figure_by_figure() -> None:
    rounds = [
        Sample(1.0, 9.0, 100, 300, 10, 0.1),
        Sample(3.0, 3.0, 300, 100, 30, 0.3),
        Sample(2.0, 6.0, 200, 200, 20, 0.2),
    ]
    assert median_sample(rounds) == Sample(2.0, 6.0, 200, 200, 20, 0.2)


def test_the_table_has_a_row_per_workload_clients_and_figure_with_the_ratios() -> None:
    given = results(
        sample(p50=1.5, rate=1_200),
        sample(p50=1.0, rate=800),
        sample(p50=3.0, rate=600),
        sample(p50=4.0, rate=400),
    )
    lines = render_table(given).splitlines()
    assert len(lines) == 2 + len(LEVELS) * 4
    assert lines[0].endswith(
        "| ours ÷ DBHub's | with JWTs ÷ DBHub's | with JWTs ÷ without | token cache ÷ none |"
    )
    p50 = next(line for line in lines if line.startswith(f"| {WIDE.label}, 32 clients | p50 |"))
    assert [cell.strip() for cell in p50.strip("|").split("|")][2:] == [
        "1.50 ms", "1.00 ms", "3.00 ms", "4.00 ms", "1.50", "3.00", "2.00", "0.75"
    ]  # fmt: skip
    rate = next(line for line in lines if line.startswith(f"| {SMALL.label}, 1 client | calls/s |"))
    assert [cell.strip() for cell in rate.strip("|").split("|")][2:] == [
        "1,200", "800", "600", "400", "1.50", "0.75", "0.50", "1.50"
    ]  # fmt: skip


def test_the_ratio_figures_are_ours_over_the_peers_for_every_level_then_the_jwt_cost_and_cache() -> None:
    given = results(
        sample(p99=3.0, per_core=2_000),
        sample(p99=2.0, per_core=1_000),
        sample(per_core=1_500),
        sample(per_core=1_200),
    )
    figures = ratio_figures(given, "note")
    assert len(figures) == 6 * len(LEVELS) == 6 * 2 * len(CLIENTS)
    by_name = {f.name: f for f in figures}
    per_core = by_name[f"http, no auth on loopback: {SMALL.label}, 8 clients: calls/s per core ÷ DBHub's"]
    assert per_core.value == 2.0
    assert per_core.note == "note"
    assert by_name[f"http, no auth on loopback: {WIDE.label}, 1 client: p99 ÷ DBHub's"].value == 1.5
    assert by_name[f"http, bearer JWTs: {WIDE.label}, 32 clients: calls/s per core ÷ without"].value == 0.75
    cached = by_name[f"http, bearer JWTs: {SMALL.label}, 1 client: calls/s per core, token cache ÷ none"]
    assert cached.value == 1.25
    assert all(f.ok is None for f in figures)


def test_the_client_figures_are_the_worst_over_every_series() -> None:
    given = results(sample(), sample())
    given[DBHUB][LEVELS[3]] = Sample(1, 2, 3, 4, client_us=75.0, client_busy=0.6)
    us, busy = client_figures(given)
    assert (us.value, busy.value) == (75.0, 0.6)


def test_the_answer_is_the_json_body_or_the_last_data_line_of_a_stream() -> None:
    assert answer_line(HttpResponse(200, {"content-type": "application/json"}, b'{"a":1}')) == b'{"a":1}'
    stream = b'event: message\ndata: {"early":1}\n\nevent: message\ndata: {"result":{}}\n\n'
    assert answer_line(HttpResponse(200, {"content-type": "text/event-stream"}, stream)) == b'{"result":{}}'
    assert answer_line(HttpResponse(200, {"content-type": "text/event-stream"}, b": ping\n\n")) == b""


@pytest.mark.parametrize(("tool", "arguments"), [("read_only_sql", {"max_rows": 3}), ("execute_sql", {})])
def test_the_call_is_a_stateless_request_whose_headers_mirror_its_body(
    tool: str, arguments: dict[str, int]
) -> None:
    request = call_request(8123, tool, {"sql": SMALL.sql, **arguments})
    head, _, body = request.partition(b"\r\n\r\n")
    headers = {}
    for line in head.decode().split("\r\n")[1:]:
        name, _, value = line.partition(": ")
        headers[name.lower()] = value
    assert check_mirrored_headers(decoded(body, max_depth=32), headers) is None
    assert "text/event-stream" in headers["accept"]
    assert "application/json" in headers["accept"]
    message = json.loads(body)
    assert message["params"]["name"] == tool
    assert message["params"]["arguments"] == {"sql": SMALL.sql, **arguments}
    assert int(headers["content-length"]) == len(body)


def test_a_load_over_half_the_cpus_marks_the_figures_as_taken_on_a_busy_machine() -> None:
    assert machine_note(2, 0.4) == "2 CPUs, load 0.4 at the start"
    assert machine_note(2, 1.0) == "2 CPUs, load 1.0 at the start"
    assert machine_note(2, 1.6) == "2 CPUs, load 1.6 at the start, BUSY"
    assert machine_note(8, 3.9).endswith("start")


def test_a_server_started_in_a_pinned_thread_stays_on_that_cpu_and_the_thread_is_restored() -> None:
    mine = os.sched_getaffinity(0)
    cpu = max(mine)
    with pinned_thread(cpu):
        assert os.sched_getaffinity(0) == {cpu}
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        assert os.sched_getaffinity(0) == mine
        assert os.sched_getaffinity(child.pid) == {cpu}
    finally:
        child.kill()
        child.wait()
    with pinned_thread(None):
        assert os.sched_getaffinity(0) == mine
