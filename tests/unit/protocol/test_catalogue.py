"""The catalogue as a value: what the server serves, and what each caller may see of it (the tools
it may list with `source` narrowed to its grants, the resources it may read, instructions naming only
its sources), with the tools' descriptions built once, on first use, never to answer `initialize`."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Final

from mcp_suite.protocol.authz import ANONYMOUS, Identity
from mcp_suite.protocol.catalogue import Catalogue, ServedResource, ServedTemplate, ServedTool
from mcp_suite.protocol.contents import ResourceTemplate
from mcp_suite.protocol.core import StartCall
from mcp_suite.protocol.mcp import ToolDescription
from mcp_suite.protocol.prompts import Prompt
from mcp_suite.settings import Settings
from tests.support.session_core import SCHEMA, SCHEMA_URI, TOOLS, answer_of, counter, line

QUERY: Final = dataclasses.replace(
    TOOLS[0], name="query", input_schema={"type": "object", "properties": {"source": {"enum": ["a", "b"]}}}
)
DESCRIPTIONS: Final = [QUERY, TOOLS[1]]


def catalogue(built: list[int]) -> Catalogue:
    """`query` (scope `sql:read`, sources a and b), `sleep` (`test:call`) and the schema resource
    (`sql:read`, source a); `built` counts the builds of the descriptions."""

    def describe() -> Sequence[ToolDescription]:
        built.append(1)
        return DESCRIPTIONS

    def instructions_for(sources_of: Callable[[str], Sequence[str]]) -> str:
        return f"query reads {', '.join(sources_of('query')) or 'nothing'}"

    return Catalogue(
        server_name="mcp-suite",
        server_version="9.9",
        tools=[ServedTool("query", "sql:read"), ServedTool("sleep", "test:call")],
        describe=describe,
        resources=[ServedResource(SCHEMA, "sql:read", "a")],
        instructions="query reads a, b",
        instructions_for=instructions_for,
    )


def test_the_whole_view_shows_everything_and_builds_nothing_until_asked() -> None:
    built: list[int] = []
    served = catalogue(built)
    whole = served.whole()
    assert (whole.instructions, whole.listed, whole.private, built) == ("query reads a, b", None, False, [])
    assert served.served.scopes() == ("sql:read", "test:call")
    assert served.served.scopes_supported() == ("sql:read", "test:call", "sql:read:a")
    assert list(whole.tools()) == DESCRIPTIONS
    assert list(served.view(ANONYMOUS).tools()) == DESCRIPTIONS  # every source, every tool
    assert built == [1]  # once, whoever asks


def test_a_caller_sees_the_tools_its_scopes_grant_with_source_narrowed_and_its_own_instructions() -> None:
    built: list[int] = []
    served = catalogue(built)
    erin = served.view(Identity("erin", frozenset({"sql:read:b", "test:call"})))
    assert (erin.instructions, erin.private) == ("query reads b", True)
    assert [(d.name, d.input_schema) for d in erin.tools()] == [
        ("query", {"type": "object", "properties": {"source": {"enum": ["b"]}}}),
        ("sleep", {"type": "object"}),
    ]
    assert erin.listed is not None
    assert not erin.listed(SCHEMA_URI)  # the schema of a, not hers to read
    nobody = served.view(Identity("carol", frozenset({"metrics:read"})))
    assert (list(nobody.tools()), nobody.instructions) == ([], "query reads nothing")
    assert built == [1]


def test_a_core_built_over_a_view_lists_what_the_view_shows_and_calls_every_tool() -> None:
    served = catalogue([])
    core = served.core(served.view(Identity("erin", frozenset({"test:call"}))), Settings(), counter())
    initialized = answer_of(core.receive(line("initialize", {"protocolVersion": "2025-11-25"})))
    assert initialized["result"]["instructions"] == "query reads nothing"
    listed = answer_of(core.receive(line("tools/list", {}, 2)))["result"]
    assert [tool["name"] for tool in listed["tools"]] == ["sleep"]
    assert answer_of(core.receive(line("resources/list", {}, 3)))["result"]["resources"] == []
    # Listed or not, every tool is callable at the core: the transport checks the caller's scope.
    started = core.receive(line("tools/call", {"name": "query", "arguments": {"source": "a"}}, 4))
    assert isinstance(started, StartCall)
    assert (started.name, started.arguments) == ("query", {"source": "a"})


def test_a_template_is_granted_by_its_scope_and_its_reads_and_listing_follow_the_grant() -> None:
    template = ResourceTemplate(
        uri_template="test://item/{id}",
        name="item",
        title="Item",
        description="An item.",
        mime_type="text/plain",
    )
    served = Catalogue(
        server_name="mcp-suite",
        server_version="9.9",
        tools=[ServedTool("sleep", "test:call")],
        describe=lambda: [TOOLS[1]],
        templates=[ServedTemplate(template, "items:read")],
        prompts=[Prompt("p", "P", "A prompt.", lambda _arguments: [])],
        subscriptions=True,
    )
    assert served.served.scopes() == ("test:call", "items:read")
    reader, other = Identity("ann", frozenset({"items:read"})), Identity("bob", frozenset({"test:call"}))
    assert served.grants().resource("test://item/{id}").lacking(reader) is None
    assert served.grants().resource("test://item/{id}").lacking(other) is not None
    for identity, listed in ((reader, 1), (other, 0)):
        core = served.core(served.view(identity), Settings(), counter())
        capabilities = answer_of(core.receive(line("initialize", {"protocolVersion": "2025-11-25"})))[
            "result"
        ]["capabilities"]
        assert capabilities["resources"]["subscribe"] is True
        assert capabilities["prompts"] == {"listChanged": False}
        templates = answer_of(core.receive(line("resources/templates/list", {}, 2)))["result"][
            "resourceTemplates"
        ]
        assert len(templates) == listed
        start = core.receive(line("resources/read", {"uri": "test://item/7"}, 3))
        # Every caller's read starts as a call of the template: the transport refuses one outside
        # the caller's grants, keyed by the template.
        assert isinstance(start, StartCall)
        assert start.name == "test://item/{id}"
