"""The type-name cache: each column type's display name, and the element of user-defined arrays.

Read once for every type on the pool's first connection (`load`), then one lookup per type met
later (a type created after the preload). psycopg has array loaders only for the built-in types, so
for an array of a user-defined type (oid >= FirstNormalObjectId) the cache also keeps its element
type (a domain's base type) and delimiter, from which `install_array_loaders` makes one. Thread-safe;
blocking (sync psycopg), run in worker threads only.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, Final

import psycopg
from psycopg import pq

from mcp_suite.tools.sql.engine.convert import array_loader

__all__ = ["TypeNames", "TypeNamesStatistics"]

_TYPE_INFO_SQL: Final = (
    "SELECT t.oid::int8, format_type(t.oid, NULL),"
    " CASE WHEN t.oid >= 16384 AND t.typcategory = 'A' AND t.typelem <> 0"
    " THEN (CASE WHEN e.typtype = 'd' THEN e.typbasetype ELSE e.oid END)::int8 END,"
    " t.typdelim::text"
    " FROM pg_catalog.pg_type t LEFT JOIN pg_catalog.pg_type e ON e.oid = t.typelem"
)
_MAX_TYPES: Final = 10_000  # names kept; a database with more types looks the rest up each time


@dataclass(frozen=True, slots=True)
class TypeNamesStatistics:
    names: int  # types whose name is cached
    lookups: int  # round trips made to look up one type


class TypeNames:
    """oid → display name (`format_type`), and oid → (element oid, delimiter) for user arrays."""

    def __init__(self) -> None:
        self._names: dict[int, str] = {}
        self._array_elements: dict[int, tuple[int, str]] = {}
        self._lock = threading.Lock()
        self._lookups = 0

    def statistics(self) -> TypeNamesStatistics:
        return TypeNamesStatistics(names=len(self._names), lookups=self._lookups)

    def load(self, conn: psycopg.Connection[Any]) -> None:
        """Every type's name and array element, in one query: no extra round trip later."""
        rows = conn.execute(_TYPE_INFO_SQL).fetchall()
        with self._lock:
            self._names.update({int(oid): str(name) for oid, name, _, _ in rows if name})
            self._array_elements.update(
                {
                    int(oid): (int(element), str(delim))
                    for oid, _, element, delim in rows
                    if element is not None
                }
            )

    def name(self, conn: psycopg.Connection[Any], oid: int) -> str:
        """The type's name; a type not cached yet costs one round trip on `conn`."""
        name = self._names.get(oid)
        if name is not None:
            return name
        if conn.closed:  # a result cut at the byte limit closed its connection: no lookup
            return f"oid {oid}"
        with self._lock:
            if oid not in self._names:
                self._lookups += 1
                row = conn.execute(_TYPE_INFO_SQL + " WHERE t.oid = %s::oid", (oid,)).fetchone()
                name = str(row[1]) if row and row[1] else f"oid {oid}"
                if len(self._names) >= _MAX_TYPES:
                    return name
                self._names[oid] = name
                if row and row[2] is not None:
                    self._array_elements[oid] = (int(row[2]), str(row[3]))
            return self._names[oid]

    def install_array_loaders(self, conn: psycopg.Connection[Any], oids: list[int]) -> None:
        """Give `conn` a text loader for each user-defined array type among `oids` it lacks."""
        adapters = conn.adapters
        for oid in oids:
            element = self._array_elements.get(oid)
            if element is not None and adapters.get_loader(oid, pq.Format.TEXT) is None:
                loader = array_loader(*element)
                if loader is not None:
                    adapters.register_loader(oid, loader)
