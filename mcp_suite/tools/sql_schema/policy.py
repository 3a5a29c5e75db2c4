"""Pure decisions for `sql_schema`: what the caller's strings mean, before any SQL is sent.

Owns: splitting `object` ("schema.name", with PostgreSQL's identifier rules: unquoted names fold to
lower case, double quotes keep case and may hold dots, `""` is one quote) and checking a
`name_like` pattern. The strings only ever travel as bound parameters of fixed catalogue queries;
nothing here builds SQL. No I/O (an import-linter contract checks it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from mcp_suite.problems import InvalidArgumentsError, echo

__all__ = ["LIKE_ESCAPE", "Lookup", "lookup", "split_object_name"]

# The escape character of `name_like` (LIKE's default, spelled out in the query).
LIKE_ESCAPE: Final = "\\"
_ASCII_LOWER: Final = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


@dataclass(frozen=True, slots=True)
class Lookup:
    """The catalogue query's parameters, each None when not asked for."""

    schema: str | None
    name_like: str | None
    object_schema: str | None
    object_name: str | None


def lookup(schema: str | None, name_like: str | None, obj: str | None) -> Lookup:
    """The parameters for the arguments; raises `InvalidArgumentsError` for a malformed `object`
    or a `name_like` that ends inside an escape."""
    if name_like is not None:
        _check_like(name_like)
    object_schema = object_name = None
    if obj is not None:
        object_schema, object_name = split_object_name(obj)
    return Lookup(schema=schema, name_like=name_like, object_schema=object_schema, object_name=object_name)


def _check_like(pattern: str) -> None:
    trailing = len(pattern) - len(pattern.rstrip(LIKE_ESCAPE))
    if trailing % 2:
        raise InvalidArgumentsError(
            "name_like ends in a lone backslash, which escapes nothing; write '\\\\' for a"
            " literal backslash, '\\%' or '\\_' for a literal '%' or '_'.",
            invalid_params=("name_like",),
        )


def split_object_name(text: str) -> tuple[str, str]:
    """`schema.name` as PostgreSQL reads it: (`docs`, `pages`) for `Docs.Pages` or
    `"docs"."pages"`; (`My Schema`, `a.b`) for `"My Schema"."a.b"`."""
    parts: list[str] = []
    current: list[str] = []
    quoted = False  # inside double quotes
    was_quoted = False  # the current part had quotes (then it keeps its case)
    i = 0
    while i < len(text):
        ch = text[i]
        if quoted:
            if ch == '"':
                if text[i + 1 : i + 2] == '"':
                    current.append('"')
                    i += 1
                else:
                    quoted = False
            else:
                current.append(ch)
        elif ch == '"':
            quoted = was_quoted = True
        elif ch == ".":
            parts.append(_part(current, was_quoted, text))
            current, was_quoted = [], False
        else:
            current.append(ch)
        i += 1
    if quoted:
        raise _bad_object(text, "has an unterminated double quote")
    parts.append(_part(current, was_quoted, text))
    if len(parts) != 2:
        raise _bad_object(text, "must be one schema and one name, as schema.name")
    return parts[0], parts[1]


def _part(chars: list[str], was_quoted: bool, text: str) -> str:
    part = "".join(chars)
    if not was_quoted:
        part = part.strip().translate(_ASCII_LOWER)  # PostgreSQL folds only A-Z (UTF-8 server)
    if not part:
        raise _bad_object(text, "has an empty schema or name")
    return part


def _bad_object(text: str, why: str) -> InvalidArgumentsError:
    return InvalidArgumentsError(
        f'object {echo(text, 128)!r} {why} (for example docs.pages, or "My Schema"."My Table").',
        invalid_params=("object",),
    )
