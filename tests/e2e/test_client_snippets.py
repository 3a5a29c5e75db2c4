"""Every snippet of docs/operations/clients.md, run as printed, the way its client starts it.

The snippets are read from the markdown itself, so a change of the docs is a change of this test. A
user replaces the placeholders of the page's table (`/path/to/mcp-suite`, `/path/to/data`, `<dsn>`)
and nothing else; so does `fill`. Then:

- a JSON client configuration (`mcpServers` or VS Code's `servers`) is started through the official
  MCP Python SDK from its `command`, `args` and `env` alone, with the SDK's minimal inherited
  environment, as a GUI client starts it (no `CONTAINERS_CONF`, no venv on `PATH`); VS Code's
  `${workspaceFolder}` and `${input:…}` are replaced the way VS Code does. The session lists the
  tools and lists the data folder through `sandbox_fs_list`;
- the bare container argument list is the same with `podman` as the command;
- a shell snippet runs through `bash -c`: `claude mcp add …` through a stand-in `claude` that records
  the entry (name, `--env` pairs, the command after `--`), which is then started like a JSON one;
  the by-hand pipe into `containers/run.sh` is checked by its output;
- `wsl.exe` is a stand-in that passes only the variables `WSLENV` names (Windows' rule) and runs
  the Linux command after `--`: it proves every variable of the entry crosses over.

The container snippets need the image, built by `containers/smoke.sh` (minutes: too slow for `make
test`), which runs them right after its build (`pytest -m container`); `make test` runs the others
(`-m "not container"` is the default in pyproject.toml). The DSN given for `<dsn>` is the demo
cluster's reader on the local path and an unreachable socket in the container (which has no
network and no database: the server starts and registers the SQL tools all the same).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import trio
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from mcp_suite.demo.cluster import Cluster
from tests.support.client import REPO

pytestmark = pytest.mark.e2e

DOC = REPO / "docs" / "operations" / "clients.md"
SQL_TOOLS = {"read_only_sql", "sql_schema", "explain_sql"}
BASE_TOOLS = {"system_metrics", "sandbox_fs_list", "sandbox_fs_read"}
MARKER_FILE = "snippet-marker.txt"
# Inside the container: a socket folder that does not exist there (--network none, no mount).
CONTAINER_DSN = "host=/nonexistent-socket-dir dbname=app user=mcp_reader"


@dataclass(frozen=True)
class Snippet:
    section: str  # the `## ` heading it is under
    index: int  # its place in the page
    language: str  # json or sh
    text: str

    @property
    def container(self) -> bool:
        bare_arguments = self.text.lstrip().startswith("[")  # the container argument list alone
        return bare_arguments or "podman" in self.text or "containers/run.sh" in self.text

    @property
    def id(self) -> str:
        where = re.sub(r"[^a-z0-9]+", "-", self.section.lower()).strip("-") or "top"
        return f"{self.index:02d}-{where}-{self.language}{'-container' if self.container else ''}"


def snippets() -> list[Snippet]:
    """Every ```json and ```sh block of the page, with the section it is in."""
    found: list[Snippet] = []
    section = ""
    for match in re.finditer(
        r"^## (?P<h>[^\n]+)$|^```(?P<lang>\w+)\n(?P<body>.*?)^```$", _doc(), re.M | re.S
    ):
        if match["h"] is not None:
            section = match["h"]
        elif match["lang"] in ("json", "sh"):
            found.append(Snippet(section, len(found), match["lang"], match["body"]))
    return found


def _doc() -> str:
    return DOC.read_text(encoding="utf-8")


def _params(snippets_: list[Snippet]) -> list[Any]:
    return [pytest.param(s, id=s.id, marks=[pytest.mark.container] if s.container else []) for s in snippets_]


def fill(text: str, *, data: Path, dsn: str, config: Path | None = None) -> str:
    """The user's edit: the placeholders of the page's table, nothing else (`config`: the
    configuration file written for `/path/to/sources.toml`)."""
    return (
        text.replace("/path/to/mcp-suite", str(REPO))
        .replace("/path/to/data", str(data))
        .replace("/path/to/sources.toml", str(config or "/nonexistent/sources.toml"))
        .replace("<dsn>", dsn)
    )


def _config_file(tmp_path: Path, dsn: str) -> Path:
    """A configuration file naming one source, `<dsn>` without its password (in a file of its own)."""
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    options = conninfo_to_dict(dsn)
    password = options.pop("password", None)
    lines = ['[[sources]]\nname = "app"\ndescription = "The app database"\n']
    if password is not None:
        secret = tmp_path / "app.password"
        secret.write_text(f"{password}\n")
        secret.chmod(0o600)
        lines.append(f'password_file = "{secret}"\n')
    lines.append(f'dsn = "{make_conninfo(**{k: str(v) for k, v in options.items()})}"\n')
    path = tmp_path / "sources.toml"
    path.write_text("".join(lines))
    return path


@dataclass(frozen=True)
class Entry:
    command: str
    args: list[str]
    env: dict[str, str]


def entries_of(document: Any, *, workspace: Path, dsn: str) -> list[Entry]:
    """The server entries of one JSON snippet, as its client reads them."""
    if isinstance(document, list):  # the bare container argument list
        return [Entry("podman", [str(a) for a in document], {})]
    inputs = {i["id"]: dsn for i in document.get("inputs", [])}  # VS Code prompts; the user types the DSN

    def vscode(value: str) -> str:
        value = value.replace("${workspaceFolder}", str(workspace))
        return re.sub(r"\$\{input:([^}]+)\}", lambda m: inputs[m[1]], value)

    servers = document.get("mcpServers") or document.get("servers")
    assert isinstance(servers, dict)
    assert servers, "a client configuration names at least one server"
    return [
        Entry(
            vscode(server["command"]),
            [vscode(a) for a in server.get("args", [])],
            {k: vscode(v) for k, v in server.get("env", {}).items()},
        )
        for server in servers.values()
    ]


async def _session(entry: Entry, *, sql: bool) -> None:
    """Start the entry as an MCP client does, list the tools and the data folder."""
    params = StdioServerParameters(command=entry.command, args=entry.args, env=entry.env or None)
    with tempfile.TemporaryFile("w+", encoding="utf-8") as errlog:
        try:
            with trio.fail_after(90):
                async with Client(stdio_client(params, errlog=errlog)) as client:
                    tools = {tool.name for tool in (await client.list_tools()).tools}
                    assert tools == BASE_TOOLS | (SQL_TOOLS if sql else set())
                    listed = await client.call_tool("sandbox_fs_list", {})
                    assert listed.is_error is False
                    assert listed.structured_content is not None
                    names = [e["name"] for e in listed.structured_content["entries"]]
                    assert MARKER_FILE in names
        except BaseException:
            errlog.seek(0)
            sys.stderr.write(errlog.read()[-4000:])
            raise


@pytest.fixture
def stand_ins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """`claude` and `wsl.exe` stand-ins on PATH; yields where `claude mcp add` records its entry."""
    bin_dir = tmp_path / "stand-in-bin"
    bin_dir.mkdir()
    record = tmp_path / "claude-entry.json"
    (bin_dir / "claude").write_text(_CLAUDE.replace("RECORD", str(record)).replace("PYTHON", sys.executable))
    (bin_dir / "wsl.exe").write_text(_WSL.replace("PYTHON", sys.executable))
    for tool in bin_dir.iterdir():
        tool.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    return record


_CLAUDE = """#!PYTHON
# Stand-in for `claude mcp add NAME [--scope S] [--env K=V]... -- COMMAND ARGS...`: records the entry.
import json, sys
args = sys.argv[1:]
assert args[:2] == ["mcp", "add"], args
sep = args.index("--")
options, command = args[2:sep], args[sep + 1:]
name, env, i = options[0], {}, 1
while i < len(options):
    if options[i] in ("--env", "-e"):
        key, _, value = options[i + 1].partition("=")
        env[key] = value
    elif options[i] not in ("--scope", "-s"):
        sys.exit("claude stand-in: unknown option " + options[i])
    i += 2
