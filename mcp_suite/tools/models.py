"""The base of every tool's argument and result models (pydantic), imported only when needed.

Kept apart from `tools.base` so that opening the tools, and answering `initialize`, never imports
pydantic: the models are built on first use (the session warms them up right after the handshake).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict
from pydantic.json_schema import DEFAULT_REF_TEMPLATE, GenerateJsonSchema, JsonSchemaMode

__all__ = ["CompactJsonSchema", "StrictModel"]


class CompactJsonSchema(GenerateJsonSchema):
    """JSON Schema without the titles pydantic derives from class and field names.

    They repeat the property names, and every byte of every tool's schemas is sent to the model in
    `tools/list` (docs/tools/README.md has the figures). Descriptions stay.
    """

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False

    def generate(self, schema: Any, mode: JsonSchemaMode = "validation") -> dict[str, Any]:
        result = super().generate(schema, mode)
        result.pop("title", None)
        for definition in result.get("$defs", {}).values():
            definition.pop("title", None)
        return result


class StrictModel(BaseModel):
    """Base of every `<Tool>Args` and `<Tool>Result` model (docs/wire.md).

    Strict types (no "5" for 5, no bool for int), unknown keys refused, no NaN/Infinity. The same
    models produce the advertised `inputSchema` / `outputSchema` (compact: no derived titles,
    `["number", "null"]` for an optional number).
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
        union_format: Literal["any_of", "primitive_type_array"] = "primitive_type_array",
    ) -> dict[str, Any]:
        return super().model_json_schema(
            by_alias=by_alias,
            ref_template=ref_template,
            schema_generator=schema_generator,
            mode=mode,
            union_format=union_format,
        )
