"""The whole-server A/B's command line: each variant's trees and settings."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from bench.server_ab import parse_variant


def test_a_variant_names_its_trees_in_order_and_its_settings() -> None:
    variant = parse_variant("after=a+b:MCP_SQL_POOLER=transaction,MCP_LOG_LEVEL=INFO")
    assert variant.name == "after"
    assert variant.trees == (Path("a").resolve(), Path("b").resolve())
    assert variant.settings == {"MCP_SQL_POOLER": "transaction", "MCP_LOG_LEVEL": "INFO"}


def test_a_variant_without_settings_has_none() -> None:
    variant = parse_variant("before=.")
    assert variant.trees == (Path(".").resolve(),)
    assert variant.settings == {}


@pytest.mark.parametrize("text", ["=tree", "name=", "name"])
def test_a_variant_without_a_name_or_a_tree_is_refused(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError):
        parse_variant(text)
