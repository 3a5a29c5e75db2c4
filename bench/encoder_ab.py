"""Issue 31's A/B of the result encoder: the rows' JSON by pydantic's serializer (the tree's
`result._wire_json`, or the bare call), the standard library, orjson or msgspec
(docs/performance.md, "The result encoder").

orjson and msgspec are not dependencies: install them beside the venv for the A/B (`pip install
--target DIR orjson msgspec`, then `PYTHONPATH=DIR`). Two modes, each in one run, interleaved:

- `python -m bench.encoder_ab micro`: the 100 rows × 7 columns of `bench_sql.ROWS_QUERY`, loaded
  once from the demo cluster through the tool's loaders, then `result.json_rows` (batches of 8 and
  the exact size check) with each encoder, in this process; plus the same rows with one non-ASCII
  character, where each compiled encoder falls back to the escaping one as today. Medians of the
  rounds' per-call µs (CPU of this thread).
- `python -m bench.encoder_ab e2e [ROUNDS [CALLS]] [ENCODER...]` (8 rounds of 1,500 calls; the
  tree's encoder against orjson): the server over pipes, one process per encoder, 100-row calls
  one after the other in ABBA rounds: p50 and server CPU per call, medians of the rounds, and the
  median of each round's ratio to the first encoder.

The server variants run `python -m bench.encoder_ab serve ENCODER`, which swaps the module global
`result._wire_json` (the rows' one encoder call) before serving: the rest of the server is the tree's.
"""

from __future__ import annotations

import codecs
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

ENCODERS = ("tree", "pydantic", "stdlib", "orjson", "msgspec", "orjson+escape")
MICRO_ROUNDS = 15
MICRO_CALLS = 400
E2E_ROUNDS = 8  # ABBA: each round runs every encoder, the order reversed every other round
E2E_CALLS = 1_500


def _json_escape(error: UnicodeError) -> tuple[str, int]:
    """A codec error handler: a run of non-ASCII characters as JSON escapes, as
    `json.dumps(ensure_ascii=True)` writes them (lower-case hex, astral characters as surrogate pairs)."""
    assert isinstance(error, UnicodeEncodeError)
    out = []
    for char in error.object[error.start : error.end]:
        code = ord(char)
        if code > 0xFFFF:
            code -= 0x10000
            out.append(f"\\u{0xD800 | (code >> 10):04x}\\u{0xDC00 | (code & 0x3FF):04x}")
        else:
            out.append(f"\\u{code:04x}")
    return "".join(out), error.end


def wire_encoder(name: str) -> Callable[[Any], bytes]:
    """`value` as compact ASCII JSON by encoder `name`; "tree" is `result._wire_json` as it is.

    Non-ASCII output, or a value the compiled encoder refuses (an integer past 64 bits for orjson),
    goes to the escaping encoder, as today; "orjson+escape" escapes non-ASCII output in a post-pass
    instead (UTF-8 decoded, then encoded as ASCII through `_json_escape`). Unlike the tree's, these
    variants do not look for a bare NaN (orjson and msgspec write a NaN as null: no check after the
    fact can see it).
    """
    from mcp_suite.protocol.jsonrpc import compact_json

    def escaped(value: Any) -> bytes:
        return compact_json(value).encode("ascii")

    if name == "tree":  # the tree's own, unchanged (taken before any variant replaces it)
        from mcp_suite.tools.sql.engine import result

        return result._wire_json
    post_pass = name.endswith("+escape")
    name = name.removesuffix("+escape")
    if name == "stdlib":
        return escaped
    if name == "pydantic":
        import pydantic_core

        dumps: Callable[[Any], bytes] = pydantic_core.to_json
    elif name == "orjson":
        import orjson

        dumps = orjson.dumps
    elif name == "msgspec":
        import msgspec

        dumps = msgspec.json.Encoder().encode
    else:
        raise ValueError(name)
    codecs.register_error("bench-json-escape", _json_escape)

    def encode(value: Any) -> bytes:
        try:
            data = dumps(value)
        except (TypeError, ValueError):
            return escaped(value)
        if data.isascii():
            return data
        return data.decode("utf-8").encode("ascii", "bench-json-escape") if post_pass else escaped(value)

    return encode


def _rows(dsn: str) -> tuple[list[tuple[Any, ...]], list[int]]:
    import psycopg

    from bench.bench_sql import ROWS_QUERY
    from mcp_suite.tools.sql.engine.convert import register_loaders

    with psycopg.connect(dsn, autocommit=True) as conn:
        register_loaders(conn.adapters, encoding=conn.info.encoding)
        cursor = conn.execute(ROWS_QUERY)
        oids = [column.type_code for column in cursor.description or ()]
        return cursor.fetchall(), oids


