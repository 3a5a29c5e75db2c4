"""The SQL tools' sources: which engine serves a call, by the `source` argument.

One set of SQL tools serves every configured database (`sql/sources.py`): each source has its
own `SqlEngine` (pool, role audit, re-audit, limits, policy), or, when its start refused it for a
reason no re-audit can lift (a TLS certificate refused, a pooler where none was declared), a
sentence saying why. `SqlSources.pick` answers a call with the engine of the source it names, or a
problem naming the source; a refusal of one source never stops another. With one source from
`MCP_SQL_DSN` (`default`), the tools take no `source` argument and answer as before. Pure
dispatch: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from mcp_suite.problems import (
    DatabaseUnavailableError,
    InvalidArgumentsError,
    ProblemError,
    QueryViolationError,
    RoleRefusedError,
    RoleUnauditedError,
)
from mcp_suite.tools.base import SourceState

if TYPE_CHECKING:
    from pydantic import BaseModel

    from mcp_suite.tools.sql.engine.engine import SqlEngine

__all__ = ["SqlSources"]

# A source's own faults: which source it is, the model is always told.
_SOURCE_FAULTS = (DatabaseUnavailableError, RoleRefusedError, RoleUnauditedError)


class SqlSources:
    """The configured sources in the file's order: an engine each, or why it is not served."""

    def __init__(
        self,
        engines: Mapping[str, SqlEngine],
        refused: Mapping[str, str],
        *,
        named: bool,
        order: tuple[str, ...] | None = None,
        curated_only: frozenset[str] = frozenset(),
        no_schema: frozenset[str] = frozenset(),
    ) -> None:
        self._engines = dict(engines)
        # Sources that serve their curated tools only (`free_sql = false`): free SQL refuses them.
        self._curated_only = curated_only
        self._no_schema = no_schema  # and of those, the sources sql_schema does not describe
        self._refused = dict(refused)
        self.named = named  # the tools take `source` (a configuration file), or serve `default` alone
        self.names: tuple[str, ...] = order or (*self._engines, *self._refused)

    @classmethod
    def single(cls, name: str, engine: SqlEngine) -> SqlSources:
        return cls({name: engine}, {}, named=False)

    @property
    def no_schema(self) -> frozenset[str]:
        """The sources whose schema is not served (`schema = false`: no resource, no sql_schema)."""
        return self._no_schema

    @property
    def engines(self) -> Mapping[str, SqlEngine]:
        return self._engines

    @property
    def max_rows_limit(self) -> int:
        """The largest `max_rows` a source allows (the arguments model's bound; each source's own
        is checked by `pick`)."""
        return max((engine.settings.sql_max_rows for engine in self._engines.values()), default=1)

    def pick(self, name: str | None) -> tuple[str, SqlEngine]:
        """The source a call names (the only one when the tools take no `source`), and its engine.

        Raises `RoleRefusedError` for a source not served since its start."""
        if name is None:
            name = self.names[0]
        why = self._refused.get(name)
        if why is not None:
            raise RoleRefusedError(
                f"The source {name!r} is not served: {why}. An operator must fix it and restart the "
                "server; the other sources serve.",
                metadata={"source": name, "retryable": False},
            )
        return name, self._engines[name]  # the arguments model admits configured names only

    def pick_free(self, name: str | None) -> tuple[str, SqlEngine]:
        """As `pick`, for free SQL (`read_only_sql`, `explain_sql`): a source that serves its
        curated tools only is refused (`QueryViolationError`, a refusal by its rule)."""
        picked = self.pick(name)
        if picked[0] in self._curated_only:
            raise QueryViolationError(
                f"The source {picked[0]!r} serves its curated tools only: free SQL is off for it "
                "(its operator reviewed the questions it answers). Use one of its tools.",
                metadata={"source": picked[0], "rule": "curated-only", "retryable": False},
            )
        return picked

    def pick_schema(self, name: str | None) -> tuple[str, SqlEngine]:
        """As `pick`, for `sql_schema`: a curated-only source whose operator turned its schema off
        (`schema = false`) is refused as free SQL is."""
        picked = self.pick(name)
        if picked[0] in self._no_schema:
            raise QueryViolationError(
                f"The source {picked[0]!r} serves its curated tools only, and not its schema. Use one "
                "of its tools.",
                metadata={"source": picked[0], "rule": "curated-only", "retryable": False},
            )
        return picked

    def states(self) -> list[SourceState]:
        """Each source's state in the configured order; one not served since its start is neither
        reachable nor audited (no I/O: what the engines last saw)."""
        return [
            self._engines[name].state(name)
            if name in self._engines
            else SourceState(name, reachable=False, audited=False, status="not-served")
            for name in self.names
        ]

    def max_rows(self, name: str, engine: SqlEngine, arguments: BaseModel) -> int:
        """The call's `max_rows` for its source: the one given, refused (`InvalidArgumentsError`)
        above that source's own limit; or the default, lowered to that limit."""
        given: int = getattr(arguments, "max_rows")  # noqa: B009  # the SQL tools' models all hold it
        limit = engine.settings.sql_max_rows
        if given <= limit:
            return given
        if "max_rows" not in arguments.model_fields_set:
            return limit
        raise InvalidArgumentsError(
            f"max_rows: at most {limit} for the source {name!r}.",
            invalid_params=("max_rows",),
            metadata={"source": name, "max_rows_limit": limit},
        )

    def name_problem(self, name: str, problem: ProblemError) -> None:
        """Put the source a problem came from in its metadata: with several sources, every problem;
        with `MCP_SQL_DSN`'s one (`default`), the source's outages and refusals, so that the model
        reads the same document (retryable, retry after, source) whichever way it is configured."""
        if self.named or isinstance(problem, _SOURCE_FAULTS):
            problem.metadata.setdefault("source", name)
