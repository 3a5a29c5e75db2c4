"""The design card's shape and nothing else: what `bench_peers` measures beside this server.

A trio stdio server as the card draws it, with none of the product around it: a reader task passes
each line over a memory channel to the dispatcher, which starts one task per `tools/call`, each in
its own cancel scope; the query runs through `trio.to_thread.run_sync` over a sync psycopg pool;
the rows go, as the one text block of the answer, over a second channel to the one stdout writer
task. No policy, no session, no validation, no structured result, no audit. Pinned to the CPU it
starts on, as this server is by default. Two kinds of database work (`python -m bench.card_skeleton
DSN bare|executor`):

- `bare`: the bench's psycopg floor, `execute().fetchall()` on an autocommit pool (psycopg's
  defaults: the simple query protocol, then, from the sixth run of the same text, a statement
  prepared on the server),
  the rows encoded by `json.dumps`. No transaction at all: less than any read-only server does.
- `executor`: this server's own database work, `Executor.run_vetted` (docs/tools/read_only_sql.md): the
  read-only transaction with its settings, the cursor and the reset in one pipelined round trip,
  the row and byte caps, the rows' JSON written once. No policy verdict, and no name for the
  run-time guards to check (a cached verdict and a fresh definer cache cost about 3 µs together).

So `bare` against a peer is what the card's shape costs; `executor` against `bare` is what this
server's guarantees cost in the database and its result path; this server against `executor` is
its own runtime: the session, the limits, the policy's cache, the structured result.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Callable
from typing import Any

import trio
from psycopg_pool import ConnectionPool

from mcp_suite.runtime.affinity import pin_to_current_cpu

CALL_TIMEOUT_S = 30.0
POOL_SIZE = 4
MAX_ROWS = 100
INITIALIZED = {
    "protocolVersion": "2025-11-25",
    "capabilities": {"tools": {}},
    "serverInfo": {"name": "card-skeleton", "version": "0"},
}


def bare_query(dsn: str, stack: contextlib.ExitStack) -> Callable[[str], str]:
    pool = ConnectionPool(dsn, min_size=POOL_SIZE, max_size=POOL_SIZE, kwargs={"autocommit": True}, open=True)
    stack.callback(pool.close)
    pool.wait()

    def query(sql: str) -> str:
        with pool.connection() as conn:
            rows = conn.execute(sql.encode()).fetchall()
        return json.dumps([list(row) for row in rows], default=str)

    return query


def executor_query(dsn: str, stack: contextlib.ExitStack) -> Callable[[str], str]:
    from mcp_suite.settings import SecretStr, Settings
    from mcp_suite.tools.sql.engine.executor import Executor
    from mcp_suite.tools.sql.engine.policy import VettedQuery
    from mcp_suite.tools.sql.engine.ticket import CallTicket

    settings = Settings(sql_dsn=SecretStr(dsn), sql_pool_min_size=POOL_SIZE, sql_pool_max_size=POOL_SIZE)
    executor = Executor(settings, dsn)
    executor.open()
    stack.callback(executor.close)
    executor.preload_type_names()

    def query(sql: str) -> str:
        # The text as it is, past the policy (the peers run theirs unchecked too): made by hand here.
        query = VettedQuery(sql=sql, limit=MAX_ROWS + 1)
        return executor.run_vetted(query, max_rows=MAX_ROWS, ticket=CallTicket()).rows_json.decode()

    return query


def answer(request_id: Any, result: dict[str, Any]) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}).encode() + b"\n"


async def serve(query: Callable[[str], str]) -> None:
    lines_in, lines = trio.open_memory_channel[bytes](64)
    out, frames = trio.open_memory_channel[bytes](64)

    async def reader() -> None:
        stream = trio.lowlevel.FdStream(os.dup(0))
        buffer = b""
        async with lines_in:
            while chunk := await stream.receive_some(65_536):
                *whole, buffer = (buffer + chunk).split(b"\n")
                for line in whole:
                    await lines_in.send(line)

    async def writer() -> None:
        stream = trio.lowlevel.FdStream(os.dup(1))
        async for frame in frames:
            await stream.send_all(frame)

    threads = trio.CapacityLimiter(POOL_SIZE)  # one thread per connection, as this server has

    async def call(message: dict[str, Any]) -> None:
        with trio.move_on_after(CALL_TIMEOUT_S):
            sql = message["params"]["arguments"]["sql"]
            text = await trio.to_thread.run_sync(query, sql, limiter=threads)
            await out.send(answer(message["id"], {"content": [{"type": "text", "text": text}]}))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(reader)
        nursery.start_soon(writer)
        async with lines:
            async for line in lines:
                message = json.loads(line)
                if message.get("method") == "initialize":
                    await out.send(answer(message["id"], INITIALIZED))
                elif message.get("method") == "tools/call":
                    nursery.start_soon(call, message)
        nursery.cancel_scope.cancel()  # the client closed our input after its last answer


def main() -> None:
    dsn, kind = sys.argv[1:3]
    pin_to_current_cpu()
    with contextlib.ExitStack() as stack:
        trio.run(serve, {"bare": bare_query, "executor": executor_query}[kind](dsn, stack))


if __name__ == "__main__":
    main()
