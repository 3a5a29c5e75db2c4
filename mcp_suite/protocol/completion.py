"""`completion/complete` (server/utilities/completion): what may be completed, and the answer's shape.

Pure: parses the request's `ref`, `argument` and `context`, decides whether the answer is known
without the database (the `source` argument: the sources of the schema resources this caller may
list) or needs it (a `schema` or `table` name, read by the resource's reader under the caller's
role, as `sql_schema` reads them), and builds the bounded result. The specification completes the
arguments of prompts and resource templates only (no tool arguments, in any revision); this server
serves no prompts, so every completion goes through a schema resource (docs/completions.md).
Must not import trio, a tool or the registry.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

from mcp_suite.problems import InvalidParamsError, echo
from mcp_suite.protocol.prompts import Prompt
from mcp_suite.protocol.sanitize import allowed_in_arguments
from mcp_suite.settings import COMPLETION_MAX_VALUE_CHARS, COMPLETION_MAX_VALUES, NAME_ECHO_CHARS

__all__ = [
    "COMPLETE_METHOD",
    "SOURCE_TEMPLATE",
    "Ask",
    "Completer",
    "Completions",
    "DatabaseNames",
    "completion_result",
    "match_prefix",
    "parse_complete_params",
]

COMPLETE_METHOD: Final = "completion/complete"
# The URI template whose one argument is the source of a schema resource (`postgres://<source>/schema`).
SOURCE_TEMPLATE: Final = "postgres://{source}/schema"
# The arguments of a schema resource completed from the database, by what they name.
NAME_ARGUMENTS: Final = ("schema", "table")
# The first revision whose schema has the `completions` capability (2024-11-05 has the method alone).
_CAPABILITY_SINCE: Final = "2025-03-26"


def advertised_in(version: str | None) -> bool:
    """Whether the `completions` capability exists in the handshake `version` (None: the modern era)."""
    return version is None or version >= _CAPABILITY_SINCE


@dataclass(frozen=True, slots=True)
class Ask:
    """A parsed `completion/complete`: the ref's URI (a `ref/resource`) or prompt name (`prompt`
    True: a `ref/prompt`), the argument's name and typed value, and the arguments the client
    already resolved (`context.arguments`, strings only)."""

    uri: str
    argument: str
    value: str
    context: Mapping[str, str] = field(default_factory=dict)
    prompt: bool = False


@dataclass(frozen=True, slots=True)
class DatabaseNames:
    """The answer needs the database: the `argument` ("schema" or "table") names starting with
    `prefix` that the reader of the schema resource `uri` may read (`schema`: only that schema's
    tables; None: every schema's)."""

    uri: str
    argument: str
    prefix: str
    schema: str | None = None

    def arguments(self) -> dict[str, Any]:
        """As a `StartCall`'s arguments (what the runtime hands the resource's completer)."""
        return {"argument": self.argument, "prefix": self.prefix, "schema": self.schema}


def _invalid(detail: str, where: str) -> InvalidParamsError:
    return InvalidParamsError(detail, invalid_params=[where])


def _string(value: object, what: str, where: str, *, empty: bool = False) -> str:
    if not isinstance(value, str) or (not empty and not value):
        raise _invalid(f"completion/complete needs {what} as a {'' if empty else 'non-empty '}string.", where)
    if len(value) > COMPLETION_MAX_VALUE_CHARS:
        raise _invalid(
            f"completion/complete takes {what} of at most {COMPLETION_MAX_VALUE_CHARS} characters.", where
        )
    if not allowed_in_arguments(value):
        # The sanitizer's rule for a tool's arguments: no name it completes could hold one, and a
        # NUL could not even reach PostgreSQL as text.
        raise _invalid(
            f"completion/complete takes {what} without control or bidirectional characters.", where
        )
    return value


def parse_complete_params(params: Mapping[str, Any]) -> Ask:
    """Check a `completion/complete` request's params (-32602 for each malformed member)."""
    ref = params.get("ref")
    if not isinstance(ref, dict):
        raise _invalid('completion/complete needs "ref", an object with its "type".', "ref")
    kind = ref.get("type")
    if kind == "ref/prompt":
        uri = _string(ref.get("name"), 'the ref\'s "name"', "ref")
    elif kind == "ref/resource":
        uri = _string(ref.get("uri"), 'the ref\'s "uri"', "ref")
    else:
        raise _invalid('completion/complete takes a "ref" of type "ref/resource" or "ref/prompt".', "ref")
    argument = params.get("argument")
    if not isinstance(argument, dict):
        raise _invalid('completion/complete needs "argument", an object with "name" and "value".', "argument")
    name = _string(argument.get("name"), 'the argument\'s "name"', "argument")
    value = _string(argument.get("value"), 'the argument\'s "value"', "argument", empty=True)
    context: dict[str, str] = {}
    given = params.get("context")
    if given is not None:
        resolved = given.get("arguments") if isinstance(given, dict) else None
        if not isinstance(given, dict) or not isinstance(resolved, dict | None):
            raise _invalid(
                'completion/complete takes "context" as an object whose "arguments" is one.', "context"
            )
        for key, item in (resolved or {}).items():
            context[key] = _string(item, "each context argument", "context", empty=True)
    return Ask(uri, name, value, context, prompt=kind == "ref/prompt")


def match_prefix(candidates: Iterable[str], prefix: str) -> list[str]:
    """The candidates that start with `prefix`, ignoring case (Unicode case folding), in order."""
    folded = prefix.casefold()
    return [name for name in candidates if name.casefold().startswith(folded)]


def completion_result(values: Iterable[str], total: int) -> dict[str, Any]:
    """The result: at most COMPLETION_MAX_VALUES `values` (the first ones), the `total` that matched,
    and `hasMore` when some of them are not in `values`."""
    shown = list(values)[:COMPLETION_MAX_VALUES]
    return {"completion": {"values": shown, "total": total, "hasMore": total > len(shown)}}


class Completer(Protocol):
    """What a core completes with (`Completions` in the product; a test server may bring its own):
    true when it completes anything (the method and its capability exist only then); `plan` says
    the answer, or the database work it needs, and raises -32602 for what it does not complete."""

    def __bool__(self) -> bool: ...

    def plan(self, ask: Ask) -> dict[str, Any] | DatabaseNames: ...


class Completions:
    """What one core completes: the schema resources served (URI → source), which of them the
    caller may list (None: all, as over stdio), and the arguments of the prompts served (each
    with the values it declares; mcp-suite serves no prompt, the conformance fixtures do)."""

    __slots__ = ("_listed", "_prompts", "_sources")

    def __init__(
        self,
        sources: Mapping[str, str],
        listed: Callable[[str], bool] | None = None,
        prompts: Sequence[Prompt] = (),
    ) -> None:
        self._sources = dict(sources)
        self._listed = listed
        self._prompts = {prompt.name: prompt for prompt in prompts if prompt.arguments}

    def __bool__(self) -> bool:
        return bool(self._sources) or bool(self._prompts)

    def _prompt(self, ask: Ask) -> dict[str, Any]:
        """A prompt's argument: its declared values that start with the typed prefix."""
        prompt = self._prompts.get(ask.uri)
        if prompt is None:
            raise _invalid(f"There is no prompt named {echo(ask.uri, NAME_ECHO_CHARS)!r} to complete.", "ref")
        for argument in prompt.arguments:
            if argument.name == ask.argument:
                matches = match_prefix(argument.values, ask.value)
                return completion_result(matches, len(matches))
        raise self._unknown_argument(ask, [argument.name for argument in prompt.arguments])

    def plan(self, ask: Ask) -> dict[str, Any] | DatabaseNames:
        """The answer itself (a `source`), or the database work it needs. Raises -32602 for a ref
        or an argument this server does not complete: a `ref/prompt` by name, as the product
        serves no prompts (completion, "Error Handling": an invalid prompt name is -32602)."""
        if ask.prompt and self._prompts:
            return self._prompt(ask)
        if ask.prompt:
            raise _invalid(
                "This server serves no prompts; complete the arguments of a resource template"
                f" (ref/resource with uri {SOURCE_TEMPLATE!r} or a schema resource's URI).",
                "ref",
            )
        if ask.uri == SOURCE_TEMPLATE:
            if ask.argument != "source":
                raise self._unknown_argument(ask, ("source",))
            shown = self._listed or (lambda _uri: True)
            # Only a source whose schema resource is the template's expansion: each value completes
            # the template to a URI that resources/list shows (with MCP_SQL_DSN the one resource is
            # named by its database, and the tools take no source: nothing to complete).
            sources = sorted(
                {
                    source
                    for uri, source in self._sources.items()
                    if shown(uri) and uri == SOURCE_TEMPLATE.replace("{source}", source)
                }
            )
            matches = match_prefix(sources, ask.value)
            return completion_result(matches, len(matches))
        if ask.uri not in self._sources:
            raise _invalid(
                f"There is no resource template {echo(ask.uri, NAME_ECHO_CHARS)!r} to complete; this "
                f"server completes {SOURCE_TEMPLATE!r} (source) and each schema resource's URI "
                "(schema, table).",
                "ref",
            )
        if ask.argument not in NAME_ARGUMENTS:
            raise self._unknown_argument(ask, NAME_ARGUMENTS)
        schema = ask.context.get("schema") if ask.argument == "table" else None
        return DatabaseNames(ask.uri, ask.argument, ask.value, schema or None)

    @staticmethod
    def _unknown_argument(ask: Ask, known: Iterable[str]) -> InvalidParamsError:
        return _invalid(
            f"{echo(ask.uri, NAME_ECHO_CHARS)!r} has no argument {echo(ask.argument, NAME_ECHO_CHARS)!r}"
            f" to complete; it completes {', '.join(known)}.",
            "argument",
        )
