"""The official MCP conformance suite against the fixture server (tests/support/fixture_server.py):
mcp-suite's own core and transports serving the suite's fixture tools, resources and prompts.

The suite drives a server over HTTP only (its `server` command takes `--url`, nothing else), so it
runs here against `serve-http`, for both requirement sets (2025-11-25 and 2026-07-28). Over stdio,
`test_the_fixture_scenarios_pass_over_stdio` makes the same scenarios' essential calls with the
project's own client and checks what the suite checks.

tests/e2e/conformance-fixture-expected-failures.json lists every scenario that does not pass here,
with its reason; the test fails when a scenario not listed fails, and when a listed one passes or
no longer runs. docs/operations/remote.md ("Conformance") holds the table.
"""

from __future__ import annotations

import base64
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import pytest

from mcp_suite.problems import METHOD_NOT_FOUND
from tests.e2e.test_http_conformance import REVISIONS, failed_checks, run_suite
from tests.support.client import REPO, ServerProcess
from tests.support.fixture_server import FIXTURE_PROMPTS, FIXTURE_TOOLS, JSON_SCHEMA_2020_12, PNG, WAV
from tests.support.http_server import HttpServer, open_http_server
from tests.support.issuer import free_port

pytestmark = [pytest.mark.e2e]

EXPECTED_FAILURES: Final = Path(__file__).with_name("conformance-fixture-expected-failures.json")
# Only the fixtures: no database, no folder, no metrics tool.
FIXTURE_ENV: Final = {"MCP_METRICS_ENABLED": "false"}


@pytest.fixture(scope="module")
def fixture_server() -> Iterator[HttpServer]:
    port = free_port()
    env = {**FIXTURE_ENV, "MCP_HTTP_ALLOWED_ORIGINS": f"http://127.0.0.1:{port}"}
    with open_http_server(None, env, port=port, module="tests.support.fixture_server") as running:
        yield running


@pytest.mark.parametrize("revision", REVISIONS)
def test_the_suite_fails_only_the_listed_scenarios_against_the_fixture_server(
    revision: str, fixture_server: HttpServer, tmp_path: Path
) -> None:
    expected: dict[str, str] = json.loads(EXPECTED_FAILURES.read_text())[revision]
    assert all(reason.strip() for reason in expected.values()), "every listed scenario says why"
    results = run_suite(fixture_server.url, revision, tmp_path)
    failing = {name: failed_checks(checks) for name, checks in results.items() if failed_checks(checks)}

    unexpected = {name: ids for name, ids in failing.items() if name not in expected}
    assert not unexpected, f"{revision}: scenarios that fail and are not listed: {unexpected}"
    passing_but_listed = sorted(name for name in expected if name in results and name not in failing)
    assert not passing_but_listed, f"{revision}: listed scenarios that now pass: {passing_but_listed}"
    not_run = sorted(set(expected) - set(results))
    assert not not_run, f"{revision}: listed scenarios that no longer run: {not_run}"
    # What the fixtures are for: these pass.
    assert {
        "tools-call-simple-text",
        "tools-call-image",
        "tools-call-audio",
        "tools-call-embedded-resource",
        "tools-call-mixed-content",
        "tools-call-error",
        "resources-read-text",
        "resources-read-binary",
        "resources-templates-read",
        "prompts-list",
        "prompts-get-simple",
        "prompts-get-with-args",
        "prompts-get-embedded-resource",
        "prompts-get-with-image",
    } <= set(results) - set(failing)


# -- over stdio: the same scenarios' essential calls, checked as the suite checks them ----------

FIXTURE_ARGV: Final = (sys.executable, "-X", "dev", "-m", "tests.support.fixture_server")
PV: Final = "io.modelcontextprotocol/protocolVersion"
CC: Final = "io.modelcontextprotocol/clientCapabilities"