with open("RECORD", "w") as out:
    json.dump({"name": name, "command": command[0], "args": command[1:], "env": env}, out)
"""

_WSL = """#!PYTHON
# Stand-in for wsl.exe [-d DISTRO] -- ARGV: Linux sees only the variables WSLENV names (flag u or none).
import os, sys
args = sys.argv[1:]
if args[:1] == ["-d"]:
    args = args[2:]
assert args[:1] == ["--"], args
env = {k: os.environ[k] for k in ("PATH", "HOME", "LANG") if k in os.environ}
for item in filter(None, os.environ.get("WSLENV", "").split(":")):
    name, _, flags = item.partition("/")
    if set(flags) <= {"u"} and name in os.environ:
        env[name] = os.environ[name]
os.execvpe(args[1], args[1:], env)
"""


def _data_folder(tmp_path: Path) -> Path:
    data = tmp_path / "data"
    data.mkdir()
    (data / MARKER_FILE).write_text("from the docs' snippet test\n")
    data.chmod(0o755)  # the container's user 10001 reads it
    (data / MARKER_FILE).chmod(0o644)
    return data


async def _run(snippet: Snippet, tmp_path: Path, record: Path, dsn: str) -> None:
    data = _data_folder(tmp_path)
    text = fill(snippet.text, data=data, dsn=dsn, config=_config_file(tmp_path, dsn))
    if snippet.language == "json":
        workspace = tmp_path / "workspace"
        workspace.mkdir()
        shutil.copytree(data, workspace / "docs")  # VS Code's example exposes ${workspaceFolder}/docs
        (workspace / "docs").chmod(0o755)
        for entry in entries_of(json.loads(text), workspace=workspace, dsn=dsn):
            await _session(entry, sql="MCP_SQL_DSN" in entry.env or "--config" in entry.args)
    elif "claude mcp add" in text:
        await trio.to_thread.run_sync(lambda: subprocess.run(["bash", "-c", text], check=True, timeout=60))
        recorded = json.loads(record.read_text())
        assert recorded["name"] == "mcp-suite"
        entry = Entry(recorded["command"], recorded["args"], recorded["env"])
        await _session(entry, sql="MCP_SQL_DSN" in entry.env)
    else:
        _by_hand(text)


def _by_hand(text: str) -> None:
    """The printf | containers/run.sh pipe: its stdout is the two answers, and nothing else."""
    proc = subprocess.run(
        ["bash", "-c", text], cwd=REPO, capture_output=True, text=True, timeout=300, check=False
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    answers = {m["id"]: m for m in map(json.loads, proc.stdout.splitlines())}
    assert set(answers) == {1, 2}, proc.stdout
    assert answers[1]["result"]["serverInfo"]["name"] == "mcp-suite"
    assert {t["name"] for t in answers[2]["result"]["tools"]} == BASE_TOOLS


def test_the_page_has_the_snippets_this_test_knows() -> None:
    found = snippets()
    languages = [s.language for s in found]
    assert languages.count("sh") == 3  # Claude Code local and container, by hand
    assert languages.count("json") == 10
    assert sum(s.container for s in found) == 7
    assert {s.section for s in found} >= {
        "Claude Desktop",
        "Claude Code",
        "Cursor",
        "VS Code",
        "Windows (WSL 2)",
    }


@pytest.mark.pg
@pytest.mark.parametrize("snippet", _params([s for s in snippets() if not s.container]))
async def test_a_local_snippet_serves_as_printed(
    snippet: Snippet, tmp_path: Path, stand_ins: Path, demo_cluster: Cluster
) -> None:
    await _run(snippet, tmp_path, stand_ins, demo_cluster.reader_dsn)


@pytest.mark.parametrize("snippet", _params([s for s in snippets() if s.container]))
async def test_a_container_snippet_serves_as_printed(
    snippet: Snippet, tmp_path: Path, stand_ins: Path
) -> None:
    assert shutil.which("podman"), "the container snippets run where containers/smoke.sh built the image"
    await _run(snippet, tmp_path, stand_ins, CONTAINER_DSN)


def test_fill_replaces_only_the_placeholders_of_the_table() -> None:
    text = (
        '{"command": "/path/to/mcp-suite/.venv/bin/mcp-suite", "env": {"D": "/path/to/data", "S": "<dsn>"}}'
    )
    filled = json.loads(fill(text, data=Path("/d"), dsn="host=h"))
    assert filled == {"command": f"{REPO}/.venv/bin/mcp-suite", "env": {"D": "/d", "S": "host=h"}}
    assert shlex.split(fill("a <dsn>", data=Path("/d"), dsn="x")) == ["a", "x"]
