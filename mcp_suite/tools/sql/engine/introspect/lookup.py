"""Pure decisions for the schema listing (`sql_schema`): what the caller's strings mean, before any
SQL is sent.

Owns: splitting `object` ("schema.name", with PostgreSQL's identifier rules: unquoted names fold to
lower case, double quotes keep case and may hold dots, `""` is one quote), checking a `name_like`
pattern, the paging cursor (opaque to the caller: the last object's schema and name, tied to the
listing's filters) and the marker of a cut comment. The strings only ever travel as bound
parameters of fixed catalogue queries; nothing here builds SQL. No I/O (an import-linter contract
checks it).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from dataclasses import dataclass
from typing import Final

from mcp_suite.problems import InvalidArgumentsError, echo

__all__ = [
    "LIKE_ESCAPE",
    "Lookup",
    "cap_comment",
    "decode_cursor",
    "encode_cursor",
    "lookup",
    "split_object_name",
]

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


# A cursor is base64url of ["s1", schema, name, filters]: version, the last object listed, and a
# digest of the filters it was made for (a cursor of another listing is refused, not misread).
_CURSOR_VERSION: Final = "s1"
# The schema and name are PostgreSQL names (at most 63 bytes): a longer cursor is no cursor of ours.
MAX_CURSOR_CHARS: Final = 1_000
_BAD_CURSOR: Final = (
    "cursor is not a next_cursor this server gave for this listing (the same schema, name_like and"
    " object): start again without a cursor."
)


def _filters(query: Lookup) -> str:
    key = json.dumps([query.schema, query.name_like, query.object_schema, query.object_name])
    return hashlib.sha256(key.encode()).hexdigest()[:16]


def encode_cursor(query: Lookup, schema: str, name: str) -> str:
    """The `next_cursor` that continues the listing of `query` after the object `schema.name`."""
    payload = json.dumps([_CURSOR_VERSION, schema, name, _filters(query)], ensure_ascii=False)
    return base64.urlsafe_b64encode(payload.encode()).decode("ascii").rstrip("=")


def decode_cursor(cursor: str, query: Lookup) -> tuple[str, str]:
    """(schema, name) of the last object listed before; `InvalidArgumentsError` for anything this
    server did not give out for the same filters (garbage, an edited cursor, another listing's)."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        value = json.loads(raw.decode())
    except (binascii.Error, ValueError):  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        raise _bad_cursor() from None
    if (
        not isinstance(value, list)
        or len(value) != 4
        or not all(isinstance(part, str) for part in value)
        or value[0] != _CURSOR_VERSION
        or value[3] != _filters(query)
        or not value[1]
        or not value[2]
    ):
        raise _bad_cursor()
    return value[1], value[2]


def _bad_cursor() -> InvalidArgumentsError:
    return InvalidArgumentsError(_BAD_CURSOR, invalid_params=("cursor",))


def cap_comment(text: str | None, total_chars: int | None, limit: int) -> str | None:
    """A comment cut to its first `limit` characters (the query sends no more) and marked so, with
    its whole length; shorter comments as they are."""
    if text is None or total_chars is None or total_chars <= limit:
        return text
    return f"{text[:limit]}… [cut: {total_chars} characters in all]"


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
