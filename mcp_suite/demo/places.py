"""Where the demo's files are: the checkout it runs from (`make run`) or none (an installed wheel), the
example folder it serves, and the cache directory its cluster lives in (`$MCP_DEVDB_DIR`, else
`.cache/devdb` in a checkout, else the user's cache directory; never the current directory).
Names paths only: creates nothing, starts nothing.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from mcp_suite.demo.reach import reachable_cluster_dir

__all__ = ["checkout", "default_cache_dir", "example_folder", "user_cache_dir"]


def checkout() -> Path | None:
    """The git checkout this package runs from (`make run`), or None for an installed wheel."""
    here = Path(__file__).resolve().parent.parent.parent
    return here if (here / "pyproject.toml").is_file() and (here / "examples").is_dir() else None


def example_folder() -> Path | None:
    """The demo's folder for `sandbox_fs_read`: the checkout's `examples/safe_data`, or the copy
    the wheel carries beside this module (see setup.py); None if neither is there."""
    root = checkout()
    folder = root / "examples" / "safe_data" if root else Path(__file__).resolve().parent / "safe_data"
    return folder if folder.is_dir() else None


def user_cache_dir() -> Path:
    """This user's cache directory for mcp-suite: `$XDG_CACHE_HOME/mcp-suite` or `~/.cache/mcp-suite`
    (`~/Library/Caches/mcp-suite` on macOS)."""
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / "mcp-suite"
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    return (Path(xdg) if os.path.isabs(xdg) else Path.home() / ".cache") / "mcp-suite"


def default_cache_dir() -> Path:
    """`$MCP_DEVDB_DIR` (tests point it at a temp dir), else `.cache/devdb` in a checkout, else
    `devdb` in the user's cache directory: never the current directory.

    As root, a default the service account cannot reach moves to root's cache (`reachable_cluster_dir`);
    an explicit `$MCP_DEVDB_DIR` is used as given (and refused with the fix if unreachable).
    """
    override = os.environ.get("MCP_DEVDB_DIR")
    if override:
        return Path(override)
    root = checkout()
    return reachable_cluster_dir(root / ".cache" / "devdb" if root else user_cache_dir() / "devdb")
