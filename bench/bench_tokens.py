"""What a model pays on every turn (issue 46): the part of `tools/list` a model is shown, in o200k
tokens and bytes, per tool and in total, beside the peers' figures measured for the issue.

Clients put each tool's name, description and input schema in the model's prompt (the official
SDKs' example hosts and the Anthropic `tools` format drop titles, output schemas and annotations):
what is counted is the compact JSON of those three fields (`visible_json`), characters outside
ASCII as themselves, as a client that decodes the list and writes it again puts them. A tool's
figure is its entry; a configuration's total is the list of its entries.

The tools are opened in this process as the server opens them, with the default settings (the SQL
tools on a database nobody listens on: they are listed all the same, nothing calls them), and
listed as a session lists them. Deterministic: no timing, one run. tests/unit/tools/test_guidance.py
holds the same figures to their budgets.

Then what the untrusted-data frame (issue 44) costs on a typical answer: `read_only_sql`'s 100 rows
× 7 columns (`bench_sql.ROWS_QUERY`), called through the real server against the demo cluster
(started here if it is not running). Before: the text block without the frame, which is the JSON the
frame holds, exactly what the server sent before issue 44; after: the framed text block, the
largest of `ANSWER_CALLS` answers (each has its own boundary; its digits always take the same
tokens). The same for `structuredContent`, which some clients show the model instead.
"""

from __future__ import annotations

import contextlib
import json
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from bench.common import INIT, Figure, read_lines, server_env, spawn, stop
from bench.tokens import ENCODING, count_tokens
from mcp_suite.protocol import mcp
from mcp_suite.protocol.untrusted import FRAMED
from mcp_suite.runtime.calls import catalogue_of
from mcp_suite.settings import SecretStr, Settings
from mcp_suite.tools.registry import open_registry

__all__ = [
    "BEFORE",
    "CONFIGURATIONS",
    "FRAME_TARGET",
    "PEERS",
    "TARGET_TOKENS",
    "Measure",
    "figures",
    "frame_figures",
    "framed_answers",
    "measure",
    "model_visible",
    "open_configuration",
    "run",
    "visible_json",
]

# The default configurations: which tool groups are served (SQL, sandbox folder, host metrics).
CONFIGURATIONS: Final = {
    "all six tools": (True, True, True),
    "SQL tools only": (True, False, False),
}
# Issue 46's target: at most half of what this server's list cost before it (`BEFORE`).
TARGET_TOKENS: Final = {"all six tools": 680, "SQL tools only": 390}
# Measured for issue 46 (o200k, the same three fields), not by this bench: this server before the
# issue, and peers (name, tools, tokens).
BEFORE: Final = {"all six tools": 1_369, "SQL tools only": 788}
PEERS: Final = (
    ("DBHub 1.4 (execute_sql)", 1, 91),
    ("archived reference server-postgres", 1, 32),
    ("MCP Toolbox 1.12, prebuilt postgres", 29, 4_002),
    ("Supabase 0.13, read-only, without docs", 14, 1_807),
)
# Issue 44's bound on what the frame adds to the 100-row answer, and the answers measured.
FRAME_TARGET: Final = 1.03
ANSWER_CALLS: Final = 20
# A database nobody listens on: the start-up audit cannot connect, which is not fatal.
_NO_DATABASE: Final = "postgresql://reader:secret@127.0.0.1:1/mcp_demo"
_VISIBLE: Final = ("name", "description", "inputSchema")
UNIT: Final = f"tokens ({ENCODING.removesuffix('_base')})"


def visible_json(value: Any) -> str:
    """`value` as compact JSON, characters outside ASCII as themselves."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def model_visible(tools: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """What a model is shown of `tools/list`'s tools: each one's name, description, inputSchema."""
    return [{key: tool[key] for key in _VISIBLE} for tool in tools]


@contextlib.contextmanager
def open_configuration(name: str) -> Iterator[list[dict[str, Any]]]:
    """`tools/list`'s tools for the default configuration `name`, as a session serves them."""
    sql, fs, metrics = CONFIGURATIONS[name]
    with tempfile.TemporaryDirectory(prefix="bench-tokens-") as root:
        settings = Settings(
            sql_dsn=SecretStr(_NO_DATABASE) if sql else None,
            safe_data_dir=Path(root) if fs else None,
            metrics_enabled=metrics,
            sql_connect_timeout_s=1.0,
        )
        with open_registry(settings) as registry:
            yield mcp.tools_list_result(catalogue_of(registry).descriptions(), {})["tools"]


