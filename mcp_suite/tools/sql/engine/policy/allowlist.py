"""What a query may name: PostgreSQL's functions and types, by reviewed allow-lists (docs/tools/).

Owns: the verdict on every function PostgreSQL ships (`functions.tsv` beside this module: each name
classified once, allowed with its family or refused with its reason; a name the file does not hold is
refused), the reviewed list of built-in types a query may name, and the sentences of their refusals.
Names outside `pg_catalog` (the database's own functions and types, and extensions') are not judged
here: they are `EXTERNAL`, and the engine judges them on the role's catalogue (`names.NameGuard`).
Pure data and string work: no I/O beyond reading the data file once at import, no parser imports.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from importlib import resources
from typing import Final

__all__ = [
    "BUILTIN_TYPES",
    "EXTERNAL",
    "IDENTIFIER_TYPES",
    "INTERNAL_TYPES",
    "LIFTED_BY_CATALOGUE",
    "NAMING_TYPES",
    "REASONS",
    "REVIEWED_EXTENSIONS",
    "REVIEWED_IDENTIFIER_FUNCTIONS",
    "STATE_FUNCTIONS",
    "XML_FUNCTIONS",
    "XML_TYPES",
    "External",
    "allowed_count",
    "classified",
    "extension_function_allowed",
    "format_line",
    "function_verdict",
    "type_verdict",
]


class _External(enum.Enum):
    EXTERNAL = "external"


# Not judged here: a name outside PostgreSQL's own schemas, judged on the role's catalogue.
EXTERNAL: Final = _External.EXTERNAL
External = _External  # its type, for annotations

# PostgreSQL hands XML to libxml2, which never checks for cancellation: parsing a large computed
# document or an XPath over a crafted one runs on past the statement timeout, holding its backend
# (issue 51; tests/pg/test_sql_interruptible.py). Refused unless the operator allows XML for the
# source (MCP_SQL_ALLOW_XML), with the XML syntax (XMLPARSE, XMLELEMENT, XMLTABLE, ...) and the type.
XML_FUNCTIONS: Final = frozenset(
    {
        "xml",
        "xmlagg",
        "xmlcomment",
        "xmlconcat2",
        "xmlexists",
        "xmltext",
        "xmlvalidate",
        "xpath",
        "xpath_exists",
        "xml_is_well_formed",
        "xml_is_well_formed_content",
        "xml_is_well_formed_document",
    }
)
XML_TYPES: Final = frozenset({"xml"})

SYSTEM_SCHEMAS: Final = frozenset({"pg_catalog", "information_schema"})

# Types whose input and output functions turn a name into a number and back, for any object or
# role, whatever the role may read (regtype::text prints it); the catalogue rule refuses them too.
NAMING_TYPES: Final = frozenset(
    {
        "aclitem",
        "regclass",
        "regcollation",
        "regconfig",
        "regdictionary",
        "regnamespace",
        "regoper",
        "regoperator",
        "regproc",
        "regprocedure",
        "regrole",
        "regtype",
    }
)
# Types that name database objects or roles by number.
IDENTIFIER_TYPES: Final = NAMING_TYPES | {"oid", "oidvector"}

# Types of PostgreSQL's machinery: a function taking or returning one is a support function.
INTERNAL_TYPES: Final = frozenset(
    {
        "internal",
        "trigger",
        "event_trigger",
        "language_handler",
        "fdw_handler",
        "index_am_handler",
        "table_am_handler",
        "tsm_handler",
        "cstring",
        "pg_ddl_command",
        "opaque",
        "pg_node_tree",
        "pg_ndistinct",
        "pg_dependencies",
        "pg_mcv_list",
        "pg_brin_bloom_summary",
        "pg_brin_minmax_multi_summary",
        "txid_snapshot",
        "pg_snapshot",
    }
)

# Names with an overload on an identifier type, reviewed one by one and allowed, with the reason.
_TEXT_SEARCH_CONFIG: Final = (
    "its regconfig argument names a text search configuration, which is all it can tell about the catalogue"
)
REVIEWED_IDENTIFIER_FUNCTIONS: Final[Mapping[str, str]] = {
    **dict.fromkeys(
        (
            "to_tsvector",
            "to_tsquery",
            "plainto_tsquery",
            "phraseto_tsquery",
            "websearch_to_tsquery",
            "ts_headline",
            "json_to_tsvector",
            "jsonb_to_tsvector",
        ),
        _TEXT_SEARCH_CONFIG,
    ),
    "int8": "its oid overload turns an identifier the query holds into a number; nothing is looked up",
    "max": "its oid overload compares identifiers the query already holds; nothing is looked up",
    "min": "its oid overload compares identifiers the query already holds; nothing is looked up",
}

# Stable functions that read server or session state outside the value they are given, refused
# although no other rule catches them.
STATE_FUNCTIONS: Final = frozenset({"current_query", "mxid_age", "txid_visible_in_snapshot"})

# The reasons of refusal, each written once; `denied` and `catalogue` quote their own modules.
REASONS: Final[Mapping[str, str]] = {
    "internal": (
        "is part of PostgreSQL's machinery (planner, index, type or trigger support), not for queries"
    ),
    "identifier": (
        "takes or returns object identifiers, which turn numbers or names into facts about objects "
        "the role may not read"
    ),
    "type-io": "is a type's input or output function: write a cast to an ordinary type instead",
    "state": "reads or changes server or session state",
    "unclassified": "is not on the reviewed list of PostgreSQL's functions",
}
# Refusals that MCP_SQL_ALLOW_CATALOGUE lifts: reading the catalogue is what the operator allowed.
LIFTED_BY_CATALOGUE: Final = frozenset({"catalogue", "identifier"})

# Built-in types a query may name (a cast, a typed literal, a column definition list), by the name
# PostgreSQL's grammar gives them (`integer` is `pg_catalog.int4`): ordinary values only.
BUILTIN_TYPES: Final = frozenset(
    {
        # numbers, money
        *("int2", "int4", "int8", "float4", "float8", "numeric", "money"),
        # strings, binary strings, bit strings
        *("text", "varchar", "bpchar", "char", "name", "bytea", "bit", "varbit"),
        # dates and times
        *("date", "time", "timetz", "timestamp", "timestamptz", "interval"),
        # structured values
        *("bool", "json", "jsonb", "jsonpath", "xml", "uuid", "record"),
        # network, geometry
        *("inet", "cidr", "macaddr", "macaddr8"),
        *("point", "line", "lseg", "box", "path", "polygon", "circle"),
        # text search over values (regconfig: see REVIEWED_IDENTIFIER_FUNCTIONS)
        *("tsvector", "tsquery", "regconfig"),
        # ranges and multiranges
        *("int4range", "int8range", "numrange", "tsrange", "tstzrange", "daterange"),
        *("int4multirange", "int8multirange", "nummultirange", "tsmultirange"),
        *("tstzmultirange", "datemultirange"),
        # values of system columns (ctid, xmin), which name no object
        *("tid", "xid", "xid8", "cid", "pg_lsn"),
    }
)

_TYPE_NOT_LISTED: Final = (
    "is neither a built-in type on the reviewed list nor the type of a table or column the role may "
    "read in full"
)


def _load() -> dict[str, tuple[str, str]]:
    table: dict[str, tuple[str, str]] = {}
    text = resources.files(__package__).joinpath("functions.tsv").read_text(encoding="utf-8")
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        name, verdict, why, _versions = line.split("\t")
        table[name] = (verdict, why)
    return table


_TABLE: Final = _load()
# The reviewed aggregates: a value one of them builds grows with the rows it reads (`policy.built`).
AGGREGATE_FUNCTIONS: Final = frozenset(name for name, (_, family) in _TABLE.items() if family == "aggregates")


def classified(name: str) -> tuple[str, str] | None:
    """(verdict, family or reason key) of PostgreSQL's function `name` (exact), or None."""
    return _TABLE.get(name)


