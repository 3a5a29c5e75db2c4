"""The conformance suite's fixture server: mcp-suite's own core and transports, serving the tools,
resources and prompts the official suite (`@modelcontextprotocol/conformance`) calls by name.

    python -X dev -m tests.support.fixture_server serve-http    (or `serve`, the default: stdio)

It is `mcp_suite.cli.main` with one more toolset, registered the way every tool family is
(`Toolset` of `ToolSpec`s through the registry's `extra` openers): the same session core, the same
stdio and Streamable HTTP runtimes, so the suite measures the protocol code users run, not a
stand-in. It lives in the tests, never in the wheel. The scenario each fixture serves is named
beside it; docs/operations/remote.md ("Conformance") has the table.

Fixtures that talk to the client mid-call (progress, log messages, questions) do it through the
call's context (`mcp_suite.talk.current()`), as the product's tools do. The suite's progress
scenario reports three steps 50 ms apart; the fixture server therefore runs with
MCP_PROGRESS_INTERVAL_S at its floor (0.1 s) and spaces its reports by that much.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import struct
import sys
import wave
import zlib
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Final

import trio

from mcp_suite import talk
from mcp_suite.cli import main as cli_main
from mcp_suite.lazy import Lazy
from mcp_suite.protocol.contents import ContentResult
from mcp_suite.protocol.prompts import Prompt, PromptArgument
from mcp_suite.settings import Settings
from mcp_suite.talk import Talk
from mcp_suite.tools.base import ResourceSpec, ResourceTemplateSpec, Toolset, ToolSpec
from mcp_suite.tools.models import StrictModel
from tests.support.fixture_mrtr import MRTR_PROMPT, MRTR_TOOLS
from tests.support.harness import TEST_SCOPE, NoArgs, NoResult

__all__ = ["FIXTURE_TOOLS", "current_context", "main", "open_fixtures"]


# -- the per-call context the talking fixtures use ------------------------------------------------


# The fixture server's progress interval (MCP_PROGRESS_INTERVAL_S, its floor), and the spacing of the
# progress fixture's reports: wider, so that none of the three is held back by the rate limit.
PROGRESS_INTERVAL_S: Final = 0.1
PROGRESS_SPACING_S: Final = 0.15


def current_context() -> Talk:
    """The running call's context, as every tool of the product gets it (`mcp_suite.talk`): its
    progress, its log messages and its questions to the client go where the product's would."""
    return talk.current()


# -- payloads -------------------------------------------------------------------------------------


def _png_1x1_red() -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)  # 1x1, 8 bits, RGB
    pixels = zlib.compress(b"\x00\xff\x00\x00")  # filter 0, one red pixel
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")


def _wav_silence() -> bytes:
    out = io.BytesIO()
    with wave.open(out, "wb") as wav:
        wav.setnchannels(1)
        wav.setsampwidth(2)
        wav.setframerate(8000)
        wav.writeframes(b"\x00\x00" * 80)  # 10 ms
    return out.getvalue()


PNG: Final = _png_1x1_red()
WAV: Final = _wav_silence()


def _b64(data: bytes) -> str:
    import base64

    return base64.b64encode(data).decode("ascii")


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _image() -> dict[str, Any]:
    return {"type": "image", "data": _b64(PNG), "mimeType": "image/png"}


# -- tools ----------------------------------------------------------------------------------------


class JsonSchemaArgs(StrictModel):
    """The arguments json_schema_2020_12_tool takes (its advertised schema is the suite's own)."""

    name: str | None = None
    address: dict[str, str] | None = None
    contactMethod: str | None = None  # noqa: N815  # the suite's argument name
    phone: str | None = None
    email: str | None = None


# The suite's schema for json-schema-2020-12 (SEP-1613, SEP-2106), advertised as written.
JSON_SCHEMA_2020_12: Final[dict[str, Any]] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "$anchor": "addressDef",
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        }
    },
    "properties": {
        "name": {"type": "string"},
        "address": {"$ref": "#/$defs/address"},
        "contactMethod": {"type": "string", "enum": ["phone", "email"]},
        "phone": {"type": "string"},
        "email": {"type": "string"},
    },
    "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
    "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
    "then": {"required": ["phone"]},
    "else": {"required": ["email"]},
    "additionalProperties": False,
}


