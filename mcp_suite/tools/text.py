"""The tools' shared text handling: characters a person reviewing a transcript cannot see, their
visible escapes, and the counts and lists the tools' notes about them are worded with.

Owns: which characters count as invisible (Unicode's Default_Ignorable_Code_Point and the format
category Cf, as data below: bidi controls, zero-width characters, the byte-order mark, the soft
hyphen, variation selectors, which can carry a hidden message one byte per character, and the tag
characters, which can spell a whole hidden sentence; and the Hangul fillers, which render as
nothing) and `escape_invisible` (each shown as `[U+XXXX]`) and `count_invisible`. A read tool
returns stored values unchanged and reports how many it holds; text the catalogue hands the model
(names, comments) is escaped. `counted` and `listed` word the notes. Shared by every family (the
files tools and the SQL family); pure: no I/O (the "policy modules do no I/O" contract).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Final

__all__ = [
    "DEFAULT_IGNORABLE",
    "FORMAT",
    "INVISIBLE",
    "count_invisible",
    "counted",
    "escape_invisible",
    "lines_holding",
    "listed",
    "strings_of",
]

# Default_Ignorable_Code_Point, from the Unicode Character Database's DerivedCoreProperties.txt
# (Unicode 15.1): Other_Default_Ignorable_Code_Point + Cf + Variation_Selector, less White_Space,
# U+FFF9..FFFB, U+13430..1343F and the prepended concatenation marks. `unicodedata` has no such
# property; tests/unit/tools/test_invisible_ranges.py pins these ranges against its categories.
DEFAULT_IGNORABLE: Final[tuple[tuple[int, int], ...]] = (
    (0x00AD, 0x00AD),  # Cf  SOFT HYPHEN
    (0x034F, 0x034F),  # Mn  COMBINING GRAPHEME JOINER
    (0x061C, 0x061C),  # Cf  ARABIC LETTER MARK
    (0x115F, 0x1160),  # Lo  HANGUL CHOSEONG FILLER..HANGUL JUNGSEONG FILLER
    (0x17B4, 0x17B5),  # Mn  KHMER VOWEL INHERENT AQ..AA
    (0x180B, 0x180D),  # Mn  MONGOLIAN FREE VARIATION SELECTOR ONE..THREE
    (0x180E, 0x180E),  # Cf  MONGOLIAN VOWEL SEPARATOR
    (0x180F, 0x180F),  # Mn  MONGOLIAN FREE VARIATION SELECTOR FOUR
    (0x200B, 0x200F),  # Cf  ZERO WIDTH SPACE..RIGHT-TO-LEFT MARK
    (0x202A, 0x202E),  # Cf  LEFT-TO-RIGHT EMBEDDING..RIGHT-TO-LEFT OVERRIDE
    (0x2060, 0x2064),  # Cf  WORD JOINER..INVISIBLE PLUS
    (0x2065, 0x2065),  # Cn  <reserved-2065>
    (0x2066, 0x206F),  # Cf  LEFT-TO-RIGHT ISOLATE..NOMINAL DIGIT SHAPES
    (0x3164, 0x3164),  # Lo  HANGUL FILLER
    (0xFE00, 0xFE0F),  # Mn  VARIATION SELECTOR-1..16
    (0xFEFF, 0xFEFF),  # Cf  ZERO WIDTH NO-BREAK SPACE
    (0xFFA0, 0xFFA0),  # Lo  HALFWIDTH HANGUL FILLER
    (0xFFF0, 0xFFF8),  # Cn  <reserved-FFF0>..<reserved-FFF8>
    (0x1BCA0, 0x1BCA3),  # Cf  SHORTHAND FORMAT LETTER OVERLAP..UP STEP
    (0x1D173, 0x1D17A),  # Cf  MUSICAL SYMBOL BEGIN BEAM..END PHRASE
    (0xE0000, 0xE0000),  # Cn  <reserved-E0000>
    (0xE0001, 0xE0001),  # Cf  LANGUAGE TAG
    (0xE0002, 0xE001F),  # Cn  <reserved>
    (0xE0020, 0xE007F),  # Cf  TAG SPACE..CANCEL TAG
    (0xE0080, 0xE00FF),  # Cn  <reserved>
    (0xE0100, 0xE01EF),  # Mn  VARIATION SELECTOR-17..256
    (0xE01F0, 0xE0FFF),  # Cn  <reserved>
)
# The format category (Cf) beyond the above (Unicode 15.1): marks that shape what follows them
# (prepended concatenation marks such as U+0600 ARABIC NUMBER SIGN), interlinear annotation
# controls and Egyptian hieroglyph format controls. Pinned against `unicodedata` by the same test.
FORMAT: Final[tuple[tuple[int, int], ...]] = (
    (0x0600, 0x0605),
    (0x06DD, 0x06DD),
    (0x070F, 0x070F),
    (0x0890, 0x0891),
    (0x08E2, 0x08E2),
    (0xFFF9, 0xFFFB),
    (0x110BD, 0x110BD),
    (0x110CD, 0x110CD),
    (0x13430, 0x1343F),
)


def _character_class(ranges: tuple[tuple[int, int], ...]) -> str:
    return "".join(
        re.escape(chr(low)) if low == high else f"{re.escape(chr(low))}-{re.escape(chr(high))}"
        for low, high in sorted(ranges)
    )


INVISIBLE: Final = re.compile(f"[{_character_class(DEFAULT_IGNORABLE + FORMAT)}]")


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