def format_line(name: str, verdict: str, why: str, versions: Sequence[int]) -> str:
    """One line of functions.tsv."""
    return "\t".join((name, verdict, why, " ".join(map(str, versions))))


def allowed_count() -> int:
    """How many names the file allows."""
    return sum(verdict == "allow" for verdict, _ in _TABLE.values())


def function_verdict(schema: str, name: str, *, allow_catalogue: bool) -> tuple[str, str] | _External | None:
    """Whether a query may call `schema.name` (`schema` "" when unqualified; both case-folded).

    None: allowed. `EXTERNAL`: not PostgreSQL's own, judged on the role's catalogue. Else
    (reason key, sentence) of the refusal: `denied` and `catalogue` are the other modules' keys, the
    caller words those.
    """
    if schema and schema not in SYSTEM_SCHEMAS:
        return EXTERNAL
    entry = _TABLE.get(name)
    if entry is None:
        # pg_catalog is searched first: an unqualified name it does not hold may be the database's.
        return EXTERNAL if not schema else ("unclassified", REASONS["unclassified"])
    verdict, why = entry
    if verdict == "allow" or (allow_catalogue and why in LIFTED_BY_CATALOGUE):
        return None
    return why, REASONS.get(why, "")


def type_verdict(schema: str, name: str, *, allow_catalogue: bool) -> str | _External | None:
    """Whether a query may name the type `schema.name` (case-folded; `schema` "" when unqualified).

    None: allowed; `EXTERNAL`: judged on the role's catalogue; else the sentence of the refusal.
    """
    if schema and schema not in SYSTEM_SCHEMAS:
        return EXTERNAL
    if name in BUILTIN_TYPES or (allow_catalogue and name in IDENTIFIER_TYPES):
        return None
    if not schema and name not in IDENTIFIER_TYPES and name not in INTERNAL_TYPES:
        return EXTERNAL  # a type of the database's own, unqualified
    return _TYPE_NOT_LISTED


