"""The base of every tool's argument and result models (pydantic), imported only when needed.

Kept apart from `tools.base` so that opening the tools, and answering `initialize`, never imports
pydantic: the models are built on first use (the session warms them up right after the handshake).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

__all__ = ["StrictModel"]


class StrictModel(BaseModel):
    """Base of every `<Tool>Args` and `<Tool>Result` model (docs/wire.md).

    Strict types (no "5" for 5, no bool for int), unknown keys refused, no NaN/Infinity. The same
    models produce the advertised `inputSchema` / `outputSchema`.
    """

    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False, frozen=True)
