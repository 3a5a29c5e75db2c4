"""Stand-ins the unit tests of the run-time guards share: a connection that answers one catalogue
query with chosen rows (and counts how often it was asked), and a clock a test moves by hand.

They replace what the guards take as parameters (`conn`, `clock`): a public seam, no patching.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Generic, TypeVar, cast

import psycopg

__all__ = ["Clock", "FakeCatalogue"]

RowT = TypeVar("RowT", bound=tuple[Any, ...])


class _Info:
    def __init__(self, server_version: int) -> None:
        self.server_version = server_version


class _Result(Generic[RowT]):
    def __init__(self, rows: Sequence[RowT]) -> None:
        self._rows = rows

    def fetchall(self) -> list[RowT]:
        return list(self._rows)


class FakeCatalogue(Generic[RowT]):
    """A connection that answers `query` (the guard's one catalogue query, and nothing else) with
    `rows`, reports `server_version`, and counts its reads in `reads`."""

    def __init__(self, query: str, rows: Sequence[RowT], *, server_version: int = 180000) -> None:
        self.query = query
        self.rows = list(rows)
        self.reads = 0
        self.info = _Info(server_version)

    def execute(self, query: str) -> _Result[RowT]:
        assert query == self.query
        self.reads += 1
        return _Result(self.rows)

    @property
    def conn(self) -> psycopg.Connection[Any]:
        """This fake, typed as what the guards take."""
        return cast("psycopg.Connection[Any]", self)


class Clock:
    """A monotonic clock that stands still until a test moves `now`."""

    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now
