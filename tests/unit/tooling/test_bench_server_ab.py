"""The whole-server A/B's command line: each variant's trees and settings."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from bench.bench_peers import Sample
from bench.server_ab import flatten, parse_variant


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


def test_a_sample_is_flattened_to_one_figure_per_name_and_level() -> None:
    sample = Sample(1.0, 2.0, 0.5, rates={8: 900.0, 32: 1_000.0}, load_cpu_ms={8: 0.4, 32: 0.3}, rss_mb=90)
    assert flatten(sample) == {
        "p50_ms": 1.0,
        "p99_ms": 2.0,
        "cpu_ms": 0.5,
        "rate_8": 900.0,
        "rate_32": 1_000.0,
        "load_cpu_ms_8": 0.4,
        "load_cpu_ms_32": 0.3,
        "rss_mb": 90,
    }
