"""The role's reach: functions PostgreSQL runs for the role without checking EXECUTE at call time.

One catalogue query lists every edge (object the role can make PostgreSQL use -> support function
PostgreSQL calls through it without an ACL check, or checks against the object's owner) that ends in
a hazard: a SECURITY DEFINER function, an administrative function (pg_catalog, withheld from PUBLIC)
or a function of an outreaching extension. Each edge is a refusal naming the path, the owners and the
fix (docs/tools/read_only_sql.md, "What the role can reach"). Sync psycopg only; no trio.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from mcp_suite.tools.sql.engine.role_audit.finding import ACCEPT_SETTING, MAX_LISTED, Finding

if TYPE_CHECKING:
    import psycopg

__all__ = ["REACH_QUERY", "ReachEdge", "reach_findings", "read_reach"]

# Every family below is an edge PostgreSQL follows without `object_aclcheck(..., GetUserId(),
# ACL_EXECUTE)` on the function it reaches (the table in docs/tools/read_only_sql.md gives the
# source file and function for each). Paths checked at call time against the caller (operators'
# functions, casts, domain CHECKs, views, policies, window functions) are not listed: there the
# role's own EXECUTE decides, and the definer-function finding covers it. The hazards are the audit's
# own definer/admin/extension findings, except that whether the role may EXECUTE them does not
# matter here: along these edges nobody asks.
REACH_QUERY: Final = """
WITH edge AS (
  SELECT 'aggregate' AS family, a.aggfnoid::regprocedure::text AS via,
         pg_catalog.pg_get_userbyid(f.proowner) AS via_owner, s.step, s.fn
  FROM pg_catalog.pg_aggregate a JOIN pg_catalog.pg_proc f ON f.oid = a.aggfnoid
  CROSS JOIN LATERAL (VALUES ('transition function', a.aggtransfn::oid),
    ('final function', a.aggfinalfn::oid), ('combine function', a.aggcombinefn::oid),
    ('serialization function', a.aggserialfn::oid), ('deserialization function', a.aggdeserialfn::oid),
    ('moving transition function', a.aggmtransfn::oid),
    ('moving inverse transition function', a.aggminvtransfn::oid),
    ('moving final function', a.aggmfinalfn::oid)) AS s(step, fn)
  WHERE pg_catalog.has_function_privilege(a.aggfnoid, 'EXECUTE')
 UNION ALL
  SELECT 'type', t.oid::regtype::text, pg_catalog.pg_get_userbyid(t.typowner), s.step, s.fn
  FROM pg_catalog.pg_type t
  CROSS JOIN LATERAL (VALUES ('input function', t.typinput::oid), ('output function', t.typoutput::oid),
    ('receive function', t.typreceive::oid), ('send function', t.typsend::oid),
    ('type modifier input function', t.typmodin::oid), ('type modifier output function', t.typmodout::oid),
    ('analyze function', t.typanalyze::oid), ('subscript function', t.typsubscript::oid)) AS s(step, fn)
 UNION ALL
  SELECT 'range type', r.rngtypid::regtype::text, pg_catalog.pg_get_userbyid(t.typowner), s.step, s.fn
  FROM pg_catalog.pg_range r JOIN pg_catalog.pg_type t ON t.oid = r.rngtypid
  CROSS JOIN LATERAL (VALUES ('canonical function', r.rngcanonical::oid),
    ('subtype difference function', r.rngsubdiff::oid)) AS s(step, fn)
 UNION ALL
  SELECT 'operator', o.oid::regoperator::text, pg_catalog.pg_get_userbyid(o.oprowner), s.step, s.fn
  FROM pg_catalog.pg_operator o
  CROSS JOIN LATERAL (VALUES ('restriction estimator', o.oprrest::oid),
    ('join estimator', o.oprjoin::oid)) AS s(step, fn)
 UNION ALL
  SELECT 'function', p.oid::regprocedure::text, pg_catalog.pg_get_userbyid(p.proowner),
         'planner support function', p.prosupport::oid
  FROM pg_catalog.pg_proc p WHERE p.prosupport <> 0
 UNION ALL
  SELECT 'operator family',
         pg_catalog.format('%%s.%%I (%%s)', f.opfnamespace::regnamespace, f.opfname, am.amname),
         pg_catalog.pg_get_userbyid(f.opfowner),
         pg_catalog.format('support function %%s for %%s, %%s', ap.amprocnum,
                           ap.amproclefttype::regtype, ap.amprocrighttype::regtype),
         ap.amproc::oid
  FROM pg_catalog.pg_amproc ap JOIN pg_catalog.pg_opfamily f ON f.oid = ap.amprocfamily
  JOIN pg_catalog.pg_am am ON am.oid = f.opfmethod
 UNION ALL
  SELECT 'operator family',
         pg_catalog.format('%%s.%%I (%%s)', f.opfnamespace::regnamespace, f.opfname, am.amname),
         pg_catalog.pg_get_userbyid(f.opfowner),
         pg_catalog.format('operator %%s, whose function is', ao.amopopr::regoperator),
         o.oprcode::oid
  FROM pg_catalog.pg_amop ao JOIN pg_catalog.pg_operator o ON o.oid = ao.amopopr
  JOIN pg_catalog.pg_opfamily f ON f.oid = ao.amopfamily
  JOIN pg_catalog.pg_am am ON am.oid = f.opfmethod
 UNION ALL
  SELECT 'conversion', pg_catalog.format('%%s.%%I', c.connamespace::regnamespace, c.conname),
         pg_catalog.pg_get_userbyid(c.conowner),
         'conversion function', c.conproc::oid
  FROM pg_catalog.pg_conversion c
 UNION ALL
  SELECT 'text search parser', pg_catalog.format('%%s.%%I', p.prsnamespace::regnamespace, p.prsname),
         NULL, s.step, s.fn
  FROM pg_catalog.pg_ts_parser p
  CROSS JOIN LATERAL (VALUES ('start function', p.prsstart::oid), ('token function', p.prstoken::oid),
    ('end function', p.prsend::oid), ('headline function', p.prsheadline::oid),
    ('lextypes function', p.prslextype::oid)) AS s(step, fn)
 UNION ALL
  SELECT 'text search template',
         pg_catalog.format('%%s.%%I', t.tmplnamespace::regnamespace, t.tmplname), NULL, s.step, s.fn
  FROM pg_catalog.pg_ts_template t
  CROSS JOIN LATERAL (VALUES ('init function', t.tmplinit::oid),
    ('lexize function', t.tmpllexize::oid)) AS s(step, fn)
 UNION ALL
  SELECT 'foreign-data wrapper', w.fdwname::text, pg_catalog.pg_get_userbyid(w.fdwowner),
         'handler', w.fdwhandler
  FROM pg_catalog.pg_foreign_data_wrapper w
 UNION ALL
  SELECT 'access method', am.amname::text, NULL, 'handler', am.amhandler::oid
  FROM pg_catalog.pg_am am
 UNION ALL
  SELECT 'tablesample method', p.oid::regprocedure::text, pg_catalog.pg_get_userbyid(p.proowner),
         'handler', p.oid
  FROM pg_catalog.pg_proc p WHERE p.prorettype = 'pg_catalog.tsm_handler'::pg_catalog.regtype
 UNION ALL
  SELECT 'transform', pg_catalog.format('for %%s language %%s', tr.trftype::regtype, l.lanname),
         NULL, s.step, s.fn
  FROM pg_catalog.pg_transform tr JOIN pg_catalog.pg_language l ON l.oid = tr.trflang
  CROSS JOIN LATERAL (VALUES ('from-SQL function', tr.trffromsql::oid),
    ('to-SQL function', tr.trftosql::oid)) AS s(step, fn)
 UNION ALL
  SELECT 'language', l.lanname::text, pg_catalog.pg_get_userbyid(l.lanowner), s.step, s.fn
  FROM pg_catalog.pg_language l
  CROSS JOIN LATERAL (VALUES ('call handler', l.lanplcallfoid), ('inline handler', l.laninline),
    ('validator', l.lanvalidator)) AS s(step, fn)
),
hazard AS (
  SELECT p.oid,
         CASE WHEN p.prosecdef THEN 'SECURITY DEFINER'
              WHEN e.extname IS NOT NULL THEN 'extension'
              ELSE 'administrative' END AS kind,
         e.extname
  FROM pg_catalog.pg_proc p
  LEFT JOIN pg_catalog.pg_depend d ON d.classid = 'pg_catalog.pg_proc'::pg_catalog.regclass
    AND d.objid = p.oid AND d.deptype = 'e'
    AND d.refclassid = 'pg_catalog.pg_extension'::pg_catalog.regclass
  LEFT JOIN pg_catalog.pg_extension e ON e.oid = d.refobjid AND e.extname = ANY(%(outreaching)s)
  WHERE p.prosecdef OR e.extname IS NOT NULL
     OR (p.pronamespace = 'pg_catalog'::pg_catalog.regnamespace AND p.proacl IS NOT NULL
         AND NOT pg_catalog.has_function_privilege('public', p.oid, 'EXECUTE'))
)
SELECT DISTINCT edge.family, edge.via, edge.via_owner, edge.step,
       p.oid::regprocedure::text, n.nspname, p.proname, pg_catalog.pg_get_userbyid(p.proowner),
       h.kind, h.extname
