"""The structural sanitizer over raw `tools/call` arguments (docs/wire.md). Pure, iterative, no I/O.

Runs before any schema validation so a hostile shape (deep nesting, huge fan-out, odd keys, control or
bidi characters, lone surrogates) is refused cheaply and uniformly, whatever the tool.
"""

from __future__ import annotations

import re
from typing import Any, Final

from mcp_suite.problems import InvalidArgumentsError, echo
from mcp_suite.settings import ARG_MAX_KEY_CHARS

__all__ = ["allowed_in_arguments", "is_flat_and_clean", "sanitize_arguments", "walk_arguments"]

_KEY: Final = re.compile(rf"[A-Za-z_][A-Za-z0-9_]{{0,{ARG_MAX_KEY_CHARS - 1}}}\Z")
# C0 controls except tab (U+0009) and newline (U+000A); DEL and C1 controls; bidi controls;
# lone surrogates (only possible through \uD800-style JSON escapes).
_BAD_CHARS: Final = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c\ud800-\udfff]"
)


def allowed_in_arguments(text: str) -> bool:
    """True when `text` holds no character the sanitizer refuses in an argument string: a name
    that fails this can never be asked for (`sandbox_fs_list` leaves such names out)."""
    return _BAD_CHARS.search(text) is None


# JSON scalars other than strings: nothing in them can break a rule.
_SCALARS: Final = frozenset({int, float, bool, type(None)})


def _describe_char(char: str) -> str:
    code = ord(char)
    if 0xD800 <= code <= 0xDFFF:
        return "a lone surrogate"
    if code in (0x200E, 0x200F, 0x061C) or 0x202A <= code <= 0x202E or 0x2066 <= code <= 0x2069:
        return f"a bidirectional control character (U+{code:04X})"
    return f"a control character (U+{code:04X})"


def sanitize_arguments(arguments: Any, *, max_depth: int, max_items: int) -> None:
    """Raise `InvalidArgumentsError` if `arguments` breaks a structural rule.

    Depth counts the arguments object itself as level 1. Items are every key, list element and
    scalar below the root. Limits: iterative, so any nesting is handled without recursion.
    """
    if not isinstance(arguments, dict):
        raise InvalidArgumentsError("The arguments must be a JSON object.")
    if max_depth >= 1 and len(arguments) <= max_items and is_flat_and_clean(arguments):
        return  # most calls: one level of scalars, nothing to refuse
    walk_arguments(arguments, max_depth=max_depth, max_items=max_items)


def walk_arguments(arguments: dict[Any, Any], *, max_depth: int, max_items: int) -> None:
    """The full structural check of `sanitize_arguments`, for any shape (it skips this walk for flat,
    clean arguments: `is_flat_and_clean`, whose verdict must be the walk's)."""
    items = 0
    stack: list[tuple[Any, int, str]] = [(arguments, 1, "")]
    while stack:
        node, depth, path = stack.pop()
        if isinstance(node, dict):
            if depth > max_depth:
                raise _too_deep(max_depth, path)
            for key, child in node.items():
                if not _KEY.match(key):
                    raise InvalidArgumentsError(
                        f"The argument key {echo(repr(key), 80)} is not an identifier (letters, digits "
                        f"and _, not starting with a digit, at most {ARG_MAX_KEY_CHARS} characters).",
                        invalid_params=[_root(path)] if path else [],
                    )
                items += 1
                stack.append((child, depth + 1, f"{path}.{key}" if path else key))
        elif isinstance(node, list):
            if depth > max_depth:
                raise _too_deep(max_depth, path)
            items += len(node)
            stack.extend((child, depth + 1, path) for child in node)
        elif isinstance(node, str):
            bad = _BAD_CHARS.search(node)
            if bad:
                raise InvalidArgumentsError(
                    f"The argument {_root(path)!r} contains {_describe_char(bad.group())}, "
                    "which is not allowed in any argument.",
                    invalid_params=[_root(path)],
                )
        if items > max_items:
            raise InvalidArgumentsError(
                f"The arguments hold more than {max_items} items in total.",
                invalid_params=[_root(path)] if path else [],
            )


def is_flat_and_clean(arguments: dict[Any, Any]) -> bool:
    """True when `arguments` holds only scalars under valid keys, with no forbidden character.

    Exactly what the full walk accepts for an object one level deep; anything else (nesting, or
    something to refuse) returns False and the full walk decides, and words the refusal.
    """
    for key, value in arguments.items():
        if not _KEY.match(key):
            return False
        kind = type(value)
        if kind is str:
            if _BAD_CHARS.search(value):
                return False
        elif kind not in _SCALARS:
            return False
    return True


def _root(path: str) -> str:
    return path.split(".", 1)[0]


def _too_deep(max_depth: int, path: str) -> InvalidArgumentsError:
    return InvalidArgumentsError(
        f"The arguments nest deeper than {max_depth} levels.",
        invalid_params=[_root(path)] if path else [],
    )
