"""The MCP Inspector CLI, installed from npm by the tests themselves (a real third-party client).

The version is pinned, with every dependency, by `tests/support/inspector/package-lock.json`
(integrity hashes, no download addresses). `inspector_cli()` runs `npm ci` once per lock into
`.venv/npm/` (a cache `make clean` removes) and returns the CLI's path. It runs on the machine's
Node (20 or later); npm only warns that the package asks for a newer one. Without npm it fails with
a message saying what to install: these tests never skip.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Final

from tests.support.client import REPO

__all__ = ["inspector_cli"]

_SOURCE: Final = Path(__file__).with_name("inspector")
_FILES: Final = ("package.json", "package-lock.json")


def inspector_cli() -> Path:
    """The `mcp-inspector` executable of the pinned version, installed on first use."""
    digest = hashlib.sha256(b"".join((_SOURCE / name).read_bytes() for name in _FILES)).hexdigest()[:16]
    home = REPO / ".venv" / "npm" / f"inspector-{digest}"
    cli = home / "node_modules" / ".bin" / "mcp-inspector"
    if cli.exists():
        return cli
    npm = shutil.which("npm")
    assert npm is not None, "the Inspector tests need Node.js and npm (Debian: apt-get install nodejs npm)"
    home.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=home.parent) as staging:
        for name in _FILES:
            shutil.copy(_SOURCE / name, Path(staging) / name)
        subprocess.run(
            [npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"],
            cwd=staging,
            check=True,
            timeout=600,
            env={**os.environ, "npm_config_update_notifier": "false"},
        )
        # A finished install appears at once (another run may have finished first: keep that one).
        try:
            Path(staging).rename(home)
        except OSError:
            assert cli.exists()
    return cli
