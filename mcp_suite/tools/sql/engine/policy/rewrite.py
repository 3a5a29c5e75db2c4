"""The deterministic outer LIMIT (docs/tools/read_only_sql.md), and the text that will run.

Owns: the text that runs, which is the caller's own statement (its comments blanked), inside
`SELECT * FROM (<statement>) AS q LIMIT <max_rows + 1>`; the caller's outer limit as the answer's
bound (a plain integer literal, else none); and the proof, on PostgreSQL's reading of that text,
that its root is exactly that wrapper around exactly the caller's tree. No parser regenerates the
caller's text: what PostgreSQL runs is what was sent, and the rows it returns are cut at the cap.
Pure: no I/O.
"""

from __future__ import annotations

from typing import Any, Final

from pglast import parser as pg_parser

from mcp_suite.tools.sql.engine.policy import refusals

__all__ = ["POSITIONS", "SUBQUERY_ALIAS", "check_wrapped", "literal_limit", "wrap"]

SUBQUERY_ALIAS: Final = "q"
_PREFIX: Final = "SELECT * FROM (\n"
# The newline ends a `--` comment the caller's text may end with.
_SUFFIX: Final = "\n) AS " + SUBQUERY_ALIAS + " LIMIT "
_SKIPPED: Final = frozenset({"ASCII_59", "SQL_COMMENT", "C_COMMENT"})  # `;` and comments
# The fields of PostgreSQL's tree that hold a byte position in the text (every `ParseLoc` of pglast's
# nodes; PostgreSQL's JSON leaves a zero out, and an unknown position is -1).
POSITIONS: Final = frozenset(
    {
        "location",
        "list_start",
        "list_end",
        "rexpr_list_start",
        "rexpr_list_end",
        "arg_location",
        "name_location",
        "payload_location",
        "conninfo_location",
        "stmt_location",
    }
)


def wrap(sql: str, cap: int) -> tuple[str, int]:
    """The text to run for the caller's one statement `sql`, and how far (in bytes) the statement
    moved in it.

    Semicolons and comments before the first token and after the last are left out (PostgreSQL
    has already counted exactly one statement); everything between is the caller's, as written,
    except that each comment is blanked out (a comment can carry planner hints, for pg_hint_plan),
    byte for byte, so that PostgreSQL's positions in the statement do not move.
    """
    scanned = pg_parser.scan(sql)
    tokens = [token for token in scanned if token.name not in _SKIPPED]
    first, last = tokens[0].start, tokens[-1].end + 1
    pieces: list[str] = []
    done = first
    for token in scanned:
        if token.name in ("SQL_COMMENT", "C_COMMENT") and first < token.start < last:
            comment = sql[token.start : token.end + 1]
            pieces.append(sql[done : token.start])
            pieces.append("".join(c if c == "\n" else " " * len(c.encode()) for c in comment))
            done = token.end + 1
    pieces.append(sql[done:last])
    shift = len(_PREFIX.encode()) - len(sql[:first].encode())
    return f"{_PREFIX}{''.join(pieces)}{_SUFFIX}{cap}", shift


def literal_limit(select: dict[str, Any]) -> int | None:
    """The caller's outer LIMIT in PostgreSQL's tree when it is a plain non-negative integer, else None
    (no limit, LIMIT ALL / NULL, an expression, a string, WITH TIES)."""
    if select.get("limitOption") != "LIMIT_OPTION_COUNT":
        return None
    count = select.get("limitCount", {}).get("A_Const")
    if count is None or "ival" not in count:
        return None
    value = count["ival"].get("ival", 0)  # PostgreSQL's JSON leaves a zero out
    return value if isinstance(value, int) and value >= 0 else None


def check_wrapped(executed: dict[str, Any], original: dict[str, Any], cap: int, shift: int) -> None:
    """The executed text's root must be `SELECT * FROM (<original>) AS q LIMIT <cap>` and nothing else,
    with the subquery node for node the caller's tree (its positions moved by `shift` bytes)."""
    star: list[Any] = [{"ResTarget": {"val": {"ColumnRef": {"fields": [{"A_Star": {}}]}}}}]
    clause = executed.get("fromClause", [])
    inner = clause[0].get("RangeSubselect", {}) if len(clause) == 1 else {}
    count = executed.get("limitCount", {}).get("A_Const", {}).get("ival", {}).get("ival")
    if (
        set(executed) != {"targetList", "fromClause", "limitCount", "limitOption", "op"}
        or _without_locations(executed["targetList"]) != star
        or executed["limitOption"] != "LIMIT_OPTION_COUNT"
        or count != cap
        or set(inner) != {"subquery", "alias"}
        or inner["alias"] != {"aliasname": SUBQUERY_ALIAS}
        or not _same_tree(inner["subquery"].get("SelectStmt"), original, shift)
    ):
        raise refusals.limit_rewrite()


def _without_locations(node: Any) -> Any:
    if isinstance(node, dict):
        return {key: _without_locations(value) for key, value in node.items() if key not in POSITIONS}
    if isinstance(node, list):
        return [_without_locations(item) for item in node]
    return node


def _same_tree(moved: Any, original: Any, shift: int) -> bool:
    """Whether `moved` is `original` with every known position moved by `shift` (iteratively).
    PostgreSQL's JSON leaves a zero position out; an unknown one is -1 in both."""
    pairs = [(moved, original)]
    while pairs:
        left, right = pairs.pop()
        if type(left) is not type(right):
            return False
        if isinstance(left, dict):
            if left.keys() - POSITIONS != right.keys() - POSITIONS:
                return False
            for key in POSITIONS & (left.keys() | right.keys()):
                position = right.get(key, 0)
                if left.get(key, 0) != (position if position < 0 else position + shift):
                    return False
            pairs.extend((left[key], right[key]) for key in left if key not in POSITIONS)
        elif isinstance(left, list):
            if len(left) != len(right):
                return False
            pairs.extend(zip(left, right, strict=True))
        elif left != right:
            return False
    return True
