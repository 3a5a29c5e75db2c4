"""Who the current call is for: the verified caller, carried from the HTTP runtime to the tools.

The HTTP runtime sets `current_caller` from the verified token (its subject and claims) for the
request's task, so the tool it runs (and the worker threads trio starts for it, which copy the
context) can read it; stdio never sets it (the local user reads as the DSN's role). A neutral
module: no I/O, imported by the runtime and the tools alike.
"""

from __future__ import annotations

import contextvars
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

__all__ = ["Caller", "current_caller"]


@dataclass(frozen=True, slots=True)
class Caller:
    """A caller the server verified: the token's subject, and its claims (for the identity map)."""

    subject: str
    claims: Mapping[str, Any] = field(default_factory=dict)


current_caller: Final[contextvars.ContextVar[Caller | None]] = contextvars.ContextVar(
    "current_caller", default=None
)
