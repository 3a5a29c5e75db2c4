"""What the installed package imports, and whether its metadata declares it (the wheel ships what it
declares). Shared by the static check (tests/unit/tooling/test_declared_imports.py, every module of the
checkout) and the wheel test (tests/packaging/test_wheel_venv.py, a clean venv)."""

from __future__ import annotations

import ast
import functools
import importlib.metadata
import importlib.util
import sys
import tomllib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

REPO: Final = Path(__file__).resolve().parents[2]
# The modules that belong to an extra: only they may import its distributions, and only when it is
# installed (the CLI loads `runtime.telemetry` when telemetry is configured, else refuses).
EXTRA_OF: Final = {"mcp_suite.runtime.telemetry": "otel"}


@dataclass(frozen=True, slots=True)
class ForeignImport:
    module: str  # the importing module, dotted
    imported: str  # what it imports, dotted
    line: int


def foreign_imports(module: str, source: str) -> Iterator[ForeignImport]:
    """Every absolute import in `source` of something neither the standard library nor mcp_suite:
    at module level, in functions, and under `if TYPE_CHECKING` alike."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            continue
        for name in names:
            top = name.partition(".")[0]
            if top not in sys.stdlib_module_names and top not in {"mcp_suite", "__future__"}:
                yield ForeignImport(module, name, node.lineno)


def package_modules(root: Path) -> Iterator[tuple[str, Path]]:
    """(dotted name, file) of every module below `root`, the directory holding `mcp_suite/`."""
    for path in sorted((root / "mcp_suite").rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        yield ".".join(parts[:-1] if parts[-1] == "__init__" else parts), path


def declared(pyproject: Mapping[str, object]) -> dict[str | None, set[str]]:
    """Distribution names the metadata declares: None -> the core ones, "<extra>" -> that extra's."""
    project = pyproject["project"]
    assert isinstance(project, dict)
    names: dict[str | None, set[str]] = {None: {_name(r) for r in project["dependencies"]}}
    for extra, requirements in project["optional-dependencies"].items():
        names[extra] = {_name(r) for r in requirements}
    return names


def _name(requirement: str) -> str:
    return canonicalize_name(Requirement(requirement).name)


@functools.cache
def _providers() -> Mapping[str, list[str]]:
    """Top-level import name -> the installed distributions that provide it (read once)."""
    return importlib.metadata.packages_distributions()


def distributions_of(imported: str) -> set[str]:
    """The installed distributions that provide `imported` (several for a namespace such as
    `opentelemetry`: then the one whose files hold the module, when it can be found)."""
    providers: set[str] = {canonicalize_name(d) for d in _providers().get(imported.partition(".")[0], [])}
    if len(providers) <= 1:
        return providers
    try:
        spec = importlib.util.find_spec(imported)
    except (ImportError, ValueError):
        spec = None
    origin = Path(spec.origin).resolve() if spec is not None and spec.origin else None
    for name in providers:
        dist = importlib.metadata.distribution(name)
        for file in dist.files or ():
            if origin is not None and Path(str(dist.locate_file(file))).resolve() == origin:
                return {name}
    return providers


def undeclared_imports(imports: Iterable[ForeignImport], pyproject: Mapping[str, object]) -> list[str]:
    """One line for each import whose distribution the importing module's requirements do not
    declare: core for every module, plus its extra's for a module of `EXTRA_OF`."""
    names = declared(pyproject)
    problems = []
    for found in imports:
        extra = EXTRA_OF.get(found.module)
        allowed = names[None] | (names[extra] if extra else set())
        providers = distributions_of(found.imported)
        if not providers & allowed:
            given = ", ".join(sorted(providers)) or "no installed distribution"
            requirements = (
                f"the {extra} extra and the core requirements" if extra else "the core requirements"
            )
            where = f"{found.module}:{found.line}"
            problems.append(f"{where} imports {found.imported} ({given}): {requirements} do not declare it")
    return problems


def load_pyproject(root: Path = REPO) -> dict[str, object]:
    return tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