async def _simple_text(args: NoArgs) -> ContentResult:  # tools-call-simple-text
    await trio.lowlevel.checkpoint()
    return ContentResult((_text("This is a simple text response for testing."),))


async def _image_content(args: NoArgs) -> ContentResult:  # tools-call-image
    await trio.lowlevel.checkpoint()
    return ContentResult((_image(),))


async def _audio_content(args: NoArgs) -> ContentResult:  # tools-call-audio
    await trio.lowlevel.checkpoint()
    return ContentResult(({"type": "audio", "data": _b64(WAV), "mimeType": "audio/wav"},))


async def _embedded_resource(args: NoArgs) -> ContentResult:  # tools-call-embedded-resource
    await trio.lowlevel.checkpoint()
    resource = {
        "uri": "test://embedded-resource",
        "mimeType": "text/plain",
        "text": "This is an embedded resource content.",
    }
    return ContentResult(({"type": "resource", "resource": resource},))


async def _multiple_content_types(args: NoArgs) -> ContentResult:  # tools-call-mixed-content
    await trio.lowlevel.checkpoint()
    resource = {
        "uri": "test://mixed-content-resource",
        "mimeType": "application/json",
        "text": json.dumps({"test": "data", "value": 123}),
    }
    return ContentResult(
        (_text("Multiple content types test:"), _image(), {"type": "resource", "resource": resource})
    )


async def _error_handling(args: NoArgs) -> ContentResult:  # tools-call-error
    await trio.lowlevel.checkpoint()
    return ContentResult((_text("This tool intentionally returns an error for testing"),), is_error=True)


async def _json_schema_tool(args: JsonSchemaArgs) -> ContentResult:  # json-schema-2020-12
    await trio.lowlevel.checkpoint()
    return ContentResult((_text("json_schema_2020_12_tool called"),))


async def _with_progress(args: NoArgs) -> ContentResult:  # tools-call-with-progress
    context = current_context()
    for step in (0, 50, 100):
        await context.report_progress(step, 100)
        if step < 100:
            await trio.sleep(PROGRESS_SPACING_S)
    return ContentResult((_text("Progress test completed"),))


async def _with_logging(args: NoArgs) -> ContentResult:  # tools-call-with-logging (2025-11-25)
    context = current_context()
    for text in ("Tool execution started", "Tool processing data", "Tool execution completed"):
        await context.log("info", text)
        await trio.sleep(0.05)
    return ContentResult((_text("Logging test completed"),))


async def _logging_tool(args: NoArgs) -> ContentResult:  # server-stateless (2026-07-28)
    # 2026-07-28 deprecates logging: the context of a modern call sends no notifications/message.
    await current_context().log("info", "test_logging_tool ran")
    await trio.lowlevel.checkpoint()
    return ContentResult((_text("Logging tool completed"),))


class SamplingArgs(StrictModel):
    prompt: str


class ElicitationArgs(StrictModel):
    message: str


async def _sampling(args: SamplingArgs) -> ContentResult:  # tools-call-sampling (2025-11-25)
    context = current_context()
    messages = [{"role": "user", "content": _text(args.prompt)}]
    answer = await context.ask("sampling/createMessage", {"messages": messages, "maxTokens": 100})
    content = answer.get("content")
    said = content.get("text", "") if isinstance(content, dict) else ""
    return ContentResult((_text(f"LLM response: {said}"),))


async def _ask(message: str, schema: dict[str, Any], lead: str) -> ContentResult:
    context = current_context()
    answer = await context.ask("elicitation/create", {"message": message, "requestedSchema": schema})
    action, content = answer.get("action"), answer.get("content")
    return ContentResult((_text(f"{lead}action={action}, content={json.dumps(content)}"),))


async def _elicitation(args: ElicitationArgs) -> ContentResult:  # tools-call-elicitation
    schema = {
        "type": "object",
        "properties": {
            "username": {"type": "string", "description": "User's response"},
            "email": {"type": "string", "description": "User's email address"},
        },
        "required": ["username", "email"],
    }
    return await _ask(args.message, schema, "User response: ")


