"""What the server loads to answer `initialize`: nothing it does not need (a hardening and a speed rule).

pydantic plugins are never loaded (no entry-point scan), psutil waits for the first metrics call, the
SQL policy's parsers for a background thread, argparse for a command line that has arguments.
"""

from __future__ import annotations

import subprocess
import sys

from tests.support.client import REPO, server_env

PROGRAM = """
import sys
from mcp_suite.settings import load_settings
from mcp_suite.tools.registry import open_registry
import mcp_suite.cli
with open_registry(load_settings()) as registry:
    import pydantic
    class Probe(pydantic.BaseModel):
        x: int
    Probe(x=1)
    print(sorted(registry.tools))
    for name in ("importlib.metadata", "psutil", "sqlglot", "pglast", "argparse"):
        print(name, name in sys.modules)
    from pydantic.plugin._loader import get_plugins
    print("plugins", list(get_plugins()))
"""


def test_start_up_loads_no_plugin_machinery_and_no_deferred_library() -> None:
    out = subprocess.run(
        [sys.executable, "-c", PROGRAM],
        capture_output=True,
        text=True,
        check=True,
        env=server_env(),
        cwd=REPO,
    ).stdout.splitlines()
    assert out[0] == "['system_metrics']"
    assert out[1:] == [
        "importlib.metadata False",
        "psutil False",
        "sqlglot False",
        "pglast False",
        "argparse False",
        "plugins []",
    ]
