"""The official TypeScript SDK's Streamable HTTP client, installed from npm by the tests themselves.

`tests/support/ts_sdk/` pins both lines of the SDK with every dependency (a package-lock.json with
integrity hashes, no download addresses): v1 (`@modelcontextprotocol/sdk`, the 2025 era only) and
v2 (`@modelcontextprotocol/client`, which negotiates 2026-07-28 or stays legacy), and holds
`client.mjs`, `cancel.mjs`, `resume.mjs` and `ask.mjs`, the scripts the tests run. `ts_sdk_client()` runs
`npm ci` once per lock into `.venv/npm/` and returns the script's installed path; it runs on the
machine's Node (20 or later).
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

from bench.common import npm_ci_once

__all__ = ["ts_sdk_ask", "ts_sdk_cancel", "ts_sdk_client", "ts_sdk_progress", "ts_sdk_resume"]

_SOURCE: Final = Path(__file__).with_name("ts_sdk")
_FILES: Final = ("package.json", "package-lock.json", "client.mjs", "cancel.mjs", "resume.mjs", "ask.mjs")


def ts_sdk_client() -> Path:
    """`client.mjs` beside its installed `node_modules`, installed on first use."""
    return npm_ci_once(_SOURCE, "ts-sdk", _FILES) / "client.mjs"


def ts_sdk_cancel() -> Path:
    """`cancel.mjs` (a legacy call the SDK's client cancels) beside its installed `node_modules`."""
    return npm_ci_once(_SOURCE, "ts-sdk", _FILES) / "cancel.mjs"


def ts_sdk_resume() -> Path:
    """`resume.mjs` (a legacy session that outlives its replicas) beside its installed `node_modules`."""
    return npm_ci_once(_SOURCE, "ts-sdk", _FILES) / "resume.mjs"


def ts_sdk_ask() -> Path:
    """`ask.mjs` (the v2 SDK answering a tool's yes/no question in 2026-07-28) beside its installed
    `node_modules`."""
    return npm_ci_once(_SOURCE, "ts-sdk", _FILES) / "ask.mjs"


def ts_sdk_progress() -> Path:
    """`progress.mjs` (a slow call whose progress the SDK's client follows) beside the installed
    `node_modules`. Copied in beside them rather than part of the lock's digest: a new script does
    not need a new install of the same packages."""
    home = npm_ci_once(_SOURCE, "ts-sdk", _FILES)
    script = _SOURCE / "progress.mjs"
    installed = home / "progress.mjs"
    if not installed.is_file() or installed.read_bytes() != script.read_bytes():
        installed.write_bytes(script.read_bytes())
    return installed
