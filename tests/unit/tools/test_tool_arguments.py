"""A tool's arguments are validated by its spec, and the wording of the in-band validation error is the
protocol's (`mcp.invalid_arguments`): no event loop, no runtime."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pydantic
import pytest

from mcp_suite.lazy import Lazy
from mcp_suite.problems import Channel, InvalidArgumentsError, InvalidParamsError
from mcp_suite.protocol import mcp
from mcp_suite.settings import Settings
from mcp_suite.tools.base import ToolSpec
from mcp_suite.tools.registry import open_registry


class _EchoArgs(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid")

    text: str
    times: int = 1


class _EchoResult(pydantic.BaseModel):
    text: str


async def _echo(args: Any) -> _EchoResult:  # never awaited here: only the spec's validation runs
    raise AssertionError(args)


def _spec() -> ToolSpec:
    return ToolSpec("echo", "Echo", "Echoes.", Lazy(lambda: (_EchoArgs, _EchoResult)), _echo, "test:call")


def test_the_spec_turns_valid_arguments_into_its_strict_model_building_the_models_first() -> None:
    spec = _spec()
    assert not spec.models.built
    args = spec.validate_arguments({"text": "hi", "times": 2})
    assert args == _EchoArgs(text="hi", times=2)
    assert spec.models.built


@pytest.mark.parametrize(
    ("arguments", "detail", "names"),
    [
        (
            {"text": "hi", "loud": True},
            "The arguments do not match the tool's inputSchema: loud: is not an argument of this tool",
            ("loud",),
        ),
        (
            {"text": 5},  # strict: no number for a string
            "The arguments do not match the tool's inputSchema: text: Input should be a valid string",
            ("text",),
        ),
        (
            {"times": "2"},
            "The arguments do not match the tool's inputSchema: text: Field required; "
            "times: Input should be a valid integer",
            ("text", "times"),
        ),
    ],
)
def test_invalid_arguments_are_an_in_band_validation_error_naming_each_argument(
    arguments: dict[str, Any], detail: str, names: tuple[str, ...]
) -> None:
    with pytest.raises(InvalidArgumentsError) as info:
        _spec().validate_arguments(arguments)
    problem = info.value
    assert type(problem) is InvalidArgumentsError  # not the request's -32602 kind
    assert problem.channel is Channel.RESULT
    assert (problem.detail, problem.invalid_params) == (detail, names)


def test_the_wording_names_at_most_five_faults_cuts_long_names_and_the_whole_detail() -> None:
    errors = [{"loc": (f"a{i}",), "msg": "is wrong", "type": "x"} for i in range(7)]
    problem = mcp.invalid_arguments(errors)
    assert problem.detail.count("is wrong") == 5
    assert problem.invalid_params == tuple(f"a{i}" for i in range(7))
    long_name = mcp.invalid_arguments([{"loc": ("n" * 300, 0), "msg": "m" * 600}])
    assert len(long_name.detail) == 512
    assert long_name.detail.endswith("…")
    assert long_name.invalid_params == ("n" * 300,)
    nameless = mcp.invalid_arguments([{"loc": ()}])
    assert nameless.detail.endswith("arguments: is not valid")
    assert nameless.invalid_params == ("arguments",)


def test_a_request_fault_is_its_own_class_and_travels_as_minus_32602() -> None:
    problem = mcp.unknown_tool("nope")
    assert isinstance(problem, InvalidParamsError)
    assert (problem.channel, problem.jsonrpc_code) == (Channel.ERROR, -32602)


@pytest.mark.parametrize(
    ("unknown", "meant"),
    [("txt", "text"), ("time", "times"), ("TEXT", "text"), ("loud", None), ("t", None)],
)
def test_an_unknown_argument_names_the_nearest_real_one(unknown: str, meant: str | None) -> None:
    with pytest.raises(InvalidArgumentsError) as caught:
        _spec().validate_arguments({"text": "hi", unknown: 1})
    hint = f" (did you mean {meant}?)" if meant else ""
    assert caught.value.detail.endswith(f"{unknown}: is not an argument of this tool{hint}")


def test_a_word_of_exactly_one_real_argument_names_it() -> None:
    # sandbox_fs_list's result calls it `path`; its argument is `relative_path`.
    assert mcp.nearest_argument("path", ["relative_path", "recursive", "max_depth"]) == "relative_path"
    assert mcp.nearest_argument("path", ["relative_path", "destination_path"]) is None  # which one?
    assert mcp.nearest_argument("depth", ["relative_path", "max_depth"]) == "max_depth"


def test_sandbox_fs_list_called_with_its_results_word_path_is_told_relative_path(tmp_path: Path) -> None:
    with open_registry(Settings(safe_data_dir=tmp_path, metrics_enabled=False)) as registry:
        spec = registry.tools["sandbox_fs_list"]
        with pytest.raises(InvalidArgumentsError) as caught:
            spec.validate_arguments({"path": "docs"})
    assert caught.value.detail.endswith("path: is not an argument of this tool (did you mean relative_path?)")
