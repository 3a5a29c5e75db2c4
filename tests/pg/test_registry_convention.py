"""The registry serves what the convention finds: with every family enabled (the throwaway cluster,
a folder, metrics), its tools are exactly the faces of tools/<family>/<tool>/tool.py, each with its
family's scope (tests/support/convention.py, which the hand-kept lists are held to)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp_suite.demo.cluster import Cluster
from mcp_suite.settings import SecretStr, Settings
from mcp_suite.tools.registry import open_registry
from tests.support import convention

pytestmark = pytest.mark.pg


def test_the_registry_serves_every_face_of_the_convention_with_its_family_s_scope(
    demo_cluster: Cluster, tmp_path: Path
) -> None:
    settings = Settings(sql_dsn=SecretStr(demo_cluster.reader_dsn), safe_data_dir=tmp_path)
    expected = {face.name: family.scope for family in convention.families().values() for face in family.faces}
    with open_registry(settings) as registry:
        served = {name: spec.scope for name, spec in registry.tools.items()}
    assert served == expected
    assert len(served) == 6
