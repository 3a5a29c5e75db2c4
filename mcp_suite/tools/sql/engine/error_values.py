"""What a database error may show of a value: only what the caller's own text holds (issue 51).

PostgreSQL's data and constraint errors quote the value they failed on (`invalid input syntax for
type integer: "x"`, `value "9999999999" is out of range ...`, `invalid byte sequence ...: 0xff`,
`date field value out of range: 2020-13-01`). That value may come from a row the caller may not
read (a view that is not a security barrier casts before the row-level policy filters), so the
error channel would show more than the result channel. `withhold_values` replaces each quoted or
numeric value that the caller's text does not contain with a marker that says why, and keeps the
rest of the message. Pure: no I/O.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["WITHHELD", "withhold_values"]

WITHHELD: Final = "[value withheld: not in the query's text]"

# The quotation marks PostgreSQL's messages use: ASCII in English, typographic in some
# translations (lc_messages is the server's). Any of them opens or closes a quoted value.
_QUOTES: Final = frozenset('"«»„“”‘’「」')
# An unquoted value: hexadecimal bytes (`0xe2 0x82 0xac`), or a number with what may follow it in a
# date, time or interval (`2020-13-01`, `25:00:00`, `1e+300`). Not a digit inside a word (`int4`).
_BARE: Final = re.compile(r"(?<![\w.])(?:0x[0-9a-fA-F]+(?:\s+0x[0-9a-fA-F]+)*|[-+]?\d[\w.:+-]*)")


def _in_text(value: str, text: str) -> bool:
    """Whether the caller's `text` holds `value` as a whole: not as part of a longer word or
    number (`1` is not in `LIMIT 10`); as written, or as a string literal writes it ('' for ')."""
    if not value:
        return "''" in text
    for written in {value, value.replace("'", "''")}:
        start = r"(?<!\w)" if written[0].isalnum() or written[0] == "_" else ""
        end = r"(?!\w)" if written[-1].isalnum() or written[-1] == "_" else ""
        if re.search(start + re.escape(written) + end, text):
            return True
    return False


def _withhold_quoted(message: str, text: str) -> str:
    marks = [i for i, char in enumerate(message) if char in _QUOTES]
    if len(marks) < 2:
        return message
    # One quoted value: its marks are the first and the last. With more marks, which of them
    # open and close is ambiguous (a value may hold a quotation mark itself), so the whole stretch
    # from the first to the last is one value.
    first, last = marks[0], marks[-1]
    if _in_text(message[first + 1 : last], text):
        return message
    return message[:first] + WITHHELD + message[last + 1 :]


def _withhold_bare(message: str, text: str) -> str:
    def one(match: re.Match[str]) -> str:
        value = match.group(0).rstrip(".:,")
        kept = value if _in_text(value, text) else WITHHELD
        return kept + match.group(0)[len(value) :]

    # Only outside what is already withheld (its text has no digit, but stay explicit).
    parts = message.split(WITHHELD)
    return WITHHELD.join(_BARE.sub(one, part) for part in parts)


def withhold_values(message: str, text: str) -> str:
    """`message` with every value the caller's `text` does not hold replaced by `WITHHELD`.

    Security: for the messages of data exceptions (SQLSTATE class 22) and constraint violations
    (23) only, whose values may be a hidden row's; quoted values (in any of `_QUOTES`, over
    several lines too) and bare numbers and bytes. A value the caller wrote stays, so the caller
    can fix its own literal. Over-withholds rather than under: an ambiguous quotation is one value.
    """
    return _withhold_bare(_withhold_quoted(message, text), text)
