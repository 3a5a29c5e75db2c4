"""The wheel, built once for the packaging tests (tests/support/wheel.py)."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.wheel import build_wheel


@pytest.fixture(scope="session")
def wheel() -> Iterator[Path]:
    work = Path(tempfile.mkdtemp(prefix="mcp-suite-wheel-"))
    try:
        yield build_wheel(work)
    finally:
        shutil.rmtree(work)
