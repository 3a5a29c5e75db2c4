"""The tools' convention read from a source tree, and the hand-kept lists held to it.

A family is a package `mcp_suite/tools/<family>/` with an `opener.py`; its `__init__.py` declares the
family's `SCOPE`; each of its tools is a face `mcp_suite/tools/<family>/<tool>/tool.py` declaring its
`TOOL_NAME` (docs/architecture.md, "Adding a tool"). Everything here is read from the files (`ast`,
no import), so the checks run as well on a copy of the tree with a new tool in it
(tests/unit/tooling/test_adding_a_tool.py) as on this one (tests/unit/tooling/test_tool_convention.py,
which also shows the registry serving exactly these tools with these scopes).

Each `check_*` returns the problems it found, one sentence each, saying what to edit: empty when the
list agrees with the tools.
"""

from __future__ import annotations

import ast
import json
import re
import tomllib
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

__all__ = [
    "REPO",
    "Face",
    "Family",
    "check_layout",
    "check_manifest",
    "check_mutation_modules",
    "check_registry",
    "check_scope_docs",
    "check_setting_families",
    "check_smoke_lists",
    "check_tool_docs",
    "families",
    "fields_read",
]

REPO: Final = Path(__file__).resolve().parents[2]
# The docs that name every scope (the table of docs/operations/remote.md is checked row by row).
SCOPE_DOCS: Final = ("docs/operations/remote.md", "docs/operations/threat-model.md")
_SCOPE: Final = re.compile(r"^[a-z_]+:read$")
_NAME: Final = re.compile(r"^[a-z][a-z0-9_]*$")


@dataclass(frozen=True, slots=True)
class Face:
    family: str
    name: str
    path: Path


@dataclass(frozen=True, slots=True)
class Family:
    name: str
    scope: str | None
    path: Path
    faces: tuple[Face, ...]

    @property
    def tool_names(self) -> set[str]:
        return {face.name for face in self.faces}


def _constant(path: Path, name: str) -> object:
    """The literal value assigned to module-level `name` in `path` (None when there is none)."""
    for node in ast.parse(path.read_text()).body:
        target, value = None, None
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign):
            target, value = node.target, node.value
        if isinstance(target, ast.Name) and target.id == name and value is not None:
            if isinstance(value, ast.Call) and len(value.args) == 1:  # sorted([...]), frozenset({...})
                value = value.args[0]
            try:
                return ast.literal_eval(value)
            except ValueError:
                return None
    return None


def _tools_dir(root: Path) -> Path:
    return root / "mcp_suite" / "tools"


def families(root: Path = REPO) -> dict[str, Family]:
    """Every family of the tree by name, with its scope and its faces (in name order)."""
    found = {}
    for opener in sorted(_tools_dir(root).glob("*/opener.py")):
        path = opener.parent
        scope = _constant(path / "__init__.py", "SCOPE") if (path / "__init__.py").is_file() else None
        faces = tuple(
            Face(path.name, str(_constant(tool, "TOOL_NAME")), tool)
            for tool in sorted(path.glob("*/tool.py"))
        )
        found[path.name] = Family(path.name, scope if isinstance(scope, str) else None, path, faces)
    return found


def _all_tools(root: Path) -> set[str]:
    return {name for family in families(root).values() for name in family.tool_names}


def check_layout(root: Path = REPO) -> list[str]:
    """One layout in every family: `__init__` (SCOPE, MODELS), `opener`, `models`, a `policy` module
    or package, and faces alone in their packages, each with its own name."""
    problems = []
    seen: dict[str, str] = {}
    for family in families(root).values():
        where = f"mcp_suite/tools/{family.name}"
        if family.scope is None or not _SCOPE.match(family.scope):
            problems.append(f"{where}/__init__.py declares no SCOPE of the form '<family>:read'")
        init = family.path / "__init__.py"
        if not init.is_file() or not re.search(r"^MODELS\b.*= Lazy\(", init.read_text(), re.MULTILINE):
            problems.append(f"{where}/__init__.py has no MODELS seam (a Lazy)")
        if not (family.path / "models.py").is_file():
            problems.append(f"{where} has no models.py")
        if not any(family.path.rglob("policy.py")) and not any(family.path.rglob("policy/__init__.py")):
            problems.append(f"{where} has no policy module or package")
        if not family.faces:
            problems.append(f"{where} has no face (<tool>/tool.py)")
        for face in family.faces:
            package = face.path.parent
            others = sorted(
                p.name
                for p in package.iterdir()
                if p.name not in {"__init__.py", "tool.py", "__pycache__"} and not p.name.startswith(".")
            )
            if others:
                problems.append(
                    f"{where}/{package.name}/ holds {', '.join(others)}: a face package holds only its "
                    "tool.py; what one face alone needs lives in the family, where the contracts see it"
                )
            init = package / "__init__.py"
            if init.is_file() and any(
                not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant))
                for node in ast.parse(init.read_text()).body
            ):
                problems.append(f"{where}/{package.name}/__init__.py holds code: the face is its tool.py")
            if not _NAME.match(face.name):
                problems.append(f"{where}/{package.name}/tool.py declares no TOOL_NAME")
            elif face.name in seen:
                problems.append(f"two faces are named {face.name!r} ({seen[face.name]} and {family.name})")
            seen[face.name] = family.name
    return problems