class _Era:
    """Requests of one era over one stdio process: the legacy era after `initialize`, the modern
    one with the per-request `_meta` on every request."""

    def __init__(self, process: ServerProcess, revision: str) -> None:
        self.process = process
        self.modern = revision == "2026-07-28"
        if self.modern:
            self.capabilities = self.result("server/discover")["capabilities"]
        else:
            self.capabilities = process.initialize(revision)["result"]["capabilities"]

    def ask(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        params = dict(params or {})
        if self.modern:
            params["_meta"] = {PV: "2026-07-28", CC: {}}
        return self.process.request(method, params)

    def result(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        message = self.ask(method, params)
        assert "result" in message, message
        result: dict[str, Any] = message["result"]
        return result


def _blocks(era: _Era, tool: str) -> list[dict[str, Any]]:
    result = era.result("tools/call", {"name": tool, "arguments": {}})
    assert "structuredContent" not in result
    blocks: list[dict[str, Any]] = result["content"]
    return blocks


@pytest.mark.parametrize("revision", REVISIONS)
def test_the_fixture_scenarios_pass_over_stdio(revision: str) -> None:
    with ServerProcess(
        env={**FIXTURE_ENV, "PYTHONPATH": str(REPO)}, argv=FIXTURE_ARGV, content_blocks=True
    ) as process:
        era = _Era(process, revision)
        # Advertised where served: prompts, resources; subscribe only in the legacy era.
        assert era.capabilities["prompts"] == {"listChanged": False}
        assert era.capabilities["resources"] == {"listChanged": False, "subscribe": not era.modern}

        # tools-list, json-schema-2020-12: the fixtures, the 2020-12 schema as written.
        tools = {tool["name"]: tool for tool in era.result("tools/list")["tools"]}
        assert {tool.name for tool in FIXTURE_TOOLS} < set(tools)
        schema = tools["json_schema_2020_12_tool"]["inputSchema"]
        assert schema == JSON_SCHEMA_2020_12
        assert "outputSchema" not in tools["test_simple_text"]

        # tools-call-*: each content type.
        assert _blocks(era, "test_simple_text") == [
            {"type": "text", "text": "This is a simple text response for testing."}
        ]
        (image,) = _blocks(era, "test_image_content")
        assert (image["type"], image["mimeType"], base64.b64decode(image["data"])) == (
            "image",
            "image/png",
            PNG,
        )
        (audio,) = _blocks(era, "test_audio_content")
        assert (audio["type"], audio["mimeType"], base64.b64decode(audio["data"])) == (
            "audio",
            "audio/wav",
            WAV,
        )
        (embedded,) = _blocks(era, "test_embedded_resource")
        assert embedded["resource"]["uri"] == "test://embedded-resource"
        assert [block["type"] for block in _blocks(era, "test_multiple_content_types")] == [
            "text",
            "image",
            "resource",
        ]
        failed = era.result("tools/call", {"name": "test_error_handling", "arguments": {}})
        assert failed["isError"] is True
        assert failed["content"][0]["text"] == "This tool intentionally returns an error for testing"

        # resources-read-text, resources-read-binary, resources-templates-read.
        (text,) = era.result("resources/read", {"uri": "test://static-text"})["contents"]
        assert text == {
            "uri": "test://static-text",
            "mimeType": "text/plain",
            "text": "This is the content of the static text resource.",
        }
        (binary,) = era.result("resources/read", {"uri": "test://static-binary"})["contents"]
        assert (binary["mimeType"], base64.b64decode(binary["blob"])) == ("image/png", PNG)
        assert "text" not in binary
        (item,) = era.result("resources/read", {"uri": "test://template/123/data"})["contents"]
        assert item["uri"] == "test://template/123/data"
        assert json.loads(item["text"]) == {"id": "123", "templateTest": True, "data": "Data for ID: 123"}
        (template,) = era.result("resources/templates/list")["resourceTemplates"]
        assert template["uriTemplate"] == "test://template/{id}/data"

        # prompts-list, prompts-get-*.
        prompts = {prompt["name"] for prompt in era.result("prompts/list")["prompts"]}
        assert prompts == {prompt.name for prompt in FIXTURE_PROMPTS}
        simple = era.result("prompts/get", {"name": "test_simple_prompt"})["messages"]
        assert simple == [
            {"role": "user", "content": {"type": "text", "text": "This is a simple prompt for testing."}}
        ]
        with_args = era.result(
            "prompts/get", {"name": "test_prompt_with_arguments", "arguments": {"arg1": "v1", "arg2": "v2"}}
        )
        assert with_args["messages"][0]["content"]["text"] == "Prompt with arguments: arg1='v1', arg2='v2'"
        embedded_prompt = era.result(
            "prompts/get",
            {
                "name": "test_prompt_with_embedded_resource",
                "arguments": {"resourceUri": "test://example-resource"},
            },
        )
        assert embedded_prompt["messages"][0]["content"]["resource"]["uri"] == "test://example-resource"
        with_image = era.result("prompts/get", {"name": "test_prompt_with_image"})["messages"]
        assert with_image[0]["content"]["type"] == "image"

        # resources-subscribe, resources-unsubscribe (legacy only: 2026-07-28 removed them).
        subscribe = era.ask("resources/subscribe", {"uri": "test://watched-resource"})
        unsubscribe = era.ask("resources/unsubscribe", {"uri": "test://watched-resource"})
        if era.modern:
            assert subscribe["error"]["code"] == unsubscribe["error"]["code"] == METHOD_NOT_FOUND
        else:
            assert subscribe["result"] == unsubscribe["result"] == {}


# -- over stdio: the input-required fixtures (tests/support/fixture_mrtr.py) ----------------------

EVERY_CAPABILITY: Final[dict[str, Any]] = {"elicitation": {}, "sampling": {}, "roots": {}}


def _modern_call(
    process: ServerProcess, tool: str, capabilities: dict[str, Any], **retry: Any
) -> dict[str, Any]:
    params = {"name": tool, "arguments": {}, **retry, "_meta": {PV: "2026-07-28", CC: capabilities}}
    return process.request("tools/call", params)


def test_the_input_required_fixtures_ask_in_rounds_and_refuse_what_the_client_cannot_answer() -> None:
    with ServerProcess(
        env={**FIXTURE_ENV, "PYTHONPATH": str(REPO)}, argv=FIXTURE_ARGV, content_blocks=True
    ) as process:
        # basic-elicitation: asked under the suite's key, answered by the retry with the state.
        first = _modern_call(process, "test_input_required_result_elicitation", EVERY_CAPABILITY)["result"]
        assert first["resultType"] == "input_required"
        assert first["inputRequests"]["user_name"]["method"] == "elicitation/create"
        alice = {"user_name": {"action": "accept", "content": {"name": "Alice"}}}
        done = _modern_call(
            process,
            "test_input_required_result_elicitation",
            EVERY_CAPABILITY,
            inputResponses=alice,
            requestState=first["requestState"],
        )["result"]
        assert done["content"] == [{"type": "text", "text": "Hello, Alice!"}]
        # An answer without the state that asked for it is not taken: the question comes again.
        unasked = _modern_call(
            process, "test_input_required_result_elicitation", EVERY_CAPABILITY, inputResponses=alice
        )["result"]
        assert unasked["resultType"] == "input_required"

        # tampered-state: -32602 invalid-request-state, whatever the answer says.
        asked = _modern_call(process, "test_input_required_result_tampered_state", EVERY_CAPABILITY)["result"]
        tampered = _modern_call(
            process,
            "test_input_required_result_tampered_state",
            EVERY_CAPABILITY,
            inputResponses={"confirm": {"action": "accept", "content": {"ok": True}}},
            requestState=asked["requestState"] + "-TAMPERED",
        )
        assert tampered["error"]["code"] == -32602
        assert tampered["error"]["data"]["code"] == "MCP_INVALID_REQUEST_STATE"

        # multi-round: a new question and a new state each round, then the result.
        step1 = _modern_call(process, "test_input_required_result_multi_round", EVERY_CAPABILITY)["result"]
        step2 = _modern_call(
            process,
            "test_input_required_result_multi_round",
            EVERY_CAPABILITY,
            inputResponses={"step1": {"action": "accept", "content": {"name": "Alice"}}},
            requestState=step1["requestState"],
        )["result"]
        assert list(step2["inputRequests"]) == ["step2"]
        assert step2["requestState"] != step1["requestState"]
        step3 = _modern_call(
            process,
            "test_input_required_result_multi_round",
            EVERY_CAPABILITY,
            inputResponses={"step2": {"action": "accept", "content": {"color": "blue"}}},
            requestState=step2["requestState"],
        )["result"]
        assert step3["content"][0]["text"] == "Alice's favorite color is blue."

        # capability-check: a client that declared only sampling is asked only for sampling.
        sampled = _modern_call(process, "test_input_required_result_capabilities", {"sampling": {}})["result"]
        assert [request["method"] for request in sampled["inputRequests"].values()] == [
            "sampling/createMessage"
        ]

        # server-stateless: without sampling, -32021 naming it; never run without it.
        missing = _modern_call(process, "test_missing_capability", {"elicitation": {}})
        assert missing["error"]["code"] == -32021
        assert missing["error"]["data"]["requiredCapabilities"] == {"sampling": {}}
        needed = _modern_call(process, "test_missing_capability", {"sampling": {}})["result"]
        assert needed["inputRequests"]["summary"]["method"] == "sampling/createMessage"

        # The legacy era has no input-required results: the fixture refuses in-band.
        process.initialize("2025-11-25")
        legacy = process.request(
            "tools/call", {"name": "test_input_required_result_elicitation", "arguments": {}}
        )
        assert legacy["result"]["isError"] is True
        assert "resultType" not in legacy["result"]
