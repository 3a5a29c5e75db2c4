"""Prompts (server/prompts): what `prompts/list` shows and what `prompts/get` renders. Pure, no I/O.

A prompt is server-authored text (and images, embedded resources) with string arguments; `render`
builds its messages from the arguments already checked here (every required one present, no
unknown one, each a string). The core answers both methods inline, except `prompts/get` of a prompt
that `asks` its client (2026-07-28 only): that one runs as a call, whose render may end in an
input-required result. The core advertises the `prompts` capability only when it serves a prompt:
mcp-suite itself serves none (the conformance fixture server in the tests does). Must not import trio.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mcp_suite.problems import InvalidParamsError, echo
from mcp_suite.settings import NAME_ECHO_CHARS

__all__ = [
    "Prompt",
    "PromptArgument",
    "get_prompt_result",
    "prompt_request",
    "prompt_result",
    "prompts_list_result",
]


@dataclass(frozen=True, slots=True)
class PromptArgument:
    """One string argument; `values`: what completion/complete offers for it (by prefix)."""

    name: str
    description: str
    required: bool = True
    values: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Prompt:
    """One prompt; `render(arguments)` returns its messages (`PromptMessage` objects), given
    exactly the declared arguments the client sent (each a string). `asks`: the render may ask the
    client (through `mcp_suite.asking.current_rounds()`), so `prompts/get` of it runs as a call with
    the call's rounds, in 2026-07-28 only (the handshake eras refuse it: `client-cannot-ask`)."""

    name: str
    title: str
    description: str
    render: Callable[[Mapping[str, str]], list[dict[str, Any]]]
    arguments: tuple[PromptArgument, ...] = ()
    asks: bool = False


def _entry(prompt: Prompt) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": prompt.name, "title": prompt.title, "description": prompt.description}
    if prompt.arguments:
        entry["arguments"] = [
            {"name": arg.name, "description": arg.description, "required": arg.required}
            for arg in prompt.arguments
        ]
    return entry


def prompts_list_result(prompts: Sequence[Prompt], params: Mapping[str, Any]) -> dict[str, Any]:
    """Every prompt on one page (a `cursor` is accepted only as `""`, like tools/list)."""
    cursor = params.get("cursor")
    if cursor is not None and cursor != "":
        raise InvalidParamsError(
            "prompts/list has a single page; this cursor is not one it issued.", invalid_params=["cursor"]
        )
    return {"prompts": [_entry(prompt) for prompt in prompts]}


def get_prompt_result(prompts: Mapping[str, Prompt], params: Mapping[str, Any]) -> dict[str, Any]:
    """`prompts/get`: the named prompt rendered with its arguments, or -32602 naming what is wrong
    (server/prompts, "Error Handling": an invalid prompt name or missing required arguments)."""
    prompt, arguments = prompt_request(prompts, params)
    return prompt_result(prompt, prompt.render(arguments))


def prompt_result(prompt: Prompt, messages: list[dict[str, Any]]) -> dict[str, Any]:
    """A `GetPromptResult` of `prompt` with the `messages` its render returned."""
    return {"description": prompt.description, "messages": messages}


def prompt_request(prompts: Mapping[str, Prompt], params: Mapping[str, Any]) -> tuple[Prompt, dict[str, str]]:
    """The prompt a `prompts/get` names and the arguments to render it with, checked (-32602
    naming what is wrong)."""
    name = params.get("name")
    if not isinstance(name, str) or name not in prompts:
        shown = echo(name, NAME_ECHO_CHARS) if isinstance(name, str) else None
        what = f"There is no prompt named {shown!r}" if shown is not None else 'prompts/get needs "name"'
        raise InvalidParamsError(
            f"{what}; prompts/list shows the prompts this server has.", invalid_params=["name"]
        )
    prompt = prompts[name]
    arguments = params.get("arguments", {})
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict) or not all(isinstance(v, str) for v in arguments.values()):
        raise InvalidParamsError(
            'prompts/get "arguments" must be an object of strings.', invalid_params=["arguments"]
        )
    declared = {arg.name for arg in prompt.arguments}
    unknown = sorted(set(arguments) - declared)
    missing = [arg.name for arg in prompt.arguments if arg.required and arg.name not in arguments]
    if unknown or missing:
        parts = [f"{echo(key, NAME_ECHO_CHARS)!r} is not one of its arguments" for key in unknown[:5]]
        parts += [f"{key!r} is required" for key in missing]
        raise InvalidParamsError(
            f"The arguments do not fit the prompt {name!r}: " + "; ".join(parts) + ".",
            invalid_params=[*unknown[:5], *missing],
        )
    return prompt, arguments
