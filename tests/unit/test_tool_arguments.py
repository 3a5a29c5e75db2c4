"""A tool's arguments are validated by its spec, and the wording of the in-band validation error is the
protocol's (`mcp.invalid_arguments`): no event loop, no runtime."""

from __future__ import annotations

from typing import Any

import pydantic
import pytest

from mcp_suite.lazy import Lazy
from mcp_suite.problems import Channel, InvalidArgumentsError, InvalidParamsError
from mcp_suite.protocol import mcp
from mcp_suite.tools.base import ToolSpec


class _EchoArgs(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid")

    text: str
    times: int = 1


class _EchoResult(pydantic.BaseModel):
    text: str


async def _echo(args: Any) -> _EchoResult:  # never awaited here: only the spec's validation runs
    raise AssertionError(args)


def _spec() -> ToolSpec:
    return ToolSpec("echo", "Echo", "Echoes.", Lazy(lambda: (_EchoArgs, _EchoResult)), _echo)


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
