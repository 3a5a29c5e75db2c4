"""What the executor returns is JSON the advertised outputSchema accepts, for every kind of column.

The executor converts only the columns of a type outside `JSON_READY_OIDS`, writes the rows' JSON
once (for the byte cap), and the tool splices its `structuredContent` around it; the server does not
validate results at run time, so these tables prove both: each type the executor trusts loads as a
JSON value already, and the very bytes the tool sends for results of every column type validate
against the tool's `outputSchema` and its result model, and say what a model of the rows would.
"""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import psycopg
import pytest

from mcp_suite.protocol.mcp import model_json_schema, structured_json
from mcp_suite.tools.sql.engine.convert import JSON_READY_OIDS, to_json_value
from mcp_suite.tools.sql.engine.executor import CallTicket, Executor, QueryResult
from mcp_suite.tools.sql.models import ReadOnlySqlResult, SqlColumn
from mcp_suite.tools.sql.read_only_sql.tool import result_json, truncation_hint
from tests.support.pg import DOMAIN_TYPE, ENUM_TYPE, run_unvetted

pytestmark = pytest.mark.pg

# One value of each type the executor trusts to load as JSON (oid -> expression).
JSON_READY_SAMPLES: dict[int, str] = {
    16: "true",
    20: "9223372036854775807::int8",
    21: "(-32768)::int2",
    23: "2147483647::int4",
    26: "26::oid",
    18: "'a'::\"char\"",
    19: "'a name'::name",
    25: "'héllo, \"wörld\"'::text",
    1042: "'ab'::char(3)",
    1043: "'ab'::varchar(5)",
    17: "'\\x00ff10'::bytea",
    1700: "'NaN'::numeric",
    1082: "'infinity'::date",
    1083: "'13:45:10.5'::time",
    1186: "'1 day 02:03:04'::interval",
    2950: "'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::uuid",
    869: "'::1'::inet",
    650: "'10.0.0.0/8'::cidr",
    829: "'08:00:2b:01:02:03'::macaddr",
    774: "'08:00:2b:01:02:03:04:05'::macaddr8",
    790: "12.5::money",
    2249: "ROW(1, 'a')",
    3904: "int4range(1, 5)",
    3906: "numrange(1.5, 2.5)",
    3908: "tsrange('2024-01-01', '2024-02-01')",
    3910: "tstzrange('2024-01-01 00:00+00', NULL)",
    3912: "daterange('2024-01-01', '2024-02-01')",
    3926: "int8range(1, 5)",
    4451: "'{[1,3), [5,7)}'::int4multirange",
    4532: "'{[1.5,2)}'::nummultirange",
    4533: "'{[2024-01-01,2024-02-01)}'::tsmultirange",
    4534: "'{[2024-01-01 00:00+00,)}'::tstzmultirange",
    4535: "'{[2024-01-01,2024-02-01)}'::datemultirange",
    4536: "'{[1,3)}'::int8multirange",
    700: "'NaN'::float4",
    701: "'-Infinity'::float8",
    114: '\'{"a": [1, 2.5, null, "x"], "deep": [[[[1e400]]]]}\'::json',
    3802: '\'{"b": {"c": true}}\'::jsonb',
    1114: "'0044-03-15 12:00 BC'::timestamp",
    1184: "'2024-02-29 13:45:10+02'::timestamptz",
    1266: "'13:45:10+02'::timetz",
}

# Columns the executor does convert: arrays (of built-in and user-defined types), an enum, NULLs.
CONVERTED = (
    "ARRAY[1, 2, NULL]::int4[]",
    "ARRAY['Infinity', 'NaN']::float8[]",
    "ARRAY['{\"k\": 1}']::jsonb[]",
    "ARRAY[1.5, 2]::numeric[]",
    f"'ok'::{ENUM_TYPE}",
    f"ARRAY[['ok'], ['happy']]::{ENUM_TYPE}[]",
    f"ARRAY[1, 20]::{DOMAIN_TYPE}[]",
    "NULL::integer",
    "'0.1'::float4",
)

ROWS_QUERY = (
    "SELECT p.slug, p.editor_id, p.section, p.words, p.words * 1.5 AS weighted, g AS copy,"
    " 'text value ' || p.slug AS label FROM docs.pages p CROSS JOIN generate_series(1, 4) AS g"
    " ORDER BY p.slug, g LIMIT 100"
)

VALIDATOR = jsonschema.Draft202012Validator(model_json_schema(ReadOnlySqlResult))


def _strict_json(data: bytes) -> Any:
    def refuse(constant: str) -> None:
        raise ValueError(f"{constant} is not JSON")

    return json.loads(data, parse_constant=refuse)


