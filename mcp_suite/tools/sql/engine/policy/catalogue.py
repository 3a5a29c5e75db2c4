"""The catalogue rule of `read_only_sql` (docs/tools/read_only_sql.md, "The catalogue").

Owns: which catalogue relations, functions, types and settings a query may name, and why. By default
the model reads the catalogue only in the forms PostgreSQL filters by the role's privileges
(`information_schema`, bar the views listed here) and through `sql_schema`; everything else that
describes other objects, other sessions, the host or the connection is refused. Deny by default: a
`pg_` relation or function is refused unless it is on a reviewed allow-list here. Pure data and
string work on what a walk noted: no I/O, no parser imports. MCP_SQL_ALLOW_CATALOGUE skips the rule.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Final

from mcp_suite.tools.sql.engine.denylist import reason_by_name
from mcp_suite.tools.sql.engine.policy import allowlist, refusals

__all__ = [
    "CATALOGUE_FUNCTIONS",
    "CATALOGUE_PREFIXES",
    "CATALOGUE_TYPES",
    "READABLE_INFORMATION_SCHEMA",
    "READABLE_PG_FUNCTIONS",
    "READABLE_PG_RELATIONS",
    "READABLE_SETTINGS",
    "REFUSED_INFORMATION_SCHEMA",
    "check_catalogue",
    "function_reason",
    "relation_reason",
    "setting_reason",
    "type_reason",
]

# The reasons, each written once (the caller reads them in the refusal; the docs quote them).
_OTHERS: Final = "describes objects, roles or sessions whatever the role's grants"
_DEFINITION: Final = "shows other objects' definitions or comments whatever the role's grants"
_NAMES: Final = "turns identifiers into the names of objects or roles the role may not read"
_PRIVILEGES: Final = "tells whether objects or roles the role cannot read exist, and their grants"
_HOST: Final = "reveals the database host, its files or the connection"
_SESSIONS: Final = "shows other sessions and their transactions"
_UNFILTERED: Final = "lists objects of other schemas: PostgreSQL does not filter it by the role's grants"
_PG_PREFIX: Final = "is a catalogue function that is not on the reviewed list"
_PG_RELATION: Final = "is a catalogue relation that is not on the reviewed list"

# pg_catalog relations that describe only built-in things (an allow-list: every other relation in a
# `pg_` schema, or an unqualified `pg_` name, which pg_catalog-first resolution reads as one, is refused).
READABLE_PG_RELATIONS: Final[Mapping[str, str]] = {
    "pg_timezone_names": "PostgreSQL's built-in time zone names",
    "pg_timezone_abbrevs": "PostgreSQL's built-in time zone abbreviations",
}

# information_schema: PostgreSQL filters these by the role's privileges (ownership or a grant held).
READABLE_INFORMATION_SCHEMA: Final = frozenset(
    {
        "administrable_role_authorizations",
        "applicable_roles",
        "check_constraint_routine_usage",
        "check_constraints",
        "column_column_usage",
        "column_domain_usage",
        "column_options",
        "column_privileges",
        "column_udt_usage",
        "columns",
        "constraint_column_usage",
        "constraint_table_usage",
        "domain_udt_usage",
        "enabled_roles",
        "foreign_data_wrapper_options",
        "foreign_data_wrappers",
        "foreign_server_options",
        "foreign_servers",
        "foreign_table_options",
        "foreign_tables",
        "information_schema_catalog_name",
        "key_column_usage",
        "referential_constraints",
        "role_column_grants",
        "role_routine_grants",
        "role_table_grants",
        "role_udt_grants",
        "role_usage_grants",
        "routine_column_usage",
        "routine_routine_usage",
        "routine_sequence_usage",
        "routine_table_usage",
        "schemata",
        "sequences",
        "sql_features",
        "sql_implementation_info",
        "sql_parts",
        "sql_sizing",
        "table_constraints",
        "table_privileges",
        "tables",
        "transforms",
        "triggered_update_columns",
        "triggers",
        "user_mapping_options",
        "user_mappings",
        "view_column_usage",
        "view_routine_usage",
        "view_table_usage",
        "views",
    }
)

# information_schema views that list the objects PUBLIC may use by default (functions, types,
# domains, collations) in every schema, also those the role has no USAGE on: checked on PostgreSQL 18
# by tests/pg/test_sql_catalogue.py. Any other name there is refused too (not reviewed).
REFUSED_INFORMATION_SCHEMA: Final = frozenset(
    {
        "attributes",
        "character_sets",
        "collation_character_set_applicability",
        "collations",
        "data_type_privileges",
        "domain_constraints",
        "domains",
        "element_types",
        "parameters",
        "routine_privileges",
        "routines",
        "udt_privileges",
        "usage_privileges",
        "user_defined_types",
    }
)

# `pg_` functions that describe only the value they are given, the role's own session, or the server's
# build and clock (an allow-list: every other `pg_` function is refused).
READABLE_PG_FUNCTIONS: Final[Mapping[str, str]] = {
    "pg_collation_for": "the collation of the value it is given (COLLATION FOR)",
    "pg_column_size": "the size of the value it is given",
    "pg_column_compression": "the compression of the value it is given",
    "pg_size_pretty": "formats a number",
    "pg_size_bytes": "parses a size",
    "pg_backend_pid": "this session's own process id",
    "pg_trigger_depth": "this session's own trigger depth",
    "pg_client_encoding": "this session's own encoding",
    "pg_encoding_to_char": "a built-in encoding's name",
    "pg_char_to_encoding": "a built-in encoding's number",
    "pg_encoding_max_length": "a built-in encoding's width",
    "pg_postmaster_start_time": "when the server started",
    "pg_conf_load_time": "when the configuration was read",
    "pg_is_in_recovery": "whether the server is a standby",
    "pg_last_xact_replay_timestamp": "how far a standby is behind",
    "pg_jit_available": "whether JIT is available",
    "pg_get_keywords": "PostgreSQL's own SQL keywords",
}

# Functions named outside the `pg_` family that the rule refuses, with the reason.
CATALOGUE_FUNCTIONS: Final[Mapping[str, str]] = {
    "obj_description": _DEFINITION,
    "col_description": _DEFINITION,
    "shobj_description": _DEFINITION,
    "format_type": _NAMES,
    "makeaclitem": _NAMES,
    "row_security_active": _PRIVILEGES,
    "satisfies_hash_partition": _OTHERS,
    "amvalidate": _OTHERS,
    # Sources of reg* values: with an integer in the same CASE, ARRAY or COALESCE, PostgreSQL casts the
    # integer to that type too and prints any type's (so any table's) or configuration's name.
    "pg_typeof": _NAMES,
    "get_current_ts_config": _NAMES,
    "ts_debug": _NAMES,
    # Type input called directly with a type's identifier reads types the role may not use.
    "array_in": _OTHERS,
    "array_recv": _OTHERS,
    "record_in": _OTHERS,
    "record_recv": _OTHERS,
    "domain_in": _OTHERS,
    "domain_recv": _OTHERS,
    "enum_in": _OTHERS,
    "enum_recv": _OTHERS,
    "range_in": _OTHERS,
    "range_recv": _OTHERS,
    "multirange_in": _OTHERS,
    "multirange_recv": _OTHERS,
    "anyrange_in": _OTHERS,
    "anymultirange_in": _OTHERS,
    "anycompatiblerange_in": _OTHERS,
    "anycompatiblemultirange_in": _OTHERS,
}

# Families (lower-case prefixes), checked after the exact names; `pg_` comes last (see `function_reason`).
CATALOGUE_PREFIXES: Final[tuple[tuple[str, str], ...]] = (
    ("inet_server_", _HOST),
    ("inet_client_", _HOST),
    ("to_reg", _NAMES),  # to_regclass, to_regrole, ...
    ("acl", _NAMES),  # acldefault, aclexplode, aclitemout, ...: role names from identifiers
    ("txid_", _SESSIONS),
    ("pgstat", _OTHERS),  # the pgstattuple extension: any table's or index's physical statistics
    ("pgrowlocks", _SESSIONS),  # the pgrowlocks extension: other sessions' row locks
    ("_pg_", _OTHERS),  # information_schema's helpers (_pg_index_position, ...): objects by identifier
    # A naming type's own functions: regclass(text), regclassin, regroleout, aclitemout, ...
    *((name, _NAMES) for name in sorted(allowlist.NAMING_TYPES)),
)

# Types whose input or output turns names into identifiers and back, reading any object's or role's
# name (a cast, a column definition list, RETURNING): refused wherever a type is named.
CATALOGUE_TYPES: Final = allowlist.NAMING_TYPES

# Settings current_setting() may read (an allow-list, case-folded as PostgreSQL folds them): how the
# session formats, sorts and plans, its limits and its transaction, and the server's build. Every
# other setting is refused: those that name the host's files and paths (`data_directory`,
# `config_file`, `hba_file`, `log_directory`, `unix_socket_directories`, `dynamic_library_path`,
# `extension_control_path`, the preload libraries, the SSL files), where it listens, other servers,
# the commands it runs, custom settings (`app.secret`), and any a new release adds.
READABLE_SETTINGS: Final = frozenset(
    {
        # locale and formatting
        *("datestyle", "intervalstyle", "timezone", "timezone_abbreviations", "client_encoding"),
        *("default_text_search_config", "extra_float_digits", "icu_validation_level"),
        *("lc_messages", "lc_monetary", "lc_numeric", "lc_time", "lc_collate", "lc_ctype"),
        # the statement and its transaction
        *("application_name", "bytea_output", "client_min_messages", "search_path", "row_security"),
        *("statement_timeout", "lock_timeout", "idle_in_transaction_session_timeout"),
        *("idle_session_timeout", "transaction_timeout", "default_transaction_deferrable"),
        *("default_transaction_isolation", "default_transaction_read_only", "transaction_deferrable"),
        *("transaction_isolation", "transaction_read_only", "xmlbinary", "xmloption"),
        *("gin_fuzzy_search_limit", "deadlock_timeout", "max_locks_per_transaction"),
        # the server's build
        *("server_version", "server_version_num", "server_encoding", "block_size", "segment_size"),
        *("wal_block_size", "wal_segment_size", "integer_datetimes", "data_checksums"),
        *("max_function_args", "max_identifier_length", "max_index_keys", "in_hot_standby"),
        *("max_connections",),
        # memory and planning
        *("work_mem", "hash_mem_multiplier", "maintenance_work_mem", "temp_buffers", "temp_file_limit"),
        *("max_stack_depth", "effective_cache_size", "random_page_cost", "seq_page_cost"),
        *("cpu_tuple_cost", "cpu_index_tuple_cost", "cpu_operator_cost", "parallel_setup_cost"),
        *("parallel_tuple_cost", "min_parallel_table_scan_size", "min_parallel_index_scan_size"),
        *("max_parallel_workers_per_gather", "jit", "jit_above_cost", "jit_inline_above_cost"),
        *("jit_optimize_above_cost", "constraint_exclusion", "cursor_tuple_fraction"),
        *("default_statistics_target", "from_collapse_limit", "join_collapse_limit", "plan_cache_mode"),
        *("recursive_worktable_factor", "geqo", "geqo_threshold", "geqo_effort"),
        *("enable_async_append", "enable_bitmapscan", "enable_distinct_reordering"),
        *("enable_gathermerge", "enable_group_by_reordering", "enable_hashagg", "enable_hashjoin"),
        *("enable_incremental_sort", "enable_indexonlyscan", "enable_indexscan", "enable_material"),
        *("enable_memoize", "enable_mergejoin", "enable_nestloop", "enable_parallel_append"),
        *("enable_parallel_hash", "enable_partition_pruning", "enable_partitionwise_aggregate"),
        *("enable_partitionwise_join", "enable_presorted_aggregate", "enable_self_join_elimination"),
        *("enable_seqscan", "enable_sort", "enable_tidscan"),
        # compatibility
        *("array_nulls", "backslash_quote", "escape_string_warning", "quote_all_identifiers"),
        *("standard_conforming_strings", "synchronize_seqscans", "transform_null_equals"),
    }
)
_SETTING: Final = (
    "is not on the reviewed list of settings a query may read (the others describe the host, its "
    "files, where it listens, other servers, or are custom)"
)


def relation_reason(schema: str, name: str) -> str | None:
    """Why reading the relation `schema.name` is refused (`schema` "" when unqualified), or None.

    pg_catalog comes first in every call's search path, so an unqualified `pg_` name is the catalogue's
    (or, refused all the same, a CTE of that name). A schema named `pg_...` is a system schema
    (PostgreSQL reserves the prefix). A `pg_` name in another schema is refused too: extensions put
    their views there (`public.pg_stat_statements` shows other sessions' queries). Other unqualified
    names are the user's (information_schema is not in the search path)."""
    schema, name = schema.casefold(), name.casefold()
    if schema == "information_schema":
        return None if name in READABLE_INFORMATION_SCHEMA else _UNFILTERED
    if schema.startswith("pg_") or name.startswith("pg_"):
        if schema in ("", "pg_catalog") and name in READABLE_PG_RELATIONS:
            return None
        return _SESSIONS if name.startswith(("pg_stat", "pg_locks")) else _PG_RELATION
    return None


def function_reason(name: str) -> str | None:
    """Why calling the function `name` (its last name component, any case) is refused, or None.

    As in the denylist, the schema never rescues a name: `public.obj_description` is refused too."""
    key = name.casefold()
    reason = reason_by_name(key, CATALOGUE_FUNCTIONS, CATALOGUE_PREFIXES)
    if reason is not None:
        return reason
    if (key.startswith("has_") and key.endswith("_privilege")) or key == "pg_has_role":
        return _PRIVILEGES  # has_table_privilege, has_schema_privilege, ...
    if key.startswith("pg_") and key not in READABLE_PG_FUNCTIONS:
        if key.startswith(("pg_stat", "pg_lock", "pg_blocking", "pg_safe_snapshot", "pg_backend")):
            return _SESSIONS
        if key.startswith(("pg_get_", "pg_describe", "pg_identify")):
            return _DEFINITION
        if key in ("pg_tablespace_location", "pg_relation_filepath", "pg_relation_filenode"):
            return _HOST
        return _PG_PREFIX
    return None


def type_reason(name: str) -> str | None:
    """Why naming the type `name` (its last name component, any case) is refused, or None."""
    return _NAMES if name.casefold() in CATALOGUE_TYPES else None


def setting_reason(name: str | None) -> str | None:
    """Why current_setting() of `name` is refused (None as `name`: not a literal), or None."""
    if name is None:
        return "reads a setting whose name the policy cannot see (write the name as a literal)"
    return None if name.casefold() in READABLE_SETTINGS else _SETTING


def check_catalogue(
    *,
    relations: Iterable[tuple[str, str]],
    functions: Iterable[str],
    types: Iterable[str],
    settings: Iterable[str | None] = (),
) -> None:
    """Raise the catalogue refusal for the first refused name, in a fixed order (relations, functions,
    types, settings; each sorted), so that a query's refusal does not depend on set order."""
    for schema, name in sorted(relations):
        reason = relation_reason(schema, name)
        if reason is not None:
            raise refusals.catalogue(f"{schema}.{name}" if schema else name, reason)
    for function in sorted(functions):
        reason = function_reason(function)
        if reason is not None:
            raise refusals.catalogue(f"{function}()", reason)
    for type_name in sorted(types):
        reason = type_reason(type_name)
        if reason is not None:
            raise refusals.catalogue(f"the type {type_name}", reason)
    for setting in sorted(settings, key=str):
        reason = setting_reason(setting)
        if reason is not None:
            raise refusals.catalogue(
                f"current_setting({setting!r})" if setting else "current_setting()", reason
            )
