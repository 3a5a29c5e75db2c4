"""The demo's configuration file: the two sources `make run` serves (docs/configuration.md,
"Several databases: the configuration file").

`write_sources_file(cluster, environ)` writes, in the cluster's directory, `sources.toml` naming
`docs` (mcp_demo, read by mcp_reader) and `ops` (mcp_ops, read by mcp_ops_reader), each with a
curated tool, and one password file per source beside it: each file mode 0600, written whole
under a temporary name then renamed, the passwords never in the TOML itself. It is written again
at each session (the port may change).
A per-source `MCP_SQL_*` variable the developer set (`MCP_SQL_STATEMENT_TIMEOUT_MS`...) may not sit
beside a file, so its value is written into every source's table instead, and `server_environ`
leaves it, and `MCP_SQL_DSN`, out of the server's environment.
"""

from __future__ import annotations

import json
import os
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Final

from mcp_suite.demo.seed import DEMO_DB, OPS_DB, OPS_READER_POOL, OPS_READER_USER, READER_POOL, READER_USER
from mcp_suite.settings import ENV_PREFIX, SOURCE_KEYS, load_settings, variable_of

if TYPE_CHECKING:
    from mcp_suite.demo.cluster import Cluster

__all__ = ["DEMO_SOURCES", "SOURCES_NAME", "server_environ", "write_sources_file"]

SOURCES_NAME: Final = "sources.toml"
DEMO_SOURCES: Final = ("docs", "ops")
# The demo's curated tools (docs/tools/curated.md): one bound to the caller's verified subject (an
# editor's id: served over HTTP, where a caller is verified), one with an allowed value.
_CURATED: Final = {
    "docs": """
[[sources.tools]]
name = "my_pages"
title = "My pages"
description = "The pages the caller edits (their editor id is the token's subject), by slug."
statement = "SELECT slug, section, words FROM docs.pages WHERE editor_id = $1 ORDER BY slug"

[[sources.tools.parameters]]
name = "editor"
type = "text"
bind = "sub"
""",
    "ops": """
[[sources.tools]]
name = "incidents_of_service"
title = "Incidents of a service"
description = "One service's incidents, newest first, with their severity and summary."
statement = "SELECT incident_id, severity, summary FROM ops.incidents WHERE service = $1 ORDER BY 1 DESC"

[[sources.tools.parameters]]
name = "service"
type = "text"
description = "The service"
enum = ["api", "billing", "search", "docs-site"]
""",
}
_HEADER: Final = """\
# The demo's two databases, written by `python -m mcp_suite.demo serve` at each start (the port may
# change): docs/configuration.md, "Several databases: the configuration file". The passwords are in
# the files beside this one (mode 0600), never in it.
"""


def _moved_variables() -> dict[str, str]:
    """Each per-source `MCP_SQL_*` variable (of a field marked `per_source`) -> its key in a source's
    table."""
    return {variable_of(field): key for key, field in SOURCE_KEYS.items()}


def _toml(value: object) -> str:
    """A TOML value for the settings' types (bool, int, float, str, a tuple of str)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)  # a JSON string is a TOML basic string
    if isinstance(value, tuple) and all(isinstance(v, str) for v in value):
        return "[" + ", ".join(json.dumps(v) for v in value) + "]"
    raise TypeError(f"no TOML form for {type(value).__name__}")


def _developer_options(environ: Mapping[str, str]) -> dict[str, str]:
    """The per-source settings the developer set as variables, as TOML values.

    Validated by the server's own settings, beside the developer's other `MCP_*` variables (a
    statement timeout must stay below the call deadline...), but for those serve sets itself: an
    invalid one raises `SettingsError`, naming the variable."""
    moved = _moved_variables()
    own = {ENV_PREFIX + "SQL_DSN", ENV_PREFIX + "CONFIG", ENV_PREFIX + "SAFE_DATA_DIR"}
    settings = load_settings({n: v for n, v in environ.items() if n.startswith(ENV_PREFIX) and n not in own})
    given = sorted(name for name, value in environ.items() if name in moved and value)
    return {moved[name]: _toml(getattr(settings, SOURCE_KEYS[moved[name]])) for name in given}


def _write_private(path: Path, text: str) -> None:
    """`text` into `path`, mode 0600, whole: a temporary file renamed over it (never followed)."""
    staging = path.with_name(f".{path.name}.tmp")
    staging.unlink(missing_ok=True)
    fd = os.open(staging, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)
    staging.replace(path)


def write_sources_file(
    cluster: Cluster,
    environ: Mapping[str, str],
    *,
    directory: Path | None = None,
    names: Collection[str] = DEMO_SOURCES,
) -> Path:
    """Write the configuration file and its password files in `directory` (default `cluster.base`);
    returns its path. `names` keeps some of the demo's sources only (`make bench` compares one
    source with two)."""
    developer = _developer_options(environ)
    sources = (
        (
            "docs",
            "Documentation site (demo): pages per section and their published releases",
            cluster.dsn(READER_USER, None, DEMO_DB),
            cluster.reader_password,
            {"pool_max_size": str(READER_POOL)},
        ),
        (
            "ops",
            "Operations (demo): services, their deploys and their incidents",
            cluster.dsn(OPS_READER_USER, None, OPS_DB),
            cluster.ops_reader_password,
            # The role's CONNECTION LIMIT is 3: this pool and the audit's own connection.
            {"pool_max_size": str(OPS_READER_POOL), "max_rows": "100"},
        ),
    )
    where = cluster.base if directory is None else directory
    tables = []
    for name, description, dsn, password, own in sources:
        if name not in names:
            continue
        password_file = where / f"{name}.password"
        _write_private(password_file, password + "\n")
        options = {**own, **developer}  # the developer's variables win, as they would without a file
        lines = [
            "[[sources]]",
            f"name = {_toml(name)}",
            f"description = {_toml(description)}",
            f"dsn = {_toml(dsn)}",
            f"password_file = {_toml(str(password_file))}",
            *(f"{key} = {value}" for key, value in options.items()),
        ]
        tables.append("\n".join(lines) + "\n" + _CURATED[name])
    path = where / SOURCES_NAME
    _write_private(path, _HEADER + "\n" + "\n".join(tables))
    return path


def server_environ(cluster: Cluster, environ: Mapping[str, str]) -> dict[str, str]:
    """`environ` for the server: `MCP_CONFIG` naming the demo's file, without `MCP_SQL_DSN` nor
    the per-source variables the file now carries, nor the demo's own `MCP_DEVDB_DIR` (not a
    setting: the server would name it as another program's)."""
    path = write_sources_file(cluster, environ)
    dropped = {ENV_PREFIX + "SQL_DSN", ENV_PREFIX + "DEVDB_DIR", *_moved_variables()}
    env = {name: value for name, value in environ.items() if name not in dropped}
    env[ENV_PREFIX + "CONFIG"] = str(path)
    return env