# Extensions whose functions a query may call by name, each reviewed: the names (or the name
# prefixes) allowed, with what they do. Their types may be named too. Any other extension's functions
# are refused unless the operator allows the extension (MCP_SQL_ALLOW_EXTENSIONS, logged at start-up).
_Review = tuple[frozenset[str], tuple[str, ...], str]
REVIEWED_EXTENSIONS: Final[Mapping[str, _Review]] = {
    "pg_trgm": (
        frozenset({"similarity", "word_similarity", "strict_word_similarity", "show_trgm"}),
        (),
        "trigram similarity of the values given",
    ),
    "unaccent": (frozenset({"unaccent"}), (), "removes accents from the value given"),
    "fuzzystrmatch": (
        frozenset(
            {
                "levenshtein",
                "levenshtein_less_equal",
                "soundex",
                "difference",
                "metaphone",
                "dmetaphone",
                "dmetaphone_alt",
                "daitch_mokotoff",
            }
        ),
        (),
        "string distances and phonetic codes of the values given",
    ),
    "citext": (
        # Its overloads of regexp_match, strpos, replace, ... share PostgreSQL's names (allowed there).
        frozenset({"citext"}),
        (),
        "case-insensitive text",
    ),
    "hstore": (
        frozenset(
            {
                "akeys",
                "avals",
                "skeys",
                "svals",
                "each",
                "exist",
                "exists_all",
                "exists_any",
                "defined",
                "delete",
                "slice",
                "slice_array",
                "fetchval",
                "isexists",
                "isdefined",
                "populate_record",
                "tconvert",
                "hstore",
            }
        ),
        ("hstore_to_",),
        "key/value maps as values",
    ),
    "pgcrypto": (
        frozenset({"digest", "hmac"}),
        (),
        "digests and HMACs of the values given (its ciphers and key handling are not reviewed)",
    ),
    "uuid-ossp": (
        frozenset(
            {
                "uuid_generate_v1mc",
                "uuid_generate_v3",
                "uuid_generate_v4",
                "uuid_generate_v5",
                "uuid_nil",
                "uuid_ns_dns",
                "uuid_ns_url",
                "uuid_ns_oid",
                "uuid_ns_x500",
            }
        ),
        (),
        "UUIDs (not uuid_generate_v1, which carries the server's MAC address)",
    ),
    "postgis": (
        frozenset({"geometry", "geography", "box2d", "box3d"}),
        ("st_",),
        "PostGIS's geometry and geography functions (ST_*); not its administration functions",
    ),
    "vector": (
        frozenset(
            {
                "l2_distance",
                "inner_product",
                "cosine_distance",
                "l1_distance",
                "hamming_distance",
                "jaccard_distance",
                "vector_dims",
                "vector_norm",
                "l2_norm",
                "l2_normalize",
                "binary_quantize",
                "subvector",
                "vector",
                "halfvec",
                "sparsevec",
            }
        ),
        (),
        "pgvector's distances and vector arithmetic on the values given",
    ),
}


def extension_function_allowed(extension: str, name: str) -> bool:
    """Whether the reviewed list allows extension `extension`'s function `name` (case-folded)."""
    review = REVIEWED_EXTENSIONS.get(extension)
    if review is None:
        return False
    names, prefixes, _what = review
    return name in names or name.startswith(prefixes)
