"""`make help` lists every target the Makefile declares."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


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
