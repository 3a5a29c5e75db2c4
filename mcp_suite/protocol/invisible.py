"""Characters a person reviewing a transcript cannot see, and their visible escapes.

Owns: which characters count as invisible (bidi controls, zero-width characters, the byte-order mark
and Unicode's tag characters, which can spell a whole hidden sentence) and `escape_invisible` (each
shown as `[U+XXXX]`). A read tool returns stored values unchanged; text the catalogue hands the
model (names, comments) is escaped. Pure: no I/O.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["INVISIBLE", "escape_invisible"]

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