def micro(dsn: str) -> None:
    from mcp_suite.tools.sql.engine import result

    rows, oids = _rows(dsn)
    columns = tuple(result.Column(f"c{i}", "text") for i in range(len(oids)))
    accented = [(f"{row[0]}\u00e9", *row[1:]) for row in rows]
    original = result._wire_json
    encoders = {name: wire_encoder(name) for name in ENCODERS}
    expected = encoders["stdlib"]([list(row) for row in rows])
    for name, encode in encoders.items():
        if encode([list(row) for row in rows]) != expected:
            sys.stderr.write(f"note: {name}'s bytes differ from the standard library's on these rows\n")

    def json_rows_us(workload: list[tuple[Any, ...]]) -> float:
        start = time.thread_time()
        for _ in range(MICRO_CALLS):
            result.json_rows(
                workload, columns, oids, encoding="utf-8", max_bytes=20_000, max_rows=100, more=False
            )
        return (time.thread_time() - start) / MICRO_CALLS * 1e6

    def one_call_us(encode: Callable[[Any], bytes], values: list[list[Any]]) -> float:
        start = time.thread_time()
        for _ in range(MICRO_CALLS):
            encode(values)
        return (time.thread_time() - start) / MICRO_CALLS * 1e6

    samples: dict[tuple[str, str], list[float]] = {}
    whole = [list(row) for row in rows]
    try:
        for round_ in range(MICRO_ROUNDS):
            order = ENCODERS if round_ % 2 == 0 else ENCODERS[::-1]
            for name in order:
                result._wire_json = encoders[name]  # type: ignore[assignment]  # the A/B swaps it
                samples.setdefault((name, "json_rows, ASCII"), []).append(json_rows_us(rows))
                samples.setdefault((name, "json_rows, one non-ASCII char a row"), []).append(
                    json_rows_us(accented)
                )
                samples.setdefault((name, "the 100 rows in one encoder call"), []).append(
                    one_call_us(encoders[name], whole)
                )
    finally:
        result._wire_json = original
    for (name, what), values in samples.items():
        low, high = min(values), max(values)
        sys.stdout.write(f"{what:40} {name:9} {statistics.median(values):8.1f} µs ({low:.1f}-{high:.1f})\n")


def e2e(dsn: str, names: list[str], rounds: int = E2E_ROUNDS, calls: int = E2E_CALLS) -> None:
    from bench.bench_sql import ROWS_QUERY, _Server, server_sequential_ms
    from bench.common import cpu_seconds, server_env, spawn

    class Variant(_Server):
        def __init__(self, env: dict[str, str], name: str) -> None:
            self.proc = spawn(env, (sys.executable, "-m", "bench.encoder_ab", "serve", name))
            assert self.proc.stdin is not None and self.proc.stdout is not None
            self._in = self.proc.stdin
            self._fd = self.proc.stdout.fileno()
            self._buffer = bytearray()

    env = server_env(MCP_SQL_DSN=dsn, MCP_METRICS_ENABLED="false")
    if len(names) > 2:  # the demo's reader role takes 5 connections: one each (calls come one at a time)
        env["MCP_SQL_POOL_MAX_SIZE"] = "1"
    servers = {name: Variant(env, name) for name in names}
    figures: dict[str, list[tuple[float, float]]] = {name: [] for name in names}
    try:
        for server in servers.values():
            server.initialize()
            server_sequential_ms(server, 200, ROWS_QUERY)  # warm-up
        for round_ in range(rounds):
            order = names if round_ % 2 == 0 else names[::-1]
            for name in order:
                server = servers[name]
                cpu = cpu_seconds(server.proc.pid)
                p50 = server_sequential_ms(server, calls, ROWS_QUERY)[0]
                cpu_ms = (cpu_seconds(server.proc.pid) - cpu) / calls * 1000
                figures[name].append((p50, cpu_ms))
                sys.stdout.write(f"round {round_} {name:9} p50 {p50:.3f} ms, CPU {cpu_ms:.3f} ms per call\n")
                sys.stdout.flush()
    finally:
        for server in servers.values():
            server.close()
    base = names[0]
    base_p50 = statistics.median(p for p, _ in figures[base])
    base_cpu = statistics.median(c for _, c in figures[base])
    for name in names:
        p50 = statistics.median(p for p, _ in figures[name])
        cpu_ms = statistics.median(c for _, c in figures[name])
        # Each round's ratio to the first encoder's figure in the same round, then their median.
        pairs = list(zip(figures[name], figures[base], strict=True))
        p50_ratio = statistics.median(a[0] / b[0] for a, b in pairs)
        cpu_ratio = statistics.median(a[1] / b[1] for a, b in pairs)
        sys.stdout.write(
            f"{name:9} median p50 {p50:.3f} ms (x{p50 / base_p50:.3f} of {base}; per round x{p50_ratio:.3f}),"
            f" CPU per call {cpu_ms:.3f} ms (x{cpu_ms / base_cpu:.3f}; per round x{cpu_ratio:.3f})\n"
        )


def serve(name: str) -> int:
    from mcp_suite import cli
    from mcp_suite.tools.sql.engine import result

    result._wire_json = wire_encoder(name)  # type: ignore[assignment]  # the A/B swaps it
    return cli.main([])


def main(argv: list[str]) -> int:
    mode, *rest = argv or ["micro"]
    if mode == "serve":
        return serve(rest[0])
    from mcp_suite.demo.session import open_demo_cluster

    cluster, started_here = open_demo_cluster()
    try:
        if mode == "micro":
            micro(cluster.reader_dsn)
        else:
            numbers = [int(word) for word in rest if word.isdigit()]  # [ROUNDS [CALLS]]
            names = [word for word in rest if not word.isdigit()] or ["tree", "orjson"]
            e2e(cluster.reader_dsn, names, *numbers[:2])
    finally:
        if started_here:
            cluster.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
