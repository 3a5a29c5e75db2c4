"""The function denylist of `read_only_sql` (docs/tools/read_only_sql.md) and the name normalisation it needs.

Owns: which PostgreSQL functions a caller may never name, and why (the reasons are the documentation,
docs/tools/read_only_sql.md quotes them). Pure data and string work: no I/O, no parser imports.
A name is denied when its last component, case-folded, is listed exactly or starts with a listed prefix;
the schema qualification never rescues a name (`pg_catalog.pg_sleep`, `public.pg_sleep` are both denied).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Final

__all__ = [
    "DENIED_FUNCTIONS",
    "DENIED_PREFIXES",
    "REVIEWED_VOLATILE",
    "VOLATILE_VALUES",
    "denied_reason",
    "normalize_function_name",
    "reason_by_name",
]

# The reasons more than one name shares, each written once (the caller reads them in the refusal).
_SERVER_FILES = "it reads or lists files on the database server"
_QUERY_STRING = "it runs a query given as a string, which the policy cannot inspect"
_WAL = "it controls replication, WAL or backups, or writes WAL that survives the rollback"
_WAITS = "it only waits, holding a connection"
_LOCK_OUTLIVES = "advisory locks can outlive the call and block other sessions"
_LOCK_BLOCKS = "advisory locks can block other sessions"
_LOCK_STATE = "advisory locks are session state"
_LOG_ROTATION = "it rotates the server log"
_STATISTICS = "it resets server statistics"
_PLANNER_STATISTICS = "it changes the planner statistics other sessions rely on"
_XACT_ID = "it assigns a transaction id, which writes WAL and survives the rollback"
_LARGE_OBJECTS = "large objects bypass table grants, and lo_import/lo_export touch server files"
_INDEX_SUMMARIES = "it writes index summaries even from a SELECT"

# Exact names (lower case). The reason is written for the caller and for the docs.
DENIED_FUNCTIONS: Final[Mapping[str, str]] = {
    # Sleeping and waiting hold a pool connection and a worker thread.
    "pg_sleep": _WAITS,
    "pg_sleep_for": _WAITS,
    "pg_sleep_until": _WAITS,
    # Session-level advisory locks outlive the transaction; the xact ones can still block others.
    "pg_advisory_lock": _LOCK_OUTLIVES,
    "pg_advisory_lock_shared": _LOCK_OUTLIVES,
    "pg_advisory_xact_lock": _LOCK_BLOCKS,
    "pg_advisory_xact_lock_shared": _LOCK_BLOCKS,
    "pg_advisory_unlock": _LOCK_STATE,
    "pg_advisory_unlock_shared": _LOCK_STATE,
    "pg_advisory_unlock_all": _LOCK_STATE,
    "pg_try_advisory_lock": _LOCK_OUTLIVES,
    "pg_try_advisory_lock_shared": _LOCK_OUTLIVES,
    "pg_try_advisory_xact_lock": _LOCK_BLOCKS,
    "pg_try_advisory_xact_lock_shared": _LOCK_BLOCKS,
    # Server files.
    "pg_read_file": _SERVER_FILES,
    "pg_read_binary_file": _SERVER_FILES,
    "pg_stat_file": _SERVER_FILES,
    "pg_current_logfile": "it reveals server file paths",
    # Other sessions and the server process.
    "pg_terminate_backend": "it ends other sessions (the role's own need no privilege)",
    "pg_cancel_backend": "it cancels other sessions' queries (the role's own need no privilege)",
    "pg_reload_conf": "it reloads the server configuration",
    "pg_rotate_logfile": _LOG_ROTATION,
    "pg_rotate_logfile_old": _LOG_ROTATION,
    "pg_log_backend_memory_contexts": "it writes to the server log",
    "pg_promote": "it promotes a standby",
    "pg_stat_reset": _STATISTICS,
    "pg_stat_reset_shared": _STATISTICS,
    "pg_stat_reset_single_table_counters": _STATISTICS,
    "pg_stat_reset_single_function_counters": _STATISTICS,
    "pg_stat_reset_slru": _STATISTICS,
    "pg_stat_reset_replication_slot": _STATISTICS,
    "pg_stat_reset_subscription_stats": _STATISTICS,
    "pg_stat_reset_backend_stats": _STATISTICS,
    "pg_nextoid": "it consumes object identifiers",
    "pg_import_system_collations": "it creates collations",
    "pg_extension_config_dump": "it changes an extension's catalogue entry",
    "pg_stop_making_pinned_objects": "it changes how the catalogue treats new objects",
    "pg_clear_attribute_stats": _PLANNER_STATISTICS,
    "pg_clear_relation_stats": _PLANNER_STATISTICS,
    "pg_restore_attribute_stats": _PLANNER_STATISTICS,
    "pg_restore_relation_stats": _PLANNER_STATISTICS,
    "setseed": "it changes the session's random seed, which outlives the call on a pooled connection",
    # Settings and notifications.
    "set_config": "it changes settings (session-level changes outlive the call)",
    "pg_notify": "notifications reach other sessions",
    # Transaction identifiers and snapshots.
    "txid_current": _XACT_ID,
    "pg_current_xact_id": _XACT_ID,
    "pg_export_snapshot": "it exports a snapshot to other sessions",
    "pg_log_standby_snapshot": _WAL,
    "pg_logical_emit_message": "it writes WAL messages that survive the rollback and fill the disk",
    "pg_create_restore_point": _WAL,
    "pg_switch_wal": _WAL,
    "pg_backup_start": _WAL,
    "pg_backup_stop": _WAL,
    "pg_start_backup": _WAL,
    "pg_stop_backup": _WAL,
    "pg_sync_replication_slots": _WAL,
    # Sequences: nextval/setval are never rolled back.
    "nextval": "sequence increments survive the rollback",
    "setval": "sequence changes survive the rollback",
    # Large objects (also reachable without the lo_ prefix).
    "loread": _LARGE_OBJECTS,
    "lowrite": _LARGE_OBJECTS,
    # Index maintenance that writes even from a SELECT.
    "gin_clean_pending_list": "it moves index entries (writes) even from a SELECT",
    "brin_summarize_new_values": _INDEX_SUMMARIES,
    "brin_summarize_range": _INDEX_SUMMARIES,
    "brin_desummarize_range": _INDEX_SUMMARIES,
    # Queries hidden in strings.
    "ts_stat": _QUERY_STRING,
    "ts_rewrite": _QUERY_STRING,
    "query_to_xml": _QUERY_STRING,
    "query_to_xmlschema": _QUERY_STRING,
    "query_to_xml_and_xmlschema": _QUERY_STRING,
    "cursor_to_xml": _QUERY_STRING,
    "cursor_to_xmlschema": _QUERY_STRING,
    "table_to_xml": _QUERY_STRING,
    "table_to_xmlschema": _QUERY_STRING,
    "table_to_xml_and_xmlschema": _QUERY_STRING,
    "schema_to_xml": _QUERY_STRING,
    "schema_to_xmlschema": _QUERY_STRING,
    "schema_to_xml_and_xmlschema": _QUERY_STRING,
    "database_to_xml": _QUERY_STRING,
    "database_to_xmlschema": _QUERY_STRING,
    "database_to_xml_and_xmlschema": _QUERY_STRING,
    # Extensions that are commonly installed and act outside the transaction.
    "pg_prewarm": "it loads relations into memory",
    "pg_stat_statements_reset": _STATISTICS,
    "pg_file_write": _SERVER_FILES,
    "pg_file_rename": _SERVER_FILES,
    "pg_file_unlink": _SERVER_FILES,
    "pg_file_sync": _SERVER_FILES,
    "pg_logdir_ls": _SERVER_FILES,
    "connectby": _QUERY_STRING,
    "xpath_table": _QUERY_STRING,
    "pg_truncate_visibility_map": "it changes a relation's visibility map",
}

# Families (lower-case prefixes). Checked after the exact names.
DENIED_PREFIXES: Final[tuple[tuple[str, str], ...]] = (
    ("dblink", "it connects to other servers, outside the read-only transaction"),
    ("lo_", _LARGE_OBJECTS),
    ("pg_ls_", _SERVER_FILES),
    ("pg_sleep", _WAITS),
    ("pg_advisory", _LOCK_OUTLIVES),
    ("pg_try_advisory", _LOCK_OUTLIVES),
    ("pg_read_", _SERVER_FILES),
    ("pg_stat_reset", _STATISTICS),
    ("pg_replication_", _WAL),
    ("pg_logical_", _WAL),
    ("pg_create_", _WAL),
    ("pg_drop_replication", _WAL),
    ("pg_copy_", _WAL),
    ("pg_wal_replay", _WAL),
    ("pg_file_", _SERVER_FILES),
    ("pg_backup", _WAL),
    ("pg_xlog", _WAL),
    ("binary_upgrade_", "it is for pg_upgrade only and changes catalogue state"),
    ("crosstab", _QUERY_STRING),
    ("heap_force_", "it changes table pages directly (pg_surgery)"),
    ("autoprewarm", "it starts background work on the server"),
)


def normalize_function_name(name: str) -> str:
    """Case-folded last component of a resolved name (the caller's quoting already removed).

    PostgreSQL folds unquoted names to lower case and keeps quoted ones; the policy folds both, so
    `"PG_SLEEP"` (a different, probably missing function) is refused too: refusing costs nothing.
    """
    return name.casefold()


def denied_reason(name: str) -> str | None:
    """Why the function `name` (one name component, any case) is denied, or None when it is not."""
    return reason_by_name(normalize_function_name(name), DENIED_FUNCTIONS, DENIED_PREFIXES)


def reason_by_name(key: str, names: Mapping[str, str], prefixes: Iterable[tuple[str, str]]) -> str | None:
    """The reason `names` gives for `key`, else that of the first of `prefixes` it starts with, or None
    (the denylist's lookup, and the catalogue rule's before its own families)."""
    reason = names.get(key)
    if reason is not None:
        return reason
    for prefix, why in prefixes:
        if key.startswith(prefix):
            return why
    return None


# --- the reviewed allow-list -----------------------------------------------------------------------
# Volatile pg_catalog functions that a SELECT-only role may execute (PostgreSQL 18) and that are NOT
# denied, each with the reason it is harmless. tests/pg/test_sql_policy_db.py lists the volatile
# functions on the demo database and fails on any that is neither denied nor listed here.
_INTERNAL = "takes an internal or trigger argument: SQL cannot call it directly"
_RANDOM = "volatile only because its result changes between calls; no side effect"
_READS = "reads server or session state; no side effect"

# Volatile functions that are volatile only because their value changes between calls (the
# allow-list's census, tests/pg/test_sql_function_census.py, counts them as reviewed too).
VOLATILE_VALUES: Final = frozenset(
    {
        "random",
        "random_normal",
        "gen_random_uuid",
        "uuidv4",
        "uuidv7",
        "array_sample",
        "array_shuffle",
        "clock_timestamp",
        "timeofday",
    }
)

REVIEWED_VOLATILE: Final[Mapping[str, str]] = {
    **dict.fromkeys(
        (
            "RI_FKey_cascade_del",
            "RI_FKey_cascade_upd",
            "RI_FKey_check_ins",
            "RI_FKey_check_upd",
            "RI_FKey_noaction_del",
            "RI_FKey_noaction_upd",
            "RI_FKey_restrict_del",
            "RI_FKey_restrict_upd",
            "RI_FKey_setdefault_del",
            "RI_FKey_setdefault_upd",
            "RI_FKey_setnull_del",
            "RI_FKey_setnull_upd",
            "bernoulli",
            "system",
            "brinhandler",
            "bthandler",
            "ginhandler",
            "gisthandler",
            "hashhandler",
            "spghandler",
            "heap_tableam_handler",
            "dsnowball_init",
            "dsnowball_lexize",
            "plpgsql_call_handler",
            "plpgsql_inline_handler",
            "plpgsql_validator",
            "suppress_redundant_updates_trigger",
            "tsvector_update_trigger",
            "tsvector_update_trigger_column",
            "unique_key_recheck",
        ),
        _INTERNAL,
    ),
    **dict.fromkeys(sorted(VOLATILE_VALUES), _RANDOM),
    **dict.fromkeys(
        (
            "amvalidate",
            "current_query",
            "currtid2",
            "currval",
            "lastval",
            "pg_available_wal_summaries",
            "pg_blocking_pids",
            "pg_collation_actual_version",
            "pg_control_checkpoint",
            "pg_control_init",
            "pg_control_recovery",
            "pg_control_system",
            "pg_current_wal_flush_lsn",
            "pg_current_wal_insert_lsn",
            "pg_current_wal_lsn",
            "pg_database_collation_actual_version",
            "pg_database_size",
            "pg_get_loaded_modules",
            "pg_get_multixact_members",
            "pg_get_sequence_data",
            "pg_get_wait_events",
            "pg_get_wal_replay_pause_state",
            "pg_get_wal_resource_managers",
            "pg_get_wal_summarizer_state",
            "pg_indexes_size",
            "pg_is_in_recovery",
            "pg_is_wal_replay_paused",
            "pg_isolation_test_session_is_blocked",
            "pg_jit_available",
            "pg_last_committed_xact",
            "pg_last_wal_receive_lsn",
            "pg_last_wal_replay_lsn",
            "pg_last_xact_replay_timestamp",
            "pg_lock_status",
            "pg_notification_queue_usage",
            "pg_partition_ancestors",
            "pg_partition_tree",
            "pg_prepared_xact",
            "pg_relation_size",
            "pg_safe_snapshot_blocking_pids",
            "pg_sequence_last_value",
            "pg_stat_get_backend_io",
            "pg_stat_get_backend_wal",
            "pg_stat_get_io",
            "pg_stat_get_recovery_prefetch",
            "pg_stat_get_xact_blocks_fetched",
            "pg_stat_get_xact_blocks_hit",
            "pg_stat_get_xact_function_calls",
            "pg_stat_get_xact_function_self_time",
            "pg_stat_get_xact_function_total_time",
            "pg_stat_get_xact_numscans",
            "pg_stat_get_xact_tuples_deleted",
            "pg_stat_get_xact_tuples_fetched",
            "pg_stat_get_xact_tuples_hot_updated",
            "pg_stat_get_xact_tuples_inserted",
            "pg_stat_get_xact_tuples_newpage_updated",
            "pg_stat_get_xact_tuples_returned",
            "pg_stat_get_xact_tuples_updated",
            "pg_table_size",
            "pg_tablespace_size",
            "pg_total_relation_size",
            "pg_wal_summary_contents",
            "pg_xact_commit_timestamp",
            "pg_xact_commit_timestamp_origin",
            "pg_xact_status",
            "txid_status",
        ),
        _READS,
    ),
    "pg_stat_clear_snapshot": "drops this session's own statistics snapshot; nothing else sees it",
    "pg_stat_force_next_flush": "flushes this session's own statistics a little earlier",
}
