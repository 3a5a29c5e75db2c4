"""The wheel as a user gets it: built from a copy of the checkout's sources, and installed in a
clean virtual environment with its declared requirements only.

The environment is made offline: each requirement's distribution is taken from this venv (the
locked versions `make venv` installed), resolved from the wheel's own metadata (core, then the
extras asked for, following each distribution's requirements and extras), and its files linked
into the new venv's site-packages. pip then installs the wheel with `--no-index`, so it must find
every declared requirement already satisfied; nothing else is there to import.
"""

from __future__ import annotations

import importlib.metadata
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

REPO: Final = Path(__file__).resolve().parents[2]
GUIDE: Final = Path("docs", "tools", "postgres-role-guide.sql")
# What the build reads: the package, its metadata, and what setup.py copies into the wheel.
SOURCES: Final = ("pyproject.toml", "setup.py", "README.md", "LICENSE", "mcp_suite", "examples", str(GUIDE))


def build_wheel(work: Path) -> Path:
    """`pip wheel` of a copy of the sources (no build isolation: this venv's setuptools, offline)."""
    source = work / "src"
    for name in SOURCES:
        if (REPO / name).is_dir():
            shutil.copytree(REPO / name, source / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, source / name)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(work),
            ".",
        ],
        cwd=source,
        check=True,
        capture_output=True,
        timeout=300,
    )
    (built,) = work.glob("mcp_suite-*.whl")
    return built


def wheel_modules(wheel: Path) -> list[str]:
    """Every module the wheel installs, dotted, from its RECORD."""
    with zipfile.ZipFile(wheel) as archive:
        (record,) = (n for n in archive.namelist() if n.endswith(".dist-info/RECORD"))
        paths = [line.split(",", 1)[0] for line in archive.read(record).decode().splitlines()]
    modules = []
    for path in paths:
        if path.endswith(".py"):
            parts = path.removesuffix(".py").split("/")
            modules.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return sorted(modules)


def requirement_closure(requirements: Iterable[str], extras: Iterable[str] = ()) -> set[str]:
    """The installed distributions that `requirements` need (for the `extras` of the project that
    declares them), following each one's own requirements and the extras asked of it."""
    wanted = [(Requirement(text), frozenset(extras)) for text in requirements]
    found: dict[str, set[str]] = {}  # distribution -> the extras asked of it so far
    while wanted:
        requirement, asked = wanted.pop()
        if requirement.marker is not None and not any(
            requirement.marker.evaluate({"extra": extra}) for extra in asked or {""}
        ):
            continue
        name = canonicalize_name(requirement.name)
        new_extras = set(requirement.extras) - found.get(name, set())
        if name in found and not new_extras:
            continue
        found.setdefault(name, set()).update(requirement.extras)
        dist = importlib.metadata.distribution(name)
        wanted.extend((Requirement(text), frozenset(found[name])) for text in dist.requires or ())
    return set(found)


@dataclass(frozen=True, slots=True)
class CleanVenv:
    root: Path

    @property
    def python(self) -> Path:
        return self.root / "bin" / "python"

    @property
    def site_packages(self) -> Path:
        (found,) = (self.root / "lib").glob("python3*/site-packages")
        return found

    def script(self, name: str) -> Path:
        return self.root / "bin" / name


def open_clean_venv(root: Path) -> CleanVenv:
    """A new venv with no package at all (`--without-pip`: this venv's pip installs into it)."""
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(root)],
        check=True,
        capture_output=True,
        timeout=120,
    )
    return CleanVenv(root)


def link_distributions(venv: CleanVenv, names: Iterable[str]) -> None:
    """Each installed distribution's files (those below site-packages: its modules, data and
    metadata, not its scripts) into `venv`, hard-linked when the file system allows, else copied."""
    ours = Path(sysconfig.get_paths()["purelib"]).resolve()
    for name in sorted(names):
        dist = importlib.metadata.distribution(name)
        for file in dist.files or ():
            source = Path(str(dist.locate_file(file))).resolve()
            if not source.is_relative_to(ours) or not source.is_file():
                continue  # a console script in bin/, or a RECORD entry not installed
            target = venv.site_packages / source.relative_to(ours)
            target.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.link(source, target)
            except FileExistsError:
                pass
            except OSError:
                shutil.copy2(source, target)


def install_wheel(venv: CleanVenv, wheel: Path, extras: Iterable[str] = ()) -> None:
    """`pip install --no-index '<wheel>[extras]'` into `venv`: it fails unless every requirement
    the wheel declares for them is already there."""
    spec = f"{wheel}[{','.join(extras)}]" if extras else str(wheel)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(venv.python),
            "install",
            "-q",
            "--no-index",
            "--disable-pip-version-check",
            spec,
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