@dataclass(frozen=True, slots=True)
class Measure:
    """One configuration's model-visible list: (bytes, tokens) per tool, in list order, and of
    the whole list."""

    tools: dict[str, tuple[int, int]]
    total_bytes: int
    total_tokens: int


def measure(tools: Sequence[Mapping[str, Any]]) -> Measure:
    visible = model_visible(tools)
    per_tool = {}
    for entry in visible:
        text = visible_json(entry)
        per_tool[entry["name"]] = (len(text.encode()), count_tokens(text))
    text = visible_json(visible)
    return Measure(per_tool, len(text.encode()), count_tokens(text))


def figures(name: str, found: Measure) -> list[Figure]:
    """The figures of one configuration: each tool's tokens (bytes beside), then the total against
    its target, with the issue's figure for this server before it."""
    lines = [
        Figure(f"{name}: {tool}", tokens, UNIT, note=f"{size:,} bytes")
        for tool, (size, tokens) in found.tools.items()
    ]
    target = TARGET_TOKENS[name]
    before = BEFORE[name]
    lines.append(
        Figure(
            f"{name}: the whole list ({len(found.tools)} tools)",
            found.total_tokens,
            UNIT,
            target=f"<= {target}",
            ok=found.total_tokens <= target,
            note=f"{found.total_bytes:,} bytes; {before:,} tokens before issue 46 (issue 46, measured)",
        )
    )
    return lines


def peer_figures() -> list[Figure]:
    return [
        Figure(f"peer: {peer}", tokens, UNIT, note=f"{count} tools; issue 46, measured")
        for peer, count, tokens in PEERS
    ]


def framed_answers(dsn: str, calls: int = ANSWER_CALLS) -> list[dict[str, Any]]:
    """`calls` results of `read_only_sql` running `bench_sql.ROWS_QUERY`, through the real server."""
    from bench.bench_sql import ROWS, ROWS_QUERY

    proc = spawn(server_env(MCP_SQL_DSN=dsn, MCP_METRICS_ENABLED="false"))
    assert proc.stdin is not None and proc.stdout is not None
    buffer = bytearray()
    try:
        proc.stdin.write(INIT)
        read_lines(proc.stdout.fileno(), buffer)
        results = []
        for request_id in range(1, calls + 1):
            params = {"name": "read_only_sql", "arguments": {"sql": ROWS_QUERY, "max_rows": ROWS}}
            request = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}
            proc.stdin.write(json.dumps(request).encode() + b"\n")
            (line,) = read_lines(proc.stdout.fileno(), buffer)
            result = json.loads(line)["result"]
            assert result["isError"] is False, result
            assert len(result["structuredContent"]["rows"]) == ROWS
            results.append(result)
        return results
    finally:
        stop(proc)


def frame_figures(results: Sequence[Mapping[str, Any]]) -> list[Figure]:
    """What the frame adds to the answers' text block and structuredContent, in o200k tokens."""
    texts = [result["content"][0]["text"] for result in results]
    found = [FRAMED.fullmatch(text) for text in texts]
    bodies = {match["body"] for match in found if match is not None}
    assert len(bodies) == 1 and len(found) == len(texts) and None not in found, "not one framed answer"
    (body,) = bodies  # the answer before issue 44: the JSON alone
    before = count_tokens(body)
    after = max(count_tokens(text) for text in texts)
    structured = max(count_tokens(visible_json(result["structuredContent"])) for result in results)
    return [
        Figure("frame: 100 rows x 7 columns, text block before", before, UNIT, note=f"{len(body):,} bytes"),
        Figure(
            "frame: 100 rows x 7 columns, text block framed",
            after,
            UNIT,
            target=f"<= {FRAME_TARGET:.2f}x before",
            ok=after <= FRAME_TARGET * before,
            note=f"+{after - before} tokens, x{after / before:.4f}; the largest of {len(texts)} answers",
        ),
        Figure(
            "frame: 100 rows x 7 columns, structuredContent",
            structured,
            UNIT,
            target=f"<= {FRAME_TARGET:.2f}x before",
            ok=structured <= FRAME_TARGET * before,
            note=f"+{structured - before} tokens over the JSON alone",
        ),
    ]


def run() -> list[Figure]:
    lines = []
    for name in CONFIGURATIONS:
        with open_configuration(name) as tools:
            lines.extend(figures(name, measure(tools)))
    lines.extend(peer_figures())
    from mcp_suite.demo.session import open_demo_cluster

    cluster, started_here = open_demo_cluster()
    try:
        lines.extend(frame_figures(framed_answers(cluster.reader_dsn)))
    finally:
        if started_here:
            cluster.stop()
    return lines
