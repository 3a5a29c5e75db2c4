"""The advertised result schemas match what the tools send (docs/wire.md, docs/tools/README.md).

A result field left out when it has no value (`omitted_when_none`) is advertised without a `null`
branch, so the answer must leave the key out, never send `null`; a nullable field the answer always
carries is `anyOf` its type and `null`; any JSON value is `$defs.JsonValue`, which accepts every
JSON value.
"""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest
from pydantic import BaseModel, JsonValue

from mcp_suite.protocol.mcp import model_json_schema, structured_json
from mcp_suite.tools.sql.models import (
    ExplainSqlResult,
    ReadOnlySqlResult,
    SqlColumn,
    SqlObject,
    SqlSchemaResult,
)


def _sent(result: BaseModel) -> Any:
    document = json.loads(structured_json(result))
    jsonschema.Draft202012Validator(model_json_schema(type(result))).validate(document)
    return document


def test_explain_without_analyze_leaves_the_analyze_fields_out_and_the_schema_refuses_null() -> None:
    sent = _sent(ExplainSqlResult(plan={"Node Type": "Seq Scan"}, total_cost=1.5, estimated_rows=3))
    assert set(sent) == {"plan", "total_cost", "estimated_rows"}
    schema = model_json_schema(ExplainSqlResult)
    assert schema["properties"]["actual_rows"] == {"type": "number"}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**sent, "actual_rows": None}, schema)
    analyzed = ExplainSqlResult(
        plan={},
        total_cost=1.0,
        estimated_rows=1.0,
        actual_rows=2.0,
        actual_time_ms=0.1,
        planning_time_ms=0.2,
        execution_time_ms=0.3,
    )
    assert _sent(analyzed)["actual_rows"] == 2.0


def test_sql_schema_leaves_absent_details_out_and_keeps_null_where_it_always_answers() -> None:
    names_only = SqlObject.model_validate(
        {"schema": "docs", "name": "pages", "kind": "table", "comment": None, "estimated_rows": None}
    )
    sent = _sent(SqlSchemaResult(database="d", objects=[names_only], truncated=False, next_cursor=None))
    assert sent["next_cursor"] is None
    assert sent["objects"] == [
        {"schema": "docs", "name": "pages", "kind": "table", "comment": None, "estimated_rows": None}
    ]
    schema = model_json_schema(SqlSchemaResult)
    assert schema["properties"]["next_cursor"]["anyOf"] == [{"type": "string"}, {"type": "null"}]
    detail = schema["$defs"]["SqlObject"]["properties"]["columns"]
    assert "anyOf" not in detail
    assert "default" not in detail
    assert detail["type"] == "array"


def test_a_row_cell_may_be_any_json_value_and_nothing_else() -> None:
    cells: list[JsonValue] = ["a", 1, 2.5, True, None, [1, [2, "x"], {"k": None}], {"k": [1]}]
    column = SqlColumn(name="c", type="json")
    sent = _sent(ReadOnlySqlResult(columns=[column], rows=[cells], row_count=1, truncated=False))
    assert sent["rows"] == [cells]
    validator = jsonschema.Draft202012Validator(model_json_schema(ReadOnlySqlResult))
    assert validator.is_valid({**sent, "rows": [[{"nested": [[[]]]}]]})
    assert not validator.is_valid({**sent, "rows": [1]})  # a row is an array
