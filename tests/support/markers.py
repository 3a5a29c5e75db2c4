"""pytest marks shared by several test modules (no test module imports another)."""

from __future__ import annotations

import os

import pytest

needs_two_cpus = pytest.mark.skipif(
    len(os.sched_getaffinity(0)) < 2, reason="pinning is a no-op on a one-CPU machine"
)