def _imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


def check_registry(root: Path = REPO) -> list[str]:
    """The registry (`tools/registry.py`) opens every family: it names each family's opener."""
    imported = _imported_modules(_tools_dir(root) / "registry.py")
    return [
        f"tools/registry.py does not open the {name} family: import its opener into _BUILTIN"
        for name in families(root)
        if f"mcp_suite.tools.{name}.opener" not in imported
    ]


def check_manifest(root: Path = REPO) -> list[str]:
    """The MCP bundle's manifest (mcpb/manifest.json) lists every tool, and only those."""
    manifest = json.loads((root / "mcpb" / "manifest.json").read_text())
    listed = [tool["name"] for tool in manifest.get("tools", [])]
    problems = [
        f"mcpb/manifest.json lists {name!r} twice" for name in sorted(set(listed)) if listed.count(name) > 1
    ]
    served = _all_tools(root)
    problems += [f"mcpb/manifest.json does not list {name!r}" for name in sorted(served - set(listed))]
    problems += [
        f"mcpb/manifest.json lists {name!r}, which no face declares" for name in sorted(set(listed) - served)
    ]
    problems += [
        f"mcpb/manifest.json gives {tool['name']!r} no description"
        for tool in manifest.get("tools", [])
        if not str(tool.get("description", "")).strip()
    ]
    return problems


def _scope_rows(text: str) -> Iterator[tuple[str, list[str]]]:
    """The rows of the table headed `| scope | tools and resources |`: (scope, backticked names)."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.replace(" ", "") == "|scope|toolsandresources|")
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            return
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        scope = cells[0].strip("`")
        yield scope, [name for name in re.findall(r"`([^`]+)`", cells[1]) if _NAME.match(name)]


def check_scope_docs(root: Path = REPO) -> list[str]:
    """docs/operations/remote.md's scope table has one row per family naming exactly its tools, and
    the operator docs name every family's scope and no other."""
    problems = []
    fams = families(root)
    by_scope = {family.scope: family for family in fams.values() if family.scope is not None}
    rows = {
        scope: names for scope, names in _scope_rows((root / SCOPE_DOCS[0]).read_text()) if "<" not in scope
    }
    for scope, family in by_scope.items():
        if scope not in rows:
            problems.append(f"{SCOPE_DOCS[0]}: the scope table has no row for `{scope}` ({family.name})")
        elif set(rows[scope]) != family.tool_names:
            problems.append(
                f"{SCOPE_DOCS[0]}: the `{scope}` row names {sorted(rows[scope])}, "
                f"the {family.name} family serves {sorted(family.tool_names)}"
            )
    problems += [
        f"{SCOPE_DOCS[0]}: the scope table's `{scope}` is no family's"
        for scope in rows
        if scope not in by_scope
    ]
    for doc in SCOPE_DOCS:
        named = {m for m in re.findall(r"`([^`\s]+)`", (root / doc).read_text()) if _SCOPE.match(m)}
        problems += [f"{doc} does not name the scope `{scope}`" for scope in sorted(set(by_scope) - named)]
        problems += [
            f"{doc} names `{scope}`, which is no family's" for scope in sorted(named - set(by_scope))
        ]
    return problems