async def _elicitation_defaults(args: NoArgs) -> ContentResult:  # elicitation-sep1034-defaults
    schema = {
        "type": "object",
        "properties": {
            "name": {"type": "string", "default": "John Doe"},
            "age": {"type": "integer", "default": 30},
            "score": {"type": "number", "default": 95.5},
            "status": {"type": "string", "enum": ["active", "inactive", "pending"], "default": "active"},
            "verified": {"type": "boolean", "default": True},
        },
    }
    return await _ask("Please review your details.", schema, "Elicitation completed: ")


def _titled(values: list[tuple[str, str]]) -> list[dict[str, str]]:
    return [{"const": value, "title": title} for value, title in values]


async def _elicitation_enums(args: NoArgs) -> ContentResult:  # elicitation-sep1330-enums
    options = ["option1", "option2", "option3"]
    schema = {
        "type": "object",
        "properties": {
            "untitledSingle": {"type": "string", "enum": options},
            "titledSingle": {
                "type": "string",
                "oneOf": _titled(
                    [("value1", "First Option"), ("value2", "Second Option"), ("value3", "Third Option")]
                ),
            },
            "legacyEnum": {
                "type": "string",
                "enum": ["opt1", "opt2", "opt3"],
                "enumNames": ["Option One", "Option Two", "Option Three"],
            },
            "untitledMulti": {"type": "array", "items": {"type": "string", "enum": options}},
            "titledMulti": {
                "type": "array",
                "items": {
                    "anyOf": _titled(
                        [("value1", "First Choice"), ("value2", "Second Choice"), ("value3", "Third Choice")]
                    )
                },
            },
        },
    }
    return await _ask("Please choose.", schema, "Elicitation completed: ")


def _tool(
    name: str, description: str, call: Callable[[Any], Any], args: type[StrictModel] = NoArgs
) -> ToolSpec:
    return ToolSpec(
        name=name,
        title=name,
        description=description,
        models=Lazy(lambda: (args, NoResult)),
        call=call,
        scope=TEST_SCOPE,
        advertised_output=lambda: None,  # content blocks only: no outputSchema
    )


FIXTURE_TOOLS: Final = (
    *MRTR_TOOLS,
    _tool("test_simple_text", "Returns one text block.", _simple_text),
    _tool("test_image_content", "Returns a 1x1 PNG image.", _image_content),
    _tool("test_audio_content", "Returns a short WAV clip.", _audio_content),
    _tool("test_embedded_resource", "Returns an embedded text resource.", _embedded_resource),
    _tool("test_multiple_content_types", "Returns text, an image and a resource.", _multiple_content_types),
    _tool("test_error_handling", "Always fails, in-band (isError).", _error_handling),
    _tool("test_tool_with_progress", "Reports progress 0, 50, 100 of 100.", _with_progress),
    _tool("test_tool_with_logging", "Logs three messages while it runs.", _with_logging),
    _tool("test_sampling", "Asks the client's model to answer a prompt.", _sampling, SamplingArgs),
    _tool("test_elicitation", "Asks the user for a name and an email.", _elicitation, ElicitationArgs),
    _tool("test_elicitation_sep1034_defaults", "Asks with a default for each type.", _elicitation_defaults),
    _tool("test_elicitation_sep1330_enums", "Asks with each kind of enum.", _elicitation_enums),
    _tool("test_logging_tool", "Logs one message, if the request asked for a log level.", _logging_tool),
)
_SCHEMA_TOOL: Final = ToolSpec(
    name="json_schema_2020_12_tool",
    title="json_schema_2020_12_tool",
    description="Tool with JSON Schema 2020-12 features",
    models=Lazy(lambda: (JsonSchemaArgs, NoResult)),
    call=_json_schema_tool,
    scope=TEST_SCOPE,
    advertised=lambda: JSON_SCHEMA_2020_12,
    advertised_output=lambda: None,
)


# -- resources ------------------------------------------------------------------------------------


async def _static_text() -> str:  # resources-read-text
    await trio.lowlevel.checkpoint()
    return "This is the content of the static text resource."


async def _static_binary() -> bytes:  # resources-read-binary
    await trio.lowlevel.checkpoint()
    return PNG


