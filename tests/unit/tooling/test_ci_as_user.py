"""CI runs the file-system and harness tests again as an unprivileged user (`.ci/as-user`, after
`make test` as root in `.ci/run`): the files it names exist, and anyone but root is told to run it as
root instead of half-running it."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
SCRIPT = REPO / ".ci" / "as-user"


def test_ci_runs_the_user_slice_after_make_test_as_root() -> None:
    steps = [
        line for line in (REPO / ".ci" / "run").read_text().splitlines() if line and not line.startswith("#")
    ]
    assert steps.index(".ci/as-user") == steps.index("make test") + 1


def test_the_slice_names_existing_test_files_of_the_file_system_and_the_harness() -> None:
    text = SCRIPT.read_text()
    named = re.findall(r"tests/[\w/]+\.py", text)
    assert named
    assert all((REPO / path).is_file() for path in named), named
    for layer in (
        "tests/unit/tools/files/test_fs_attacks.py",
        "tests/property/test_fs_property.py",
        "tests/pg/test_devdb.py",
    ):
        assert layer in named


def test_as_a_user_it_refuses_and_says_to_run_it_as_root(tmp_path: Path) -> None:
    stubs = tmp_path / "bin"
    stubs.mkdir()
    (stubs / "id").write_text("#!/bin/sh\necho 1000\n")
    (stubs / "id").chmod(0o755)
    done = subprocess.run(
        [str(SCRIPT)],
        env={**os.environ, "PATH": f"{stubs}:/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 1
    assert "as-user: run as root" in done.stderr