def _is_json(value: Any) -> bool:
    if value is None or isinstance(value, bool | int | str):
        return True
    if isinstance(value, float):
        return value == value and value not in (float("inf"), float("-inf"))
    if isinstance(value, list):
        return all(_is_json(item) for item in value)
    if isinstance(value, dict):
        return all(isinstance(key, str) and _is_json(item) for key, item in value.items())
    return False


def _assert_valid_on_the_wire(result: QueryResult, hint: str = "") -> None:
    columns = [(c.name, c.type) for c in result.columns]
    data = result_json(
        columns,
        result.rows_json,
        row_count=len(result.rows),
        truncated=result.truncated,
        hint=hint or None,
    )
    assert data.isascii()
    document = _strict_json(data)
    VALIDATOR.validate(document)
    model = ReadOnlySqlResult.model_validate_json(data, strict=True)
    assert (model.rows, model.row_count, model.truncated) == (result.rows, len(result.rows), result.truncated)
    # The same document a result model of these rows serialises to (the path of every other tool).
    built = ReadOnlySqlResult(
        columns=[SqlColumn(name=name, type=type_) for name, type_ in columns],
        rows=result.rows,
        row_count=len(result.rows),
        truncated=result.truncated,
        hint=hint or None,
    )
    assert _strict_json(structured_json(built)) == document


def test_every_trusted_type_has_a_sample() -> None:
    assert set(JSON_READY_SAMPLES) == set(JSON_READY_OIDS)


@pytest.mark.parametrize(("oid", "expression"), sorted(JSON_READY_SAMPLES.items()))
def test_a_trusted_type_loads_as_a_json_value_already(
    reader_executor: Executor, admin: psycopg.Connection[Any], oid: int, expression: str
) -> None:
    (found,) = admin.execute(f"SELECT pg_typeof({expression})::oid::int").fetchone() or (None,)
    assert found == oid  # the sample is of the type it stands for
    result = run_unvetted(
        reader_executor, f"SELECT {expression} AS v, NULL::int AS n", max_rows=1, ticket=CallTicket()
    )
    value = result.rows[0][0]
    assert _is_json(value), value
    assert to_json_value(value) == value
    _assert_valid_on_the_wire(result)


@pytest.mark.parametrize("expression", CONVERTED)
def test_a_converted_column_validates_against_the_output_schema(
    reader_executor: Executor, expression: str
) -> None:
    result = run_unvetted(reader_executor, f"SELECT {expression} AS v", max_rows=1, ticket=CallTicket())
    assert _is_json(result.rows[0][0])
    _assert_valid_on_the_wire(result)


def test_every_type_in_one_result_validates_against_the_output_schema(reader_executor: Executor) -> None:
    expressions = [*JSON_READY_SAMPLES.values(), *CONVERTED]
    select = ", ".join(f"{expression} AS c{i}" for i, expression in enumerate(expressions))
    result = run_unvetted(
        reader_executor, f"SELECT {select} FROM generate_series(1, 3)", max_rows=2, ticket=CallTicket()
    )
    assert len(result.rows) == 2
    assert result.truncated
    _assert_valid_on_the_wire(result)


def test_the_hundred_row_workload_validates_against_the_output_schema(reader_executor: Executor) -> None:
    result = run_unvetted(reader_executor, ROWS_QUERY, max_rows=100, ticket=CallTicket())
    assert len(result.rows) == 100
    assert [c.type for c in result.columns] == [
        "text",
        "text",
        "text",
        "integer",
        "numeric",
        "integer",
        "text",
    ]
    assert all(isinstance(row[4], str) for row in result.rows)  # numeric stays text
    _assert_valid_on_the_wire(result)


def test_a_result_cut_at_the_byte_cap_with_its_hint_validates_against_the_output_schema(
    reader_executor: Executor,
) -> None:
    result = run_unvetted(
        reader_executor,
        "SELECT n, repeat('h', 3000) FROM generate_series(1, 40) AS n",
        max_rows=40,
        ticket=CallTicket(),
    )
    assert result.truncated
    assert result.cut_at_bytes
    hint = truncation_hint(len(result.rows), cut_at_bytes=True, max_rows_limit=200, max_bytes=20_000)
    _assert_valid_on_the_wire(result, hint)


def test_a_json_value_with_a_lone_surrogate_escape_is_returned_as_its_text(reader_executor: Executor) -> None:
    # PostgreSQL's json keeps the escape as written (jsonb refuses it); loaded, it was a string no
    # UTF-8 encoder writes, and the call failed with an incident.
    lone = '["\\ud800", {"\\udfff": 1}]'
    paired = '["\\ud83d\\ude00", "\\\\ud800"]'  # a pair, and an escaped backslash before "ud800"
    result = run_unvetted(
        reader_executor,
        f"SELECT '{lone}'::json AS lone, '{paired}'::json AS paired",
        max_rows=1,
        ticket=CallTicket(),
    )
    assert result.rows == [[lone, ["\U0001f600", "\\ud800"]]]
    _assert_valid_on_the_wire(result)
