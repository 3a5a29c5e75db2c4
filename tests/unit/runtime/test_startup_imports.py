"""What the server loads to answer `initialize`: nothing it does not need (a hardening and a speed rule).

pydantic itself waits until the handshake is answered (the tools' models are built by the warm-up or
the first call), and then loads no plugins; psutil waits for the first metrics
call, the SQL policy's parsers for the warm-up, argparse for a command line that has arguments.
"""

from __future__ import annotations

import subprocess
import sys

from tests.support.client import REPO, server_env

PROGRAM = """
import os, sys
os.environ.pop("PYDANTIC_DISABLE_PLUGINS", None)  # inherited from the test process: mcp_suite sets it
from mcp_suite.settings import load_settings
from mcp_suite.tools.registry import open_registry
import mcp_suite.cli
with open_registry(load_settings()) as registry:
    print(sorted(registry.tools))
    for name in ("pydantic", "importlib.metadata", "psutil", "sqlglot", "pglast", "argparse"):
        print(name, name in sys.modules)
    for step in registry.warm_up:
        step()
    print("models", all(tool.models.built for tool in registry.tools.values()))
    import pydantic
    class Probe(pydantic.BaseModel):
        x: int
    Probe(x=1)
    from pydantic.plugin._loader import get_plugins
    print("plugins", list(get_plugins()), os.environ["PYDANTIC_DISABLE_PLUGINS"])
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
        "pydantic False",
        "importlib.metadata False",
        "psutil False",
        "sqlglot False",
        "pglast False",
        "argparse False",
        "models True",
        "plugins [] __all__",
    ]
