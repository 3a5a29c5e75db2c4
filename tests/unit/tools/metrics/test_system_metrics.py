"""`system_metrics` (docs/tools/): its result matches its own outputSchema, readings are clamped, the disk
path is never echoed, and any argument is refused in-band."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import Any

import jsonschema
import trio
from hypothesis import given
from hypothesis import strategies as st

from mcp_suite.protocol.mcp import model_json_schema
from mcp_suite.settings import Settings, load_settings
from mcp_suite.tools.metrics.models import RawSample, SystemMetricsResult
from mcp_suite.tools.metrics.opener import open_metrics
from mcp_suite.tools.metrics.policy import shape_sample
from mcp_suite.tools.metrics.probe import read_sample
from tests.support.harness import open_session
from tests.support.wire import slug_of

OUTPUT_SCHEMA = model_json_schema(SystemMetricsResult)
VALIDATOR = jsonschema.Draft202012Validator(OUTPUT_SCHEMA)

ODD_FLOATS = st.one_of(
    st.none(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([-1.0, -0.0, 100.0001, 250.0, 1e308, math.nan, math.inf, -math.inf]),
)
ODD_INTS = st.one_of(st.none(), st.integers(min_value=-(2**70), max_value=2**70))


def _sample(**overrides: Any) -> RawSample:
    base = RawSample(
        cpu_percent=12.5,
        sample_seconds=0.2,
        logical_count=4,
        physical_count=2,
        load_average=(0.5, 0.25, 0.125),
        mem_total=8_000,
        mem_available=4_000,
        mem_percent=50.0,
        swap_total=1_000,
        swap_free=1_000,
        swap_percent=0.0,
        disk_total=10_000,
        disk_free=2_500,
        disk_percent=75.0,
        uptime_seconds=3_600.0,
        rss=1_000_000,
        threads=3,
        open_fds=12,
    )
    return dataclasses.replace(base, **overrides)


def _check(result: SystemMetricsResult) -> dict[str, Any]:
    document = result.model_dump(mode="json")
    VALIDATOR.validate(document)
    # Valid JSON for the wire: no NaN or Infinity anywhere.
    json.dumps(document, allow_nan=False)
    return document


def test_a_real_sample_validates_against_the_advertised_output_schema(tmp_path: Path) -> None:
    jsonschema.Draft202012Validator.check_schema(OUTPUT_SCHEMA)
    document = _check(shape_sample(read_sample(tmp_path, 0.01)))
    assert document["cpu"]["logical_count"] >= 1
    assert document["process"]["open_fds"] >= 3
    assert document["process"]["threads"] >= 1
    assert document["disk"]["total_bytes"] > 0
    assert len(document["cpu"]["load_average"]) == 3


def test_out_of_range_readings_are_clamped() -> None:
    document = _check(
        shape_sample(
            _sample(
                cpu_percent=250.0,
                mem_percent=-3.0,
                swap_percent=math.nan,
                disk_percent=math.inf,
                logical_count=-4,
                physical_count=None,
                load_average=(-1.0, math.nan, 2.0),
                mem_available=9_999,  # more available than there is
                swap_free=-5,
                disk_free=20_000,
                uptime_seconds=-10.0,
                rss=-1,
                threads=None,
                open_fds=-7,
            )
        )
    )
    assert document["cpu"]["percent"] == 100.0
    assert document["memory"]["percent"] == 0.0
    assert document["swap"]["percent"] == 0.0
    assert document["disk"]["percent"] == 0.0  # not a number → 0, never out of range
    assert document["cpu"]["logical_count"] == 0
    assert document["cpu"]["physical_count"] == 0
    assert document["cpu"]["load_average"] == [0.0, 0.0, 2.0]
    assert document["memory"]["available_bytes"] == 8_000
    assert document["swap"]["free_bytes"] == 0
    assert document["disk"]["free_bytes"] == 10_000
    assert document["uptime_seconds"] == 0.0
    assert document["process"] == {"rss_bytes": 0, "threads": 0, "open_fds": 0}


def test_a_platform_without_any_counter_still_yields_a_valid_result() -> None:
    nothing: dict[str, Any] = {field.name: None for field in dataclasses.fields(RawSample)}
    nothing["sample_seconds"] = 0.0
    document = _check(shape_sample(RawSample(**nothing)))
    assert document["cpu"]["load_average"] == [0.0, 0.0, 0.0]


@given(
    percent=st.tuples(ODD_FLOATS, ODD_FLOATS, ODD_FLOATS, ODD_FLOATS),
    counts=st.tuples(*[ODD_INTS] * 11),
    seconds=st.tuples(st.floats(allow_nan=True, allow_infinity=True), ODD_FLOATS),
    load=st.one_of(st.none(), st.tuples(ODD_FLOATS, ODD_FLOATS, ODD_FLOATS)),
)
def test_any_reading_is_clamped_into_the_schema(
    percent: tuple[float | None, ...],
    counts: tuple[int | None, ...],
    seconds: tuple[float, float | None],
    load: tuple[float | None, float | None, float | None] | None,
) -> None:
    raw = RawSample(
        cpu_percent=percent[0],
        sample_seconds=seconds[0],
        logical_count=counts[0],
        physical_count=counts[1],
        load_average=load,  # type: ignore[arg-type]  # None inside the tuple is an odd reading too
        mem_total=counts[2],
        mem_available=counts[3],
        mem_percent=percent[1],
        swap_total=counts[4],
        swap_free=counts[5],
        swap_percent=percent[2],
        disk_total=counts[6],
        disk_free=counts[7],
        disk_percent=percent[3],
        uptime_seconds=seconds[1],
        rss=counts[8],
        threads=counts[9],
        open_fds=counts[10],
    )
    document = _check(shape_sample(raw))
    for part in ("memory", "swap", "disk"):
        assert 0 <= document[part]["percent"] <= 100
    assert document["memory"]["available_bytes"] <= document["memory"]["total_bytes"]
    assert document["swap"]["free_bytes"] <= document["swap"]["total_bytes"]
    assert document["disk"]["free_bytes"] <= document["disk"]["total_bytes"]


async def test_the_disk_path_is_never_echoed_and_arguments_are_refused_in_band(tmp_path: Path) -> None:
    marker = "disk-path-marker-5c0ffee"
    disk = tmp_path / marker
    disk.mkdir()
    settings = load_settings({"MCP_METRICS_DISK_PATH": str(disk)})
    assert settings.metrics_disk_path == disk
    with trio.fail_after(30):
        async with open_session(
            settings=settings, builtins=True, test_tools=False, keep_transcript=True
        ) as h:
            await h.initialize()
            await h.request("tools/list")
            ok = await h.response(await h.call("system_metrics", {}))
            assert ok["result"]["isError"] is False
            VALIDATOR.validate(ok["result"]["structuredContent"])
            refused = await h.response(await h.call("system_metrics", {"x": 1}))
            problem = json.loads(refused["result"]["content"][0]["text"])
            assert slug_of(problem) == "validation-error"
            assert problem["invalid_params"] == ["x"]
            rest = await h.finish()
            assert rest == []
        seen = h.raw_output()
    assert seen
    assert marker.encode() not in seen
    assert str(tmp_path).encode() not in seen


def test_a_disk_path_that_went_away_leaves_only_the_disk_readings_empty(tmp_path: Path) -> None:
    sample = read_sample(tmp_path / "removed", 0.0)
    assert (sample.disk_total, sample.disk_free, sample.disk_percent) == (None, None, None)
    assert sample.mem_total is not None
    assert sample.mem_total > 0
    _check(shape_sample(sample))


def test_the_metrics_opener_serves_nothing_when_metrics_are_disabled() -> None:
    with open_metrics(Settings(metrics_enabled=False)) as disabled:
        assert disabled is None
    with open_metrics(Settings()) as enabled:
        assert enabled is not None
        assert [tool.name for tool in enabled.tools] == ["system_metrics"]
