"""Whatever a hidden value holds, a data error's message shows none of it unless the caller wrote it."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from mcp_suite.tools.sql.engine.error_values import withhold_values

# PostgreSQL's forms that quote a value, and one that prints it bare.
TEMPLATES = (
    'invalid input syntax for type integer: "{}"',
    'value "{}" is out of range for type integer',
    'date/time field value out of range: "{}"',
    "requested character too large for encoding: {}",
)
VALUES = st.text(alphabet=st.characters(codec="utf-8"), min_size=4, max_size=40)
NUMBERS = st.integers(min_value=1000, max_value=10**12).map(str)


@given(template=st.sampled_from(TEMPLATES[:3]), value=VALUES, text=st.text(max_size=60))
def test_a_quoted_hidden_value_never_shows(template: str, value: str, text: str) -> None:
    shown = withhold_values(template.format(value), text)
    if value not in text and value.replace("'", "''") not in text:
        assert value not in shown or value in template


@given(value=NUMBERS, text=st.text(alphabet="SELECT chr(n) FROM v 0123456789", max_size=40))
def test_a_bare_hidden_number_never_shows(value: str, text: str) -> None:
    shown = withhold_values(TEMPLATES[3].format(value), text)
    if value not in text:
        assert value not in shown
