"""The bench's card skeleton (bench/card_skeleton.py) answers both workloads with all their rows,
with either kind of database work: a comparison point that returned less would flatter itself."""

from __future__ import annotations

import json
import sys

import pytest

from bench.bench_peers import SMALL, WIDE, StdioServer, check_answer
from bench.common import server_env
from mcp_suite.demo.cluster import Cluster


@pytest.mark.parametrize("kind", ["bare", "executor"])
def test_the_card_skeleton_answers_each_workload_with_every_row(demo_cluster: Cluster, kind: str) -> None:
    argv = [sys.executable, "-m", "bench.card_skeleton", demo_cluster.reader_dsn, kind]
    server = StdioServer(kind, argv, server_env(), "query", with_rows=False)
    try:
        small, wide = server.answer(SMALL, 1), server.answer(WIDE, 2)
    finally:
        server.close()
    for workload, line in ((SMALL, small), (WIDE, wide)):
        check_answer(kind, workload, line)
    answers = [json.loads(line) for line in (small, wide)]
    assert [a["id"] for a in answers] == [1, 2]
    rows = [json.loads(a["result"]["content"][0]["text"]) for a in answers]
    assert sorted(rows[0]) == [["changelog", 10], ["guides", 10], ["reference", 10]]
    assert len(rows[1]) == 100
    assert len(rows[1][0]) == 7
    assert rows[1][0][-1] == "text value " + rows[1][0][0]  # the computed label of its own slug
