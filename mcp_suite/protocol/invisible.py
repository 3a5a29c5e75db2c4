"""Characters a person reviewing a transcript cannot see, and their visible escapes.

Owns: which characters count as invisible (bidi controls, zero-width characters, the byte-order mark
and Unicode's tag characters, which can spell a whole hidden sentence) and `escape_invisible` (each
shown as `[U+XXXX]`) and `count_invisible`. A read tool returns stored values unchanged and reports
how many it holds; text the catalogue hands the model (names, comments) is escaped. Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Final

__all__ = [
    "INVISIBLE",
    "count_invisible",
    "counted",
    "escape_invisible",
    "lines_holding",
    "listed",
    "strings_of",
]

INVISIBLE: Final = re.compile(
    "["
    "\u061c"  # ARABIC LETTER MARK
    "\u115f\u1160\u3164\uffa0"  # Hangul fillers, which render as nothing
    "\u180e"  # MONGOLIAN VOWEL SEPARATOR
    "\u200b-\u200f"  # zero-width space, non-joiner, joiner; left-to-right and right-to-left marks
    "\u202a-\u202e"  # bidi embeddings and overrides
    "\u2060-\u2064"  # word joiner, invisible operators
    "\u2066-\u2069"  # bidi isolates
    "\ufeff"  # zero-width no-break space (byte-order mark)
    "\U000e0000-\U000e007f"  # tag characters
    "]"
)


def _escape(match: re.Match[str]) -> str:
    return f"[U+{ord(match.group()):04X}]"


def escape_invisible(text: str) -> str:
    """`text` with every invisible character shown as `[U+XXXX]`; other text as it is."""
    return INVISIBLE.sub(_escape, text)


def count_invisible(value: object) -> int:
    """How many invisible characters `value` holds: a string's, or those of every string and key
    inside a JSON value (lists and dicts, as a tool's result carries them); 0 for anything else."""
    return sum(len(INVISIBLE.findall(text)) for text in strings_of(value) if not text.isascii())


def strings_of(value: object) -> Iterator[str]:
    """`value` if it is a string, else every string and key inside it (lists and dicts)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for item in value:
            yield from strings_of(item)
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from strings_of(key)
            yield from strings_of(item)


def lines_holding(text: str, shown: int) -> tuple[int, int, list[int]]:
    """Invisible characters in `text`: how many, on how many lines, and the first `shown` of those
    lines (numbered from 1, lines ending at LF)."""
    if text.isascii():
        return 0, 0, []
    characters = 0
    lines: list[int] = []
    count = 0
    for number, line in enumerate(text.split("\n"), start=1):
        found = len(INVISIBLE.findall(line)) if not line.isascii() else 0
        if found:
            characters += found
            count += 1
            if len(lines) < shown:
                lines.append(number)
    return characters, count, lines


def counted(number: int, noun: str) -> str:
    """`number` and `noun`, plural unless it is one: "1 line", "3 lines"."""
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"


def listed(first: list[int], total: int) -> str:
    """`first` (the first of `total` numbers) as "3, 7, 9", with ", ..." when some are left out."""
    return ", ".join(map(str, first)) + (", ..." if total > len(first) else "")
