"""mcp-suite: a hardened, read-only MCP server on trio (PostgreSQL, a sandboxed folder, host metrics)."""

import os as _os

__version__ = "0.1.0"
SERVER_NAME = "mcp-suite"

# pydantic loads third-party "plugins" from any installed package's entry points into every model it
# builds. A hardened server runs no code it did not choose, and the entry-point scan (and the import
# of importlib.metadata behind it) is a noticeable share of a cold start. Turn it off before pydantic
# is first imported: by its documented switch, and by giving its plugin loader a stand-in that
# loads nothing (so the entry-point machinery is never even imported).
_os.environ["PYDANTIC_DISABLE_PLUGINS"] = "__all__"


def _no_pydantic_plugins() -> None:
    import sys
    import types

    name = "pydantic.plugin._loader"
    if name not in sys.modules:
        loader = types.ModuleType(name, "mcp-suite: pydantic plugins are never loaded")
        loader.get_plugins = lambda: ()  # type: ignore[attr-defined]  # the one function pydantic calls
        sys.modules[name] = loader


_no_pydantic_plugins()
