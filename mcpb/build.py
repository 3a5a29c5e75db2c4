"""`make mcpb`: the MCP bundle for Claude Desktop (`dist/mcp-suite-<version>.mcpb`) and the MCP
registry's `dist/server.json` (docs/operations/bundle.md).

The bundle is a `python` bundle: `server/main.py` (mcpb/launch.py) and, in `server/lib`, mcp-suite
and every locked dependency of the runtime and of the demo (requirements/demo.txt, by hash; not its
build tool), as wheels for this machine's platform and Python version, which the manifest declares
(`compatibility`). Build it on the kind of computer it is for. The manifest is validated and packed
by the official `@anthropic-ai/mcpb` CLI (pinned by mcpb/cli/package-lock.json, installed with npm ci
into .venv/npm on first use). `server.json` is validated against the registry's published schema as
the `skillsaw` package ships it (a byte-for-byte copy of the released file, by its `$id`), offline.

    python -m mcpb.build [--out dist] [--url URL] [--registry-name NAME]

`--url` is where the bundle will be downloaded from (the registry entry's `identifier`); without it
the entry names the file alone, which validates but must be replaced before publishing.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
import tomllib
from importlib import resources
from pathlib import Path
from typing import Any

from bench.common import npm_ci_once

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
REGISTRY_SCHEMA_PACKAGE = "skillsaw.schemas.mcp_registry.v2025_12_11"
# The build tool that demo.txt locks for the editable install; the bundle does not carry it.
NOT_SHIPPED = frozenset({"setuptools"})


def project_version() -> str:
    with (REPO / "pyproject.toml").open("rb") as f:
        return str(tomllib.load(f)["project"]["version"])


def python_version() -> str:
    return f"{sys.version_info[0]}.{sys.version_info[1]}"


def mcpb_cli() -> Path:
    """The pinned official MCPB CLI (installed on first use)."""
    return npm_ci_once(HERE / "cli", "mcpb") / "node_modules" / ".bin" / "mcpb"


def shipped_requirements(lock: str) -> str:
    """The lock file's entries (each with its hashes) less the ones the bundle does not carry."""
    entries: list[str] = []
    current: list[str] = []
    for line in lock.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if not line.startswith(" ") and current:
            entries.append("\n".join(current))
            current = []
        current.append(line)
    if current:
        entries.append("\n".join(current))
    kept = [e for e in entries if e.split("==", 1)[0].strip().lower() not in NOT_SHIPPED]
    return "\n".join(kept) + "\n"


def manifest(version: str) -> dict[str, Any]:
    """mcpb/manifest.json with this build's version and what the bundle runs on."""
    document: dict[str, Any] = json.loads((HERE / "manifest.json").read_text(encoding="utf-8"))
    major, minor = sys.version_info[0], sys.version_info[1]
    document["version"] = version
    document["compatibility"] = {
        "platforms": [sys.platform],  # Python's names are the manifest's: darwin, linux, win32
        "runtimes": {"python": f">={major}.{minor},<{major}.{minor + 1}"},
    }
    return document


def _pip(*args: str) -> None:
    cmd = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--quiet", *args]
    subprocess.run(cmd, check=True, cwd=REPO, stdout=sys.stderr)


def stage(root: Path, version: str, scratch: Path) -> None:
    """The bundle's tree in `root`: manifest, entry, packages, license."""
    server = root / "server"
    lib = server / "lib"
    lib.mkdir(parents=True)
    (root / "manifest.json").write_text(json.dumps(manifest(version), indent=2) + "\n", encoding="utf-8")
    shutil.copy(HERE / "launch.py", server / "main.py")
    (server / "python-version").write_text(python_version() + "\n", encoding="utf-8")
    shutil.copy(REPO / "LICENSE", root / "LICENSE")
    requirements = scratch / "requirements.txt"
    lock = (REPO / "requirements" / "demo.txt").read_text(encoding="utf-8")
    requirements.write_text(shipped_requirements(lock), encoding="utf-8")
    sys.stderr.write(f"mcpb: installing the locked dependencies into {lib.relative_to(root)}\n")
    _pip(
        "install",
        "--no-deps",
        "--require-hashes",
        "--only-binary=:all:",
        "--target",
        str(lib),
        "-r",
        str(requirements),
    )
    wheels = scratch / "wheel"
    _pip("wheel", "--no-deps", "--no-build-isolation", "--wheel-dir", str(wheels), str(REPO))
    (wheel,) = wheels.glob("mcp_suite-*.whl")
    shutil.rmtree(lib / "bin", ignore_errors=True)  # console scripts: the bundle starts server/main.py
    _pip("install", "--no-deps", "--target", str(lib), str(wheel))
    shutil.rmtree(lib / "bin", ignore_errors=True)


