"""Many real server processes against one database, each a separate client with calls in flight.

    result = run_fleet(dsn, servers=32, in_flight=2, rounds=5, watch=count_backends)

Every server is `python -m mcp_suite` over pipes with `read_only_sql` only. Each of its calls asks for
a tag unique in the whole run (`SELECT <tag> AS tag, count(*) FROM docs.pages`), so a reply can be
matched to its request by id AND by content; `watch` (for example PostgreSQL's backend count) is
sampled every 10 ms while the load runs. Used by the many-clients test and by `make bench`.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from tests.support.client import REPO

__all__ = ["FleetResult", "backend_counter", "open_fleet", "run_fleet"]

SERVER_ARGV = (sys.executable, "-m", "mcp_suite")
_INIT = (
    b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25",'
    b'"capabilities":{},"clientInfo":{"name":"fleet","version":"0"}}}\n'
    b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n'
)
_READ_TIMEOUT_S = 30.0


@dataclass
class FleetResult:
    calls: int = 0  # replies received that were right and matched
    seconds: float = 0.0  # wall time of the load (all servers already initialized)
    latencies: list[float] = field(default_factory=list)  # per call, send to reply, seconds
    wrong: list[str] = field(default_factory=list)  # what was wrong, per wrong or missing reply
    watched_max: int = 0  # the largest value `watch` returned while the load ran

    def p95_ms(self) -> float:
        ordered = sorted(self.latencies)
        return ordered[int(0.95 * (len(ordered) - 1))] * 1000 if ordered else 0.0


class _Server:
    def __init__(self, env: Mapping[str, str]) -> None:
        self.proc = subprocess.Popen(
            list(SERVER_ARGV),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=dict(env),
            cwd=REPO,
            bufsize=0,
        )
        assert self.proc.stdin is not None
        assert self.proc.stdout is not None
        self._in = self.proc.stdin
        self._fd = self.proc.stdout.fileno()
        self._buffer = bytearray()

    def send(self, data: bytes) -> None:
        self._in.write(data)

    def read_line(self) -> bytes:
        deadline = time.monotonic() + _READ_TIMEOUT_S
        while b"\n" not in self._buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError("no reply in time")
            select.select([self._fd], [], [], remaining)
            chunk = os.read(self._fd, 1 << 16)
            if not chunk:
                raise EOFError("the server closed its output")
            self._buffer += chunk
        line, _, rest = bytes(self._buffer).partition(b"\n")
        self._buffer = bytearray(rest)
        return line

    def close(self) -> int:
        with contextlib.suppress(BrokenPipeError):
            self._in.close()
        try:
            return self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            return -9
        finally:
            if self.proc.stdout is not None:
                self.proc.stdout.close()


def _env(dsn: str, in_flight: int, extra: Mapping[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MCP_")}
    env.update(
        {
            "MCP_SQL_DSN": dsn,
            "MCP_METRICS_ENABLED": "false",
            "MCP_LOG_LEVEL": "WARNING",
            "MCP_SQL_POOL_MAX_SIZE": str(in_flight),
            **extra,
        }
    )
    return env


@contextlib.contextmanager
def open_fleet(
    dsn: str, *, servers: int, in_flight: int, env: Mapping[str, str] | None = None
) -> Iterator[list[Any]]:
    """`servers` running server processes, initialized and warmed up by one call each (the first
    call builds the SQL policy's parsers: not what a steady load measures). Closed (EOF, then wait)
    on exit."""
    fleet = [_Server(_env(dsn, in_flight, env or {})) for _ in range(servers)]
    try:
        for server in fleet:
            server.send(_INIT)
        for server in fleet:
            json.loads(server.read_line())
        for server in fleet:
            server.send(_call(0, -1))
        for index, server in enumerate(fleet):
            reply = json.loads(server.read_line())
            if reply.get("result", {}).get("structuredContent", {}).get("rows") != [[-1, 30]]:
                raise RuntimeError(f"server {index} failed its first call: {reply!r:.300}")
        yield fleet
    finally:
        for server in fleet:
            server.close()


def _call(request_id: int, tag: int) -> bytes:
    sql = f"SELECT {tag} AS tag, count(*) AS pages FROM docs.pages"
    message = {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": "read_only_sql", "arguments": {"sql": sql}},
    }
    return json.dumps(message).encode() + b"\n"


def _drive(
    server: _Server, index: int, in_flight: int, rounds: int, result: FleetResult, lock: threading.Lock
) -> None:
    next_id = 1
    for _ in range(rounds):
        sent: dict[int, tuple[int, float]] = {}
        for _ in range(in_flight):
            tag = index * 1_000_000 + next_id
            sent[next_id] = (tag, time.perf_counter())
            server.send(_call(next_id, tag))
            next_id += 1
        while sent:
            try:
                reply = json.loads(server.read_line())
            except (TimeoutError, EOFError) as exc:
                with lock:
                    result.wrong.extend(f"server {index}: call {i} lost ({exc})" for i in sent)
                return
            request = sent.pop(reply.get("id"), None)
            content = reply.get("result", {}).get("structuredContent", {})
            with lock:
                if request is None:
                    result.wrong.append(f"server {index}: a reply to no request: {reply.get('id')!r}")
                elif content.get("rows") != [[request[0], 30]]:
                    result.wrong.append(f"server {index}: call {reply.get('id')} answered {reply!r:.300}")
                else:
                    result.calls += 1
                    result.latencies.append(time.perf_counter() - request[1])


def run_fleet(
    fleet: list[Any],
    *,
    in_flight: int,
    rounds: int,
    watch: Callable[[], int] | None = None,
) -> FleetResult:
    """Each server of `fleet` runs `rounds` rounds of `in_flight` concurrent calls, all at once."""
    result = FleetResult()
    lock = threading.Lock()
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            value = watch() if watch is not None else 0
            with lock:
                result.watched_max = max(result.watched_max, value)
            done.wait(0.01)

    sampler = threading.Thread(target=sample, daemon=True)
    workers = [
        threading.Thread(target=_drive, args=(server, i, in_flight, rounds, result, lock), daemon=True)
        for i, server in enumerate(fleet)
    ]
    if watch is not None:
        sampler.start()
    start = time.perf_counter()
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
    result.seconds = time.perf_counter() - start
    done.set()
    if watch is not None:
        sampler.join(timeout=5)
    return result


@contextlib.contextmanager
def backend_counter(admin_dsn: str, user: str) -> Iterator[Callable[[], int]]:
    """A function returning how many client backends `user` has in PostgreSQL right now (one
    connection of its own, as the DBA's query: `pg_stat_activity`)."""
    import psycopg

    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        lock = threading.Lock()

        def count() -> int:
            with lock:
                row = conn.execute(
                    "SELECT count(*) FROM pg_stat_activity"
                    " WHERE usename = %s AND backend_type = 'client backend'",
                    (user,),
                ).fetchone()
            return int(row[0]) if row else 0

        yield count
