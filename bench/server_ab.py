"""A/B of whole servers: this server from two (or more) trees or settings, in interleaved rounds.

    python -m bench.server_ab [--rounds N] NAME=TREE[:SETTING=VALUE,...] NAME=TREE[:...] ...

Each variant is `python -m mcp_suite` with `PYTHONPATH=TREE` (a checkout of this repository, or `.`
for the one this runs from; `A+B` puts both on the path, A first) and the given `MCP_*` settings
on top of the bench's usual ones, against the bench's demo cluster. Per round, each variant is
started afresh and measured on the two workloads of `bench_peers` (sequential p50 and p99, calls/s
with the workload's calls in flight, the server's CPU per call); the order turns each round (A B,
B A, ...), so a slow moment of the machine falls on all. It prints every figure's median over the
rounds and each variant's ratio to the first.

Not part of `make bench`: it compares trees or settings, where `make bench` measures the one tree
against its peers. The figures of a decision made with it are in docs/performance.md.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

from bench.bench_peers import OURS, WORKLOADS, Sample, StdioServer, Workload, measure, median_sample
from bench.common import SERVER_ARGV, server_env


@dataclass(frozen=True, slots=True)
class Variant:
    name: str
    trees: tuple[Path, ...]
    settings: dict[str, str]


def parse_variant(text: str) -> Variant:
    """`NAME=TREE[:SETTING=VALUE,...]`."""
    name, _, rest = text.partition("=")
    tree, _, tail = rest.partition(":")
    if not name or not tree:
        raise argparse.ArgumentTypeError(f"not NAME=TREE[:SETTING=VALUE,...]: {text!r}")
    settings = dict(pair.split("=", 1) for pair in tail.split(",") if pair)
    return Variant(name, tuple(Path(t).resolve() for t in tree.split("+")), settings)


def flatten(sample: Sample) -> dict[str, float]:
    """A sample's figures by name, one per in-flight level for the rates and the CPU under load."""
    figures = {"p50_ms": sample.p50_ms, "p99_ms": sample.p99_ms, "cpu_ms": sample.cpu_ms}
    figures |= {f"rate_{n}": rate for n, rate in sample.rates.items()}
    figures |= {f"load_cpu_ms_{n}": cpu for n, cpu in sample.load_cpu_ms.items()}
    figures["rss_mb"] = sample.rss_mb
    return figures


def open_variant(variant: Variant, dsn: str) -> StdioServer:
    env = server_env(MCP_SQL_DSN=dsn, MCP_METRICS_ENABLED="false", **variant.settings)
    env["PYTHONPATH"] = os.pathsep.join(map(str, variant.trees))
    return StdioServer(OURS, SERVER_ARGV, env, "read_only_sql", with_rows=True)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.server_ab")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("variants", nargs="+", type=parse_variant)
    args = parser.parse_args(argv)
    variants: list[Variant] = args.variants

    from mcp_suite.demo.session import open_demo_cluster

    # `python -m` puts the working directory first on the path: start the servers from elsewhere.
    os.chdir("/")
    cluster, started_here = open_demo_cluster()
    taken: dict[str, dict[Workload, list[Sample]]] = {v.name: {w: [] for w in WORKLOADS} for v in variants}
    try:
        for r in range(args.rounds):
            order = variants if r % 2 == 0 else variants[::-1]
            for variant in order:
                server = open_variant(variant, cluster.reader_dsn)
                try:
                    for workload in WORKLOADS:
                        taken[variant.name][workload].append(measure(server, workload))
                finally:
                    server.close()
            print(f"round {r + 1} of {args.rounds} done", file=sys.stderr, flush=True)
    finally:
        if started_here:
            cluster.stop()
    first = variants[0].name
    for workload in WORKLOADS:
        print(f"\n{workload.label} (medians of {args.rounds} rounds; ratio to {first})")
        base = flatten(median_sample(taken[first][workload]))
        for variant in variants:
            figures = flatten(median_sample(taken[variant.name][workload]))
            cells = [f"{name} {value:.3f} (×{value / base[name]:.2f})" for name, value in figures.items()]
            spread = [s.p50_ms for s in taken[variant.name][workload]]
            cells.append(f"p50 range {min(spread):.3f}–{max(spread):.3f}, sd {statistics.pstdev(spread):.3f}")
            print(f"  {variant.name}: " + "; ".join(cells))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