FROM edge JOIN hazard h ON h.oid = edge.fn
JOIN pg_catalog.pg_proc p ON p.oid = edge.fn
JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
-- The same test again as a plain condition: PostgreSQL pushes it into every branch above, so the
-- names are printed for the few hazardous edges only, not for every type and operator.
WHERE edge.fn = ANY(ARRAY(SELECT oid FROM hazard))
ORDER BY 1, 2, 4, 5
"""


@dataclass(frozen=True, slots=True)
class ReachEdge:
    """One path from an object the role can use to a hazardous function PostgreSQL runs unasked."""

    family: str  # "aggregate", "type", "operator family", ...
    via: str  # the object, as PostgreSQL prints it (regprocedure, regtype, ...)
    via_owner: str | None  # None: the catalogue has no owner for it (access methods, transforms)
    step: str  # "transition function", "input function", ...
    function: str  # regprocedure text of the function reached
    schema: str
    name: str
    function_owner: str
    kind: str  # "SECURITY DEFINER", "administrative" or "extension"
    extension: str | None

    def path(self) -> str:
        """`aggregate util.agg(text) → transition function util.step(text,text) (function owner x, ...)`"""
        owners = f"function owner {self.function_owner}"
        if self.via_owner:
            owners += f", {self.family} owner {self.via_owner}"
        return f"{self.family} {self.via} → {self.step} {self.function} ({owners})"


def read_reach(conn: psycopg.Connection[Any], outreaching: tuple[str, ...]) -> list[ReachEdge]:
    """Every hazardous edge in the database: one statement."""
    rows = conn.execute(REACH_QUERY, {"outreaching": list(outreaching)}).fetchall()
    return [ReachEdge(*row) for row in rows]


def _hazard(edge: ReachEdge) -> str:
    if edge.kind == "SECURITY DEFINER":
        return "a SECURITY DEFINER function, which runs with its owner's privileges"
    if edge.kind == "extension":
        return (
            f"a function of the extension {edge.extension}, which reaches other servers or the server's files"
        )
    return "an administrative function PostgreSQL withholds from PUBLIC"


def _fix(edge: ReachEdge, role: str) -> str:
    cut = (
        f"ALTER FUNCTION {edge.function} SECURITY INVOKER; (as {edge.function_owner})"
        if edge.kind == "SECURITY DEFINER"
        else f"remove the {edge.family} {edge.via}, or make it use another function"
    )
    if edge.family == "aggregate":
        # The aggregate itself is checked against the caller: revoking it cuts the path at its start.
        return f"REVOKE EXECUTE ON FUNCTION {edge.via} FROM PUBLIC, {role}; or {cut}"
    return cut


def reach_findings(edges: list[ReachEdge], *, role: str, accepted: frozenset[str]) -> list[Finding]:
    """One refusal per edge (the first MAX_LISTED, then a count); a warning instead when its
    function is a SECURITY DEFINER function the operator accepted."""
    findings: list[Finding] = []
    refused = 0
    for edge in edges:
        problem = (
            f"PostgreSQL runs code for the role without checking EXECUTE: {edge.path()} is {_hazard(edge)}"
        )
        if edge.kind == "SECURITY DEFINER" and f"{edge.schema}.{edge.name}" in accepted:
            findings.append(
                Finding(
                    "reach-accepted",
                    f"{problem}: accepted as a known risk by {ACCEPT_SETTING}",
                    _fix(edge, role) + f" and remove {edge.schema}.{edge.name} from {ACCEPT_SETTING}",
                    warning=True,
                )
            )
            continue
        refused += 1
        if refused <= MAX_LISTED:
            findings.append(Finding("reach", problem, _fix(edge, role)))
    if refused > MAX_LISTED:
        findings.append(
            Finding(
                "reach",
                f"PostgreSQL runs {refused - MAX_LISTED} more such functions for the role",
                "fix the paths above; mcp-suite check-role then lists the rest",
            )
        )
    return findings
