"""docs/architecture.md's "Adding a tool", proved on a copy of the tree: a throwaway 7th tool
(`clock_time`, in a new family `clock`) is added step by step, and after each step exactly the checks
of the steps still to do fail: the family's layout, the registry, the bundle manifest, the scope docs,
the container smoke lists and the setting families (tests/support/convention.py). The import
contracts guard the new family as they stand: each mistake a new tool can make breaks its contract
with pyproject.toml unedited.

The settings step is shown on the field-to-variable table the check reads (the new family reads
`settings.clock_zone`, whose variable would be `MCP_CLOCK_ZONE`): its own module's tests hold the real
edit (a field is documented in docs/configuration.md, tests/unit/test_settings*.py).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from mcp_suite.settings import SETTING_FAMILIES, Settings, variable_of
from tests.support import convention

# What the checks read, copied into the throwaway tree.
COPIED = (
    "pyproject.toml",
    "mcpb/manifest.json",
    "containers/smoke_driver.py",
    "containers/smoke_http.py",
    *convention.SCOPE_DOCS,
)

INIT = '''\
"""The clock family: `clock_time` (a throwaway tool of tests/unit/tooling/test_adding_a_tool.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from mcp_suite.lazy import Lazy

if TYPE_CHECKING:
    from mcp_suite.tools.clock.models import ClockModels

SCOPE: Final = "clock:read"


def _import_models() -> ClockModels:
    from mcp_suite.tools.clock.models import LOADED

    return LOADED


MODELS: Final = Lazy(_import_models)
'''

OPENER = '''\
"""The clock family's opener."""

from __future__ import annotations

import contextlib

from mcp_suite.settings import Settings
from mcp_suite.tools.base import Toolset
from mcp_suite.tools.clock.clock_time import tool as clock_tool


@contextlib.contextmanager
def open_clock(settings: Settings) -> Iterator[Toolset | None]:
    yield Toolset(guidance="clock_time tells the time.", tools=(clock_tool.spec(settings),))
'''

MODELS = '''\
"""The clock family's models."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from mcp_suite.tools.models import StrictModel


class ClockTimeArgs(StrictModel):
    """No arguments."""


class ClockTimeResult(StrictModel):
    seconds: float
    zone: str


@dataclass(frozen=True, slots=True)
class ClockModels:
    args: type[ClockTimeArgs]
    result: type[ClockTimeResult]


LOADED: Final = ClockModels(args=ClockTimeArgs, result=ClockTimeResult)
'''

POLICY = '''\
"""The clock family's pure decisions."""

from __future__ import annotations


def rounded(seconds: float) -> float:
    return round(max(0.0, seconds), 3)
'''

FACE = '''\
"""`clock_time`: the face."""

from __future__ import annotations

import time
from typing import Final

from mcp_suite.lazy import Lazy
from mcp_suite.settings import Settings
from mcp_suite.tools.base import ToolSpec
from mcp_suite.tools.clock import MODELS, SCOPE
from mcp_suite.tools.clock.policy import rounded

TOOL_NAME: Final = "clock_time"


def spec(settings: Settings) -> ToolSpec:
    zone = settings.clock_zone

    async def call(args: object) -> object:
        return MODELS.get().result(seconds=rounded(time.time()), zone=zone)

    return ToolSpec(
        name=TOOL_NAME,
        title="Clock",
        description="The time.",
        models=Lazy(lambda: (MODELS.get().args, MODELS.get().result)),
        call=call,
        scope=SCOPE,
    )
'''


def _variables(clock: bool) -> dict[str, str]:
    found = {}
    for field in dataclasses.fields(Settings):
        with contextlib.suppress(KeyError):
            found[field.name] = variable_of(field.name)
    if clock:  # the settings step: a field of the family's own
        found["clock_zone"] = "MCP_CLOCK_ZONE"
    return found


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "tree"
    shutil.copytree(
        convention.REPO / "mcp_suite", root / "mcp_suite", ignore=shutil.ignore_patterns("__pycache__")
    )
    shutil.copytree(convention.REPO / "docs" / "tools", root / "docs" / "tools")
    for name in COPIED:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(convention.REPO / name, root / name)
    return root


def _write(root: Path, path: str, text: str) -> None:
    (root / path).parent.mkdir(parents=True, exist_ok=True)
    (root / path).write_text(text)


def _edit(root: Path, path: str, after: str, insert: str) -> None:
    """Insert `insert` after the first line of `path` that contains `after`."""
    lines = (root / path).read_text().splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if after in line)
    lines.insert(at + 1, insert)
    (root / path).write_text("".join(lines))


def _replace(root: Path, path: str, old: str, new: str) -> None:
    text = (root / path).read_text()
    assert old in text, (path, old)
    (root / path).write_text(text.replace(old, new, 1))


def broken_contracts(root: Path) -> set[str]:
    """The import-linter contracts of the tree's pyproject.toml that its package breaks."""
    env = {**os.environ, "PYTHONPATH": str(root)}
    lint = Path(sys.executable).with_name("lint-imports")
    done = subprocess.run(
        [str(lint), "--config", "pyproject.toml", "--no-cache"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    out = " ".join(done.stdout.split())  # a contract's name wraps over lines
    assert "Contracts:" in out, done.stdout + done.stderr
    contracts = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    names = [" ".join(contract["name"].split()) for contract in contracts]
    assert all(f"{name} KEPT" in out or f"{name} BROKEN" in out for name in names), out
    return {name for name in names if f"{name} BROKEN" in out}


def failing(root: Path, setting_families: tuple[str, ...] = SETTING_FAMILIES) -> set[str]:
    """The hand-kept lists and layout checks that disagree with the tree's tools."""
    clock = (root / "mcp_suite/tools/clock").is_dir()
    checks = {
        "layout": convention.check_layout(root),
        "registry": convention.check_registry(root),
        "manifest": convention.check_manifest(root),
        "scope docs": convention.check_scope_docs(root),
        "smoke lists": convention.check_smoke_lists(root),
        "tool docs": convention.check_tool_docs(root),
        "setting families": convention.check_setting_families(root, _variables(clock), setting_families),
        "mutation list": convention.check_mutation_modules(root),
    }
    return {name for name, problems in checks.items() if problems}


def test_a_new_tool_fails_the_checks_of_each_step_not_yet_done(tree: Path) -> None:
    assert failing(tree) == set()

    # 1. The family: its package (SCOPE, MODELS) and its opener.
    _write(tree, "mcp_suite/tools/clock/__init__.py", INIT)
    _write(tree, "mcp_suite/tools/clock/opener.py", OPENER)
    assert failing(tree) == {"layout", "registry", "scope docs", "smoke lists"}
    assert convention.check_layout(tree) == [
        "mcp_suite/tools/clock has no models.py",
        "mcp_suite/tools/clock has no policy module or package",
        "mcp_suite/tools/clock has no face (<tool>/tool.py)",
    ]

    # 2-4. Its policy, its models and its face (which reads a setting of its own).
    _write(tree, "mcp_suite/tools/clock/policy.py", POLICY)
    _write(tree, "mcp_suite/tools/clock/models.py", MODELS)
    _write(tree, "mcp_suite/tools/clock/clock_time/__init__.py", "")
    _write(tree, "mcp_suite/tools/clock/clock_time/tool.py", FACE)
    _write(tree, "mcp_suite/tools/clock/clock_time/zones.py", "ZONES = ('UTC',)\n")
    assert convention.check_layout(tree) == [
        "mcp_suite/tools/clock/clock_time/ holds zones.py: a face package holds only its tool.py; what "
        "one face alone needs lives in the family, where the contracts see it"
    ]
    (tree / "mcp_suite/tools/clock/clock_time/zones.py").rename(tree / "mcp_suite/tools/clock/zones.py")
    assert failing(tree) == {
        "registry",
        "manifest",
        "scope docs",
        "smoke lists",
        "setting families",
        "tool docs",
    }
    # ... the setting, named in a family of ours.
    families = (*SETTING_FAMILIES, "MCP_CLOCK_")
    assert failing(tree, families) == {"registry", "manifest", "scope docs", "smoke lists", "tool docs"}

    # 5. Served: the registry opens the family.
    _edit(
        tree,
        "mcp_suite/tools/registry.py",
        "from mcp_suite.tools.metrics.opener import",
        "from mcp_suite.tools.clock.opener import open_clock\n",
    )
    _edit(tree, "mcp_suite/tools/registry.py", "(open_metrics,", "    (open_clock, lambda s: True),\n")
    assert failing(tree, families) == {"manifest", "scope docs", "smoke lists", "tool docs"}

    # 7. Its page, and its row in the tools' table.
    _write(tree, "docs/tools/clock_time.md", "# clock_time\n")
    assert failing(tree, families) == {"manifest", "scope docs", "smoke lists", "tool docs"}
    _edit(
        tree, "docs/tools/README.md", "| Host (", "| Clock | `clock_time` | [clock_time](clock_time.md) |\n"
    )
    assert failing(tree, families) == {"manifest", "scope docs", "smoke lists"}

    # 8. The hand-kept lists: the bundle's manifest, the scope docs, the container smoke tests.
    _replace(
        tree,
        "mcpb/manifest.json",
        '"tools": [\n',
        '"tools": [\n    {"name": "clock_time", "description": "The time"},\n',
    )
    assert failing(tree, families) == {"scope docs", "smoke lists"}
    _edit(
        tree,
        "docs/operations/remote.md",
        "| `metrics:read` | `system_metrics` |",
        "| `clock:read` | `clock_time` |\n",
    )
    assert failing(tree, families) == {"scope docs", "smoke lists"}  # the docs name every scope
    for doc in convention.SCOPE_DOCS:
        _replace(tree, doc, "`metrics:read`", "`metrics:read`, `clock:read`")
    assert failing(tree, families) == {"smoke lists"}
    _replace(tree, "containers/smoke_driver.py", '"system_metrics"]', '"system_metrics", "clock_time"]')
    _replace(tree, "containers/smoke_http.py", '"system_metrics"]', '"system_metrics", "clock_time"]')
    _replace(tree, "containers/smoke_http.py", 'metrics:read"', 'metrics:read clock:read"')
    assert failing(tree, families) == set()

    # The import contracts hold the new family as pyproject.toml stands.
    assert broken_contracts(tree) == set()


OPENERS = "a tool face, and every module of a family, imports no opener and not the registry"
FAMILIES = "the tool families are independent (every tools.<family>)"
FACES = "the tool faces do not import each other (every tools.<family>.<tool>.tool)"
POLICY_MODULES = "policy modules do no I/O (every tools.**.policy, and the pure modules named here)"

# A mistake: the module it is made in, the line it adds, the contracts it breaks.
MISTAKES: dict[str, tuple[str, str, set[str]]] = {
    "the face imports its family's opener": (
        "mcp_suite/tools/clock/clock_time/tool.py",
        "from mcp_suite.tools.clock.opener import open_clock  # noqa: F401\n",
        {OPENERS},
    ),
    "the face imports the registry": (
        "mcp_suite/tools/clock/clock_time/tool.py",
        "from mcp_suite.tools.registry import Registry  # noqa: F401\n",
        {OPENERS, FAMILIES, FACES},  # through the registry, every face
    ),
    "a second face imports the first": (
        "mcp_suite/tools/clock/clock_date/tool.py",
        "from mcp_suite.tools.clock.clock_time import tool  # noqa: F401\n",
        {FACES},
    ),
    "the policy does I/O": (
        "mcp_suite/tools/clock/policy.py",
        "import trio  # noqa: F401\n",
        {POLICY_MODULES},
    ),
    "the family imports another family": (
        "mcp_suite/tools/clock/policy.py",
        "from mcp_suite.tools.files.policy import MAX_COMPONENTS  # noqa: F401\n",
        {FAMILIES},
    ),
}


@pytest.mark.parametrize("mistake", list(MISTAKES))
def test_the_import_contracts_guard_a_new_tool_without_an_edit_of_pyproject(tree: Path, mistake: str) -> None:
    _write(tree, "mcp_suite/tools/clock/__init__.py", INIT)
    _write(tree, "mcp_suite/tools/clock/opener.py", OPENER)
    _write(tree, "mcp_suite/tools/clock/policy.py", POLICY)
    _write(tree, "mcp_suite/tools/clock/models.py", MODELS)
    _write(tree, "mcp_suite/tools/clock/clock_time/__init__.py", "")
    _write(tree, "mcp_suite/tools/clock/clock_time/tool.py", FACE)
    _write(tree, "mcp_suite/tools/clock/clock_date/__init__.py", "")
    _write(tree, "mcp_suite/tools/clock/clock_date/tool.py", '"""A second face."""\n')
    path, line, contracts = MISTAKES[mistake]
    assert broken_contracts(tree) == set()
    _replace(tree, path, '"""\n', '"""\n' + line)
    assert broken_contracts(tree) == contracts