def registry_schema() -> dict[str, Any]:
    """The registry's published server.json schema, from the package that ships it."""
    text = resources.files(REGISTRY_SCHEMA_PACKAGE).joinpath("server.schema.json").read_text(encoding="utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


def registry_problems(document: dict[str, Any]) -> list[str]:
    """Why `document` is not a valid server.json of the schema it names (empty when it is)."""
    import jsonschema

    schema = registry_schema()
    if document.get("$schema") != schema["$id"]:
        return [f"$schema is {document.get('$schema')!r}; the schema at hand is {schema['$id']!r}"]
    validator = jsonschema.Draft7Validator(schema, format_checker=jsonschema.Draft7Validator.FORMAT_CHECKER)
    return [
        f"{'/'.join(map(str, e.absolute_path)) or '(top)'}: {e.message}"
        for e in validator.iter_errors(document)
    ]


def server_json(version: str, *, bundle: Path, url: str | None, name: str | None) -> dict[str, Any]:
    """mcpb/server.json filled in for this bundle: version, download address and hash."""
    # First, the schema it is validated against, by its $id; then the template's fields.
    document: dict[str, Any] = {"$schema": registry_schema()["$id"]}
    document.update(json.loads((HERE / "server.json").read_text(encoding="utf-8")))
    document["version"] = version
    if name:
        document["name"] = name
    (package,) = document["packages"]
    package["identifier"] = url or bundle.name
    package["version"] = version
    package["fileSha256"] = hashlib.sha256(bundle.read_bytes()).hexdigest()
    return document


def build(out: Path, *, url: str | None = None, name: str | None = None) -> tuple[Path, Path]:
    """Build, validate and pack the bundle into `out`; returns (the .mcpb, server.json)."""
    version = project_version()
    cli = mcpb_cli()
    out.mkdir(parents=True, exist_ok=True)
    bundle = out / f"mcp-suite-{version}.mcpb"
    with tempfile.TemporaryDirectory(prefix="mcp-suite-mcpb-") as tmp:
        root = Path(tmp) / "mcp-suite"
        scratch = Path(tmp) / "scratch"
        scratch.mkdir()
        stage(root, version, scratch)
        subprocess.run([str(cli), "validate", str(root / "manifest.json")], check=True, stdout=sys.stderr)
        bundle.unlink(missing_ok=True)
        subprocess.run([str(cli), "pack", str(root), str(bundle)], check=True, stdout=sys.stderr)
    registry = server_json(version, bundle=bundle, url=url, name=name)
    problems = registry_problems(registry)
    if problems:
        raise SystemExit("server.json does not match the registry's schema:\n  " + "\n  ".join(problems))
    entry = out / "server.json"
    entry.write_text(json.dumps(registry, indent=2) + "\n", encoding="utf-8")
    size = bundle.stat().st_size
    sys.stderr.write(
        f"mcpb: {bundle} ({size / 1e6:.1f} MB, {size} bytes), for {sys.platform} with Python "
        f"{python_version()}; {entry} matches the registry schema {registry['$schema']}\n"
    )
    if url is None:
        sys.stderr.write("mcpb: server.json names the file alone: give --url (MCPB_URL=) before publishing\n")
    return bundle, entry


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO / "dist")
    parser.add_argument("--url", help="where the bundle will be downloaded from (server.json's identifier)")
    parser.add_argument("--registry-name", help="the registry name, io.github.OWNER/mcp-suite")
    args = parser.parse_args(argv)
    build(args.out, url=args.url or None, name=args.registry_name or None)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
