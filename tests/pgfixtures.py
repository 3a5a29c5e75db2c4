"""pytest fixtures for the throwaway PostgreSQL cluster (mcp_suite.demo).

`demo_cluster` (session scope) creates, starts and seeds one cluster in a fresh temporary directory
and destroys it at the end of the session. It exposes `admin_dsn` (the bootstrap superuser, TCP and
password), `reader_dsn` (`mcp_reader`), `dbname`, `host`, `port`, and `stop()` / `start()` (the port is
kept across a restart). Tests that stop it must start it again before they return.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcp_suite.demo.cluster import Cluster

__all__ = ["demo_cluster"]


@pytest.fixture(scope="session")
def demo_cluster() -> Iterator[Cluster]:
    base = Path(tempfile.mkdtemp(prefix="mcp-suite-devdb-"))
    cluster = Cluster.create(base)  # removes `base` itself if creation fails
    try:
        yield cluster
    finally:
        cluster.destroy()