def check_tool_docs(root: Path = REPO) -> list[str]:
    """Every tool has its page, docs/tools/<tool>.md, and a place in docs/tools/README.md's table."""
    docs = root / "docs" / "tools"
    table = [line for line in (docs / "README.md").read_text().splitlines() if line.startswith("|")]
    named = {name for line in table for name in re.findall(r"`([a-z][a-z0-9_]*)`", line)}
    problems = [
        f"docs/tools/{name}.md does not exist"
        for name in sorted(_all_tools(root))
        if not (docs / f"{name}.md").is_file()
    ]
    problems += [
        f"docs/tools/README.md's table does not name {name!r}" for name in sorted(_all_tools(root) - named)
    ]
    return problems


def check_smoke_lists(root: Path = REPO) -> list[str]:
    """The container smoke tests expect every tool (containers/smoke_driver.py: the SQL family's with
    a DSN, the others always; containers/smoke_http.py: all of them, with every scope)."""
    problems = []
    fams = families(root)
    sql = fams["sql"].tool_names if "sql" in fams else set()
    driver = root / "containers" / "smoke_driver.py"
    expected = {
        "SQL_TOOLS": sql,
        "OTHER_TOOLS": _all_tools(root) - sql,
    }
    for name, tools in expected.items():
        listed = _constant(driver, name)
        if not isinstance(listed, list) or set(listed) != tools:
            problems.append(
                f"containers/smoke_driver.py's {name} is {listed!r}, the tools are {sorted(tools)}"
            )
    http = root / "containers" / "smoke_http.py"
    listed = _constant(http, "ALL_TOOLS")
    if not isinstance(listed, list) or set(listed) != _all_tools(root):
        problems.append(
            f"containers/smoke_http.py's ALL_TOOLS is {listed!r}, the tools are {sorted(_all_tools(root))}"
        )
    scopes = _constant(http, "ALL_SCOPES")
    family_scopes = {family.scope for family in fams.values()}
    if not isinstance(scopes, str) or set(scopes.split()) != family_scopes:
        problems.append(
            f"containers/smoke_http.py's ALL_SCOPES is {scopes!r}, "
            f"the scopes are {sorted(map(str, family_scopes))}"
        )
    return problems


def fields_read(path: Path, fields: Collection[str]) -> set[str]:
    """The settings fields a module reads (`<anything>.<field>`)."""
    return {
        node.attr
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Attribute) and node.attr in fields
    }


def check_setting_families(
    root: Path, variables: Mapping[str, str], setting_families: tuple[str, ...]
) -> list[str]:
    """A setting that one tool family alone reads is named in a setting family of ours
    (`settings.SETTING_FAMILIES`), so that a misspelling of it is refused, not ignored.

    `variables`: each settings field's variable. A field read outside the tool families (by the
    runtime, the CLI, ...), or whose variable is named there, is the server's, not a family's; the
    registry's enabling is not a read."""
    package = root / "mcp_suite"
    tools = _tools_dir(root)
    outside: set[str] = set()
    for path in package.rglob("*.py"):
        if (
            tools in path.parents
            or "settings" in path.relative_to(package).parts[:1]
            or path.stem == "settings"
        ):
            continue
        outside |= fields_read(path, variables)
        # A variable the server names itself (the CLI's `--config` is MCP_CONFIG) is the server's.
        text = path.read_text()
        outside |= {field for field, variable in variables.items() if f'"{variable}"' in text}
    problems = []
    for family in families(root).values():
        own = set().union(*(fields_read(path, variables) for path in family.path.rglob("*.py"))) - outside
        problems += [
            f"{variables[field]} (read by the {family.name} family only) is in no setting family: "
            f"add its prefix to SETTING_FAMILIES"
            for field in sorted(own)
            if not variables[field].startswith(setting_families)
        ]
    return problems


def check_mutation_modules(root: Path = REPO) -> list[str]:
    """Every guardrail module of `[tool.mutmut]` exists, and one under `tools/` is a family's."""
    config = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["mutmut"]
    problems = [
        f"[tool.mutmut] names {path}, which does not exist"
        for path in config["only_mutate"]
        if not (root / path).is_file()
    ]
    fams = families(root)
    for path in config["only_mutate"]:
        parts = Path(path).parts
        if parts[:2] == ("mcp_suite", "tools") and len(parts) > 3 and parts[2] not in fams:
            problems.append(f"[tool.mutmut] names {path}, in no tool family")
    return problems
