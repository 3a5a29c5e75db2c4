"""`make help` lists every target the Makefile declares."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]


def test_make_help_lists_every_phony_target() -> None:
    makefile = (REPO / "Makefile").read_text()
    (phony,) = re.findall(r"^\.PHONY:(.*)$", makefile, flags=re.MULTILINE)
    proc = subprocess.run(
        [shutil.which("make") or "make", "-s", "-C", str(REPO), "help"],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    listed = set(re.findall(r"^make ([a-z-]+)", proc.stdout, flags=re.MULTILINE))
    assert listed == set(phony.split())


def _clean(tmp_path: Path, destroy_status: int) -> subprocess.CompletedProcess[str]:
    """`make clean` in a copy of the Makefile whose venv Python records how it was called."""
    shutil.copy(REPO / "Makefile", tmp_path / "Makefile")
    python = tmp_path / ".venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text(f'#!/bin/sh\necho "$@" >> "{tmp_path}/called"\nexit {destroy_status}\n')
    python.chmod(0o755)
    return subprocess.run(
        [shutil.which("make") or "make", "-s", "-C", str(tmp_path), "clean"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


def test_make_clean_destroys_the_demo_database_through_the_project_command_first(tmp_path: Path) -> None:
    proc = _clean(tmp_path, 0)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "called").read_text() == "-m mcp_suite.demo destroy\n"
    assert not (tmp_path / ".venv").exists()


def test_make_clean_keeps_the_venv_when_the_demo_database_cannot_be_removed(tmp_path: Path) -> None:
    proc = _clean(tmp_path, 1)  # in use by a running session
    assert proc.returncode != 0
    assert (tmp_path / ".venv" / "bin" / "python").exists()


# A stand-in for the Python that makes the venv: `-m venv DIR` creates DIR/bin/python, a stand-in
# that records each call; anything else (the version check) succeeds.
FAKE_PYTHON = """#!/bin/sh
if [ "$1" = -m ] && [ "$2" = venv ]; then
    mkdir -p "$3/bin"
    printf '#!/bin/sh\\necho "$*" >> "{calls}"\\n' > "$3/bin/python"
    chmod +x "$3/bin/python"
fi
exit 0
"""


def test_the_first_make_run_says_each_install_step_on_stderr_and_nothing_on_stdout(tmp_path: Path) -> None:
    shutil.copy(REPO / "Makefile", tmp_path / "Makefile")
    (tmp_path / "requirements").mkdir()
    for name in ("requirements/demo.txt", "requirements/runtime.txt", "pyproject.toml"):
        (tmp_path / name).write_text("")
    python = tmp_path / "python3"
    python.write_text(FAKE_PYTHON.format(calls=tmp_path / "calls"))
    python.chmod(0o755)
    proc = subprocess.run(
        [shutil.which("make") or "make", "-s", "-C", str(tmp_path), "run", f"PYTHON={python}"],
        env={k: v for k, v in os.environ.items() if not k.startswith(("MAKE", "MFLAGS"))},
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ""  # the MCP stream's, even on the first run
    assert proc.stderr.splitlines() == [
        "creating .venv",
        "installing requirements/demo.txt into .venv",
        "installing mcp-suite from this checkout (editable), then compiling it",
    ]
    # The SIGINT relay starts in the background beside the server, so its line may come last.
    calls = [
        c
        for c in (tmp_path / "calls").read_text().splitlines()
        if not c.startswith("-m mcp_suite.make_relay ")
    ]
    assert calls[-1].startswith("-m mcp_suite.demo serve -- ")  # then the demo PostgreSQL and the server
    assert any(call.startswith("-m pip install -qq ") for call in calls)  # no setuptools banner