async def _watched() -> str:  # resources-subscribe, resources-unsubscribe
    await trio.lowlevel.checkpoint()
    return "A resource to subscribe to."


async def _template_data(uri: str) -> str:  # resources-templates-read
    await trio.lowlevel.checkpoint()
    item = uri.removeprefix("test://template/").removesuffix("/data")
    return json.dumps({"id": item, "templateTest": True, "data": f"Data for ID: {item}"})


def _resource(uri: str, name: str, mime_type: str, read: Callable[[], Any]) -> ResourceSpec:
    return ResourceSpec(
        uri=uri, name=name, title=name, description=name, mime_type=mime_type, read=read, scope=TEST_SCOPE
    )


FIXTURE_RESOURCES: Final = (
    _resource("test://static-text", "Static text", "text/plain", _static_text),
    _resource("test://static-binary", "Static binary", "image/png", _static_binary),
    _resource("test://watched-resource", "Watched resource", "text/plain", _watched),
)
FIXTURE_TEMPLATES: Final = (
    ResourceTemplateSpec(
        uri_template="test://template/{id}/data",
        name="Template data",
        title="Template data",
        description="The data of one item, by id.",
        mime_type="application/json",
        read=_template_data,
        scope=TEST_SCOPE,
    ),
)


# -- prompts --------------------------------------------------------------------------------------


def _simple_prompt(arguments: Mapping[str, str]) -> list[dict[str, Any]]:  # prompts-get-simple
    return [{"role": "user", "content": _text("This is a simple prompt for testing.")}]


def _prompt_with_arguments(arguments: Mapping[str, str]) -> list[dict[str, Any]]:  # prompts-get-with-args
    text = f"Prompt with arguments: arg1='{arguments['arg1']}', arg2='{arguments['arg2']}'"
    return [{"role": "user", "content": _text(text)}]


def _prompt_with_resource(
    arguments: Mapping[str, str],
) -> list[dict[str, Any]]:  # prompts-get-embedded-resource
    resource = {
        "uri": arguments["resourceUri"],
        "mimeType": "text/plain",
        "text": "Embedded resource content for testing.",
    }
    return [
        {"role": "user", "content": {"type": "resource", "resource": resource}},
        {"role": "user", "content": _text("Please process the embedded resource above.")},
    ]


def _prompt_with_image(arguments: Mapping[str, str]) -> list[dict[str, Any]]:  # prompts-get-with-image
    return [
        {"role": "user", "content": _image()},
        {"role": "user", "content": _text("Please analyze the image above.")},
    ]


FIXTURE_PROMPTS: Final = (
    Prompt("test_simple_prompt", "Simple prompt", "A prompt without arguments.", _simple_prompt),
    Prompt(
        "test_prompt_with_arguments",
        "Prompt with arguments",
        "A prompt with two required arguments.",
        _prompt_with_arguments,
        (
            PromptArgument(
                "arg1", "First test argument", values=("paris", "park", "party", "test", "testing")
            ),
            PromptArgument("arg2", "Second test argument"),
        ),
    ),
    Prompt(
        "test_prompt_with_embedded_resource",
        "Prompt with an embedded resource",
        "A prompt embedding the resource it names.",
        _prompt_with_resource,
        (PromptArgument("resourceUri", "URI of the resource to embed"),),
    ),
    Prompt("test_prompt_with_image", "Prompt with an image", "A prompt with an image.", _prompt_with_image),
    MRTR_PROMPT,
)


@contextlib.contextmanager
def open_fixtures(settings: Settings) -> Iterator[Toolset | None]:
    """The fixtures as one toolset, the way every tool family is opened."""
    yield Toolset(
        tools=(*FIXTURE_TOOLS, _SCHEMA_TOOL),
        resources=FIXTURE_RESOURCES,
        templates=FIXTURE_TEMPLATES,
        prompts=FIXTURE_PROMPTS,
        subscriptions=True,
        guidance="The conformance suite's fixtures (tests only).",
    )


def main() -> int:
    os.environ.setdefault("MCP_PROGRESS_INTERVAL_S", str(PROGRESS_INTERVAL_S))
    return cli_main(sys.argv[1:], extra_tools=[open_fixtures])


if __name__ == "__main__":
    sys.exit(main())
