"""The base of every tool's argument and result models (pydantic), imported only when needed.

Kept apart from `tools.base` so that opening the tools, and answering `initialize`, never imports
pydantic: the models are built on first use (the session warms them up right after the handshake).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.json_schema import DEFAULT_REF_TEMPLATE, GenerateJsonSchema, JsonSchemaMode, JsonSchemaValue

if TYPE_CHECKING:
    from pydantic_core import core_schema

__all__ = ["AdvertisedJsonSchema", "CompactJsonSchema", "StrictModel", "omitted_when_none"]

# Length and range keywords: the strict model enforces every one of them, and its refusal names the
# limit it met (`mcp.invalid_arguments`), so the model is not shown them on every turn.
_BOUNDS: Final = frozenset(
    {"minLength", "maxLength", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}
)


class CompactJsonSchema(GenerateJsonSchema):
    """JSON Schema without the titles pydantic derives from class and field names.

    They repeat the property names, and every byte of every tool's schemas is sent to the model in
    `tools/list` (docs/tools/README.md has the figures). Descriptions stay.

    pydantic's `JsonValue` (any JSON value) is written `{}`, the object form of `true`, which
    clients that map tool schemas onto a stricter dialect refuse or drop (MCP Inspector's `--strict`
    warns): here it is the union of the JSON types, an array's items being JSON values again.
    """

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False

    def generate(self, schema: Any, mode: JsonSchemaMode = "validation") -> dict[str, Any]:
        result = super().generate(schema, mode)
        result.pop("title", None)
        definitions = result.get("$defs", {})
        for definition in definitions.values():
            definition.pop("title", None)
        if definitions.get("JsonValue") == {}:
            definitions["JsonValue"] = {
                "anyOf": [
                    {"type": "string"},
                    {"type": "number"},
                    {"type": "boolean"},
                    {"type": "null"},
                    {"type": "array", "items": {"$ref": "#/$defs/JsonValue"}},
                    {"type": "object"},
                ]
            }
        return result


class AdvertisedJsonSchema(CompactJsonSchema):
    """The `inputSchema` a model is shown (`ToolSpec.input_schema`): what it needs to call a tool
    well, and no more, for the model reads it on every turn (docs/tools/README.md, issue 46).

    - An optional argument whose default is None is its value's plain type, not `anyOf` it and
      `null` with `default: null`: leaving it out is the same call as sending null.
    - No length or range keywords (`_BOUNDS`): the limits stay enforced, and told by the refusal
      that meets them.
    - No description of the model itself: the tool's description says what the arguments are for.

    The server validates with the strict model, never with this schema: what is advertised may be
    looser than what is enforced, never stricter (tests/property/test_advertised_schemas.py).
    """

    def default_schema(self, schema: core_schema.WithDefaultSchema) -> JsonSchemaValue:
        inner = schema["schema"]
        if inner["type"] == "nullable" and schema.get("default", ...) is None:
            return self.generate_inner(inner["schema"])
        return super().default_schema(schema)

    def str_schema(self, schema: core_schema.StringSchema) -> JsonSchemaValue:
        return _unbounded(super().str_schema(schema))

    def int_schema(self, schema: core_schema.IntSchema) -> JsonSchemaValue:
        return _unbounded(super().int_schema(schema))

    def float_schema(self, schema: core_schema.FloatSchema) -> JsonSchemaValue:
        return _unbounded(super().float_schema(schema))

    def model_schema(self, schema: core_schema.ModelSchema) -> JsonSchemaValue:
        json_schema = super().model_schema(schema)
        json_schema.pop("description", None)
        return json_schema


def _unbounded(json_schema: JsonSchemaValue) -> JsonSchemaValue:
    return {key: value for key, value in json_schema.items() if key not in _BOUNDS}


def _is_none(value: object) -> bool:
    return value is None


def _without_null(schema: dict[str, Any]) -> None:
    """A field's schema without its `null` branch and its `null` default (in place)."""
    schema.pop("default", None)
    branches = schema.pop("anyOf", None)
    if branches is not None:
        (kept,) = [branch for branch in branches if branch != {"type": "null"}]
        schema.update(kept)


def omitted_when_none(description: str | None = None) -> Any:
    """A result field (`Annotated[T | None, omitted_when_none()] = None`) left out of the answer
    when it is None (`exclude_if`): null never appears on the wire, so the advertised schema has no
    null branch and no default, only the value's type (the key is simply not `required`)."""
    return Field(exclude_if=_is_none, json_schema_extra=_without_null, description=description)


class StrictModel(BaseModel):
    """Base of every `<Tool>Args` and `<Tool>Result` model (docs/wire.md).

    Strict types (no "5" for 5, no bool for int), unknown keys refused, no NaN/Infinity. The same
    models produce the advertised `outputSchema` (compact: no derived titles; a nullable field is
    `anyOf` a type and `null`, never a `type` array, which clients that map tool schemas onto a
    single-`type` dialect reject, as MCP Inspector's `--strict` warns) and, written by
    `AdvertisedJsonSchema`, the `inputSchema`.
    """

    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False, frozen=True)

    @classmethod
    def model_json_schema(
        cls,
        by_alias: bool | None = None,
        ref_template: str = DEFAULT_REF_TEMPLATE,
        schema_generator: type[GenerateJsonSchema] = CompactJsonSchema,
        mode: JsonSchemaMode = "validation",
        *,
        union_format: Literal["any_of", "primitive_type_array"] = "any_of",
    ) -> dict[str, Any]:
        return super().model_json_schema(
            by_alias=by_alias,
            ref_template=ref_template,
            schema_generator=schema_generator,
            mode=mode,
            union_format=union_format,
        )
