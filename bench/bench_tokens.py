"""What a model pays on every turn (issue 46): the part of `tools/list` a model is shown, in o200k
tokens and bytes, per tool and in total, beside the peers' figures measured for the issue.

Clients put each tool's name, description and input schema in the model's prompt (the official
SDKs' example hosts and the Anthropic `tools` format drop titles, output schemas and annotations):
what is counted is the compact JSON of those three fields (`visible_json`), characters outside
ASCII as themselves, as a client that decodes the list and writes it again puts them. A tool's
figure is its entry; a configuration's total is the list of its entries.

The tools are opened in this process as the server opens them, with the default settings (the SQL
tools on a database nobody listens on: they are listed all the same, nothing calls them), and
listed as a session lists them. Deterministic: no timing, one run. tests/unit/test_guidance.py
holds the same figures to their budgets.
"""

from __future__ import annotations

import contextlib
import json
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from bench.common import Figure
from bench.tokens import ENCODING, count_tokens
from mcp_suite.protocol import mcp
from mcp_suite.runtime.calls import ToolCatalogue
from mcp_suite.settings import SecretStr, Settings
from mcp_suite.tools.registry import open_registry

__all__ = [
    "BEFORE",
    "CONFIGURATIONS",
    "PEERS",
    "TARGET_TOKENS",
    "Measure",
    "figures",
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
            yield mcp.tools_list_result(ToolCatalogue(registry).descriptions(), {})["tools"]


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


def run() -> list[Figure]:
    lines = []
    for name in CONFIGURATIONS:
        with open_configuration(name) as tools:
            lines.extend(figures(name, measure(tools)))
    lines.extend(peer_figures())
    return lines
