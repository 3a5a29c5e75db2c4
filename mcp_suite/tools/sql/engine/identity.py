"""Who reads the database over HTTP: the identity map from a caller's verified claims to a PostgreSQL role.

Owns the pure decisions of per-person reading (issue 42): parsing and validating a source's
`[sources.identity]` table into an `IdentityMap` (rules, first match wins, an optional default
role, the claims passed on, whether the subject is personal data), the role a caller maps to, and
what a call's transaction is told (`CallRole`: the role, the claims as JSON for
`request.jwt.claims`, the `application_name`). The SQL family's own: the sources parse it, the
engine and its executor apply it; the transports only hand over the verified caller
(`mcp_suite.caller`). No I/O, no trio, no psycopg (the "policy modules do no I/O" contract): the
executor quotes and sends what this module decides.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import re._constants as sre  # type: ignore[import-not-found]  # CPython's own regex parser, no stub
import re._parser as sre_parse  # type: ignore[import-not-found]  # (the compiled pattern's source)
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

__all__ = [
    "APPLICATION_PREFIX",
    "CLAIMS_SETTING",
    "PATTERN_CHOICES_MAX",
    "ROLE_NAME_BYTES",
    "SUBJECT_PATTERN_MAX_CHARS",
    "CallRole",
    "IdentityMap",
    "Rule",
    "UnsafeClaimError",
    "application_name",
    "call_role",
    "claims_json",
    "mapped_role",
    "parse_identity",
]

# PostgREST's convention: `current_setting('request.jwt.claims', true)::json ->> 'sub'`. Policies
# written for PostgREST (or Supabase) read the same setting, so a database that already has them
# needs no new ones (docs/operations/remote.md, "Each person reads as themselves").
CLAIMS_SETTING: Final = "request.jwt.claims"
APPLICATION_PREFIX: Final = "mcp-suite/"
# PostgreSQL keeps at most NAMEDATALEN - 1 bytes of a role name and of application_name.
ROLE_NAME_BYTES: Final = 63
_HASH_CHARS: Final = 16  # of the subject's keyed SHA-256, hex: 64 bits, enough to tell people apart
# The key of that hash: at least this many bytes (a file's, `subject_key_file`), else a random one.
SUBJECT_KEY_BYTES: Final = 32
_KEYS: Final = frozenset(
    {"rules", "default_role", "claims", "personal_subject", "group_claims", "subject_key_file"}
)
_RULE_KINDS: Final = ("group", "subject", "subject_pattern")
# Where a caller's groups are read: claim paths, each a tuple of names from the token's top level
# down (Keycloak's `realm_access.roles`, Cognito's `cognito:groups`, Entra's `groups`).
_GROUP_CLAIMS: Final = (("groups",), ("roles",))
_GROUP_PATHS: Final = 8
_PATH_SEGMENTS: Final = 4
_SEGMENT_CHARS: Final = 128
# C0 controls (NUL included), DEL and the C1 controls: PostgreSQL's json cannot give a NUL back as
# text (`->>` fails on "\u0000"), and none of them belongs in a name a policy compares.
_CONTROL: Final = re.compile("[\x00-\x1f\x7f-\x9f]")
# `sub` always goes; these are the token's own, not the person's (and `scope` is the server's).
_RESERVED_CLAIMS: Final = frozenset({"sub", "iss", "aud", "exp", "nbf", "iat", "jti", "scope", "scp"})
_CLAIM_NAME: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_.:-]{0,63}")
# A subject_pattern is matched on the event loop, by a backtracking matcher that nothing can
# interrupt: so it is checked once, at load, for a bounded worst case (`_pattern_problem`), and a
# subject longer than SUBJECT_PATTERN_MAX_CHARS never matches a pattern (real subjects are ids and
# addresses: a UUID is 36 characters). The bound is on the backtracking a pattern allows over such a
# subject: the product of each quantifier's choices (at most two unbounded quantifiers, roughly).
SUBJECT_PATTERN_MAX_CHARS: Final = 128
PATTERN_CHOICES_MAX: Final = 400_000
_REPEATS: Final = frozenset({sre.MAX_REPEAT, sre.MIN_REPEAT, sre.POSSESSIVE_REPEAT})
_REFUSED_NODES: Final = {
    sre.GROUPREF: "a backreference",
    sre.GROUPREF_EXISTS: "a conditional group",
    sre.ASSERT: "a lookaround",
    sre.ASSERT_NOT: "a lookaround",
}


@dataclass(frozen=True, slots=True)
class Rule:
    """One rule: a caller whose `group` (in `groups` or `roles`), exact `subject` or subject
    matching `pattern` (whole) reads as `role`."""

    role: str
    group: str | None = None
    subject: str | None = None
    pattern: re.Pattern[str] | None = None

    def matches(self, subject: str, groups: frozenset[str]) -> bool:
        if self.group is not None:
            return self.group in groups
        if self.subject is not None:
            return subject == self.subject
        assert self.pattern is not None  # parse_identity builds one of the three
        # The bound the pattern was checked for at load (SUBJECT_PATTERN_MAX_CHARS).
        return len(subject) <= SUBJECT_PATTERN_MAX_CHARS and self.pattern.fullmatch(subject) is not None


@dataclass(frozen=True, slots=True)
class IdentityMap:
    """A source's identity map: rules in order, the default role, the claims passed on besides
    `sub`, and whether `application_name` carries a hash of the subject instead of the subject."""

    rules: tuple[Rule, ...]
    default_role: str | None = None
    claims: tuple[str, ...] = ()
    personal_subject: bool = False
    group_claims: tuple[tuple[str, ...], ...] = _GROUP_CLAIMS
    # The hash's key (`subject_key_file`'s content, read by `sources`); without one, random for the
    # process: the same person has the same hash for as long as the process runs, and a list of
    # staff hashed by anyone without the key matches nothing.
    subject_key: bytes = field(
        default_factory=lambda: secrets.token_bytes(SUBJECT_KEY_BYTES), repr=False, compare=False
    )
    subject_key_file: str | None = None  # the path, read by `sources` (this module does no I/O)

    @property
    def roles(self) -> tuple[str, ...]:
        """Every role the map names, each once, in the order they appear (the audit's list)."""
        named = [rule.role for rule in self.rules]
        if self.default_role is not None:
            named.append(self.default_role)
        return tuple(dict.fromkeys(named))


@dataclass(frozen=True, slots=True)
class CallRole:
    """What one call's transaction is switched to: the role, the claims (JSON text for
    `request.jwt.claims`) and the `application_name` naming the caller."""

    role: str
    claims: str
    application_name: str


def parse_identity(table: object, where: str, problems: list[str]) -> IdentityMap | None:
    """The identity map of `table` (a source's `[sources.identity]`), or None with every problem
    appended to `problems` (each prefixed with `where`, naming the key, never a claim value)."""
    if not isinstance(table, Mapping):
        problems.append(f"{where}: a table ([sources.identity])")
        return None
    before = len(problems)
    problems.extend(f"{where}: {key}: unknown key" for key in sorted(set(table) - _KEYS))
    raw_rules = table.get("rules", [])
    rules: list[Rule] = []
    if not isinstance(raw_rules, list):
        problems.append(f"{where}: rules: an array of tables ([[sources.identity.rules]])")
        raw_rules = []
    for index, raw in enumerate(raw_rules):
        rule = _rule(raw, f"{where}: rules[{index}]", problems)
        if rule is not None:
            rules.append(rule)
    default_role = table.get("default_role")
    if default_role is not None and not _role_name(default_role):
        problems.append(f"{where}: default_role: a role name (1 to {ROLE_NAME_BYTES} bytes)")
    if not raw_rules and default_role is None:
        problems.append(f"{where}: rules: no rule and no default_role: the map would refuse everyone")
    claims = table.get("claims", [])
    named = isinstance(claims, list) and all(isinstance(c, str) and _CLAIM_NAME.fullmatch(c) for c in claims)
    if not named:
        problems.append(f"{where}: claims: a list of claim names")
        claims = []
    reserved = sorted(set(claims) & _RESERVED_CLAIMS)
    if reserved:
        problems.append(f"{where}: claims: {', '.join(reserved)}: passed on already, or the token's own")
    personal = table.get("personal_subject", False)
    if not isinstance(personal, bool):
        problems.append(f"{where}: personal_subject: true or false")
    group_claims = _group_claims(table.get("group_claims"), f"{where}: group_claims", problems)
    key_file = table.get("subject_key_file")
    if key_file is not None and (not isinstance(key_file, str) or not key_file or "\x00" in key_file):
        problems.append(f"{where}: subject_key_file: a path")
    if len(problems) > before:
        return None
    return IdentityMap(
        rules=tuple(rules),
        default_role=default_role,
        claims=tuple(dict.fromkeys(claims)),
        personal_subject=personal,
        group_claims=group_claims,
        subject_key_file=key_file,
    )


def _group_claims(raw: object, where: str, problems: list[str]) -> tuple[tuple[str, ...], ...]:
    """The claim paths `group_claims` names: each a string whose dots separate the names of nested
    claims (`realm_access.roles`; a `:` is part of a name, as in `cognito:groups`), or an array of
    names for a name that holds a dot (`["https://example.com/groups"]`)."""
    if raw is None:
        return _GROUP_CLAIMS
    paths: list[tuple[str, ...]] = []
    if isinstance(raw, list) and 0 < len(raw) <= _GROUP_PATHS:
        for item in raw:
            segments = item.split(".") if isinstance(item, str) else item
            if (
                isinstance(segments, list)
                and 0 < len(segments) <= _PATH_SEGMENTS
                and all(
                    isinstance(s, str) and 0 < len(s) <= _SEGMENT_CHARS and not _CONTROL.search(s)
                    for s in segments
                )
            ):
                paths.append(tuple(segments))
            else:
                break
        else:
            return tuple(dict.fromkeys(paths))
    problems.append(
        f"{where}: a list of 1 to {_GROUP_PATHS} claim paths, each a name or dotted names "
        f"(realm_access.roles), or an array of 1 to {_PATH_SEGMENTS} names"
    )
    return _GROUP_CLAIMS


def _role_name(value: object) -> bool:
    return isinstance(value, str) and 0 < len(value.encode()) <= ROLE_NAME_BYTES and "\x00" not in value


def _rule(raw: object, where: str, problems: list[str]) -> Rule | None:
    if not isinstance(raw, Mapping):
        problems.append(f"{where}: a table with a role and one of {', '.join(_RULE_KINDS)}")
        return None
    unknown = sorted(set(raw) - {"role", *_RULE_KINDS})
    problems.extend(f"{where}: {key}: unknown key" for key in unknown)
    kinds = [kind for kind in _RULE_KINDS if kind in raw]
    role = raw.get("role")
    ok = not unknown
    if not _role_name(role):
        problems.append(f"{where}: role: required, a role name (1 to {ROLE_NAME_BYTES} bytes)")
        ok = False
    if len(kinds) != 1:
        problems.append(f"{where}: exactly one of {', '.join(_RULE_KINDS)}")
        return None
    kind = kinds[0]
    value = raw[kind]
    if not isinstance(value, str) or not value:
        problems.append(f"{where}: {kind}: a non-empty string")
        return None
    if not ok:
        return None
    assert isinstance(role, str)  # checked by _role_name
    if kind == "group":
        return Rule(role=role, group=value)
    if kind == "subject":
        return Rule(role=role, subject=value)
    try:
        pattern = re.compile(value)
    except re.error as exc:
        problems.append(f"{where}: subject_pattern: not a regular expression ({exc.msg})")
        return None
    unsafe = _pattern_problem(value)
    if unsafe:
        problems.append(
            f"{where}: subject_pattern: {unsafe}: its matching could take unbounded time, and it runs"
            " on every call; write it without (a group of alternatives unquantified, one quantifier"
            " per character class, or a list of subject rules)"
        )
        return None
    return Rule(role=role, pattern=pattern)


class _UnsafePatternError(Exception):
    """A construct whose backtracking is not bounded (its name is the message)."""


def _pattern_problem(value: str) -> str | None:
    """Why `value` (a valid regular expression) could backtrack without a small bound, or None."""
    try:
        choices = _choices(sre_parse.parse(value), quantified=False)
    except _UnsafePatternError as exc:
        return str(exc)
    if choices > PATTERN_CHOICES_MAX:
        return (
            "too many quantifiers that can match the same text"
            f" (more than {PATTERN_CHOICES_MAX:,} ways to split a subject)"
        )
    return None


def _choices(items: Any, *, quantified: bool) -> int:
    """How many ways the parsed `items` can split a subject of SUBJECT_PATTERN_MAX_CHARS (an upper
    bound, capped past PATTERN_CHOICES_MAX); raises `_UnsafePatternError` for what has no such bound:
    a quantifier or an alternation inside a quantified group, a backreference, a lookaround."""
    total = 1
    for op, argument in items:
        if op in _REFUSED_NODES:
            raise _UnsafePatternError(_REFUSED_NODES[op])
        if op in _REPEATS:
            if quantified:
                raise _UnsafePatternError("a quantifier inside a quantified group (nested quantifiers)")
            _least, most, body = argument
            _choices(body, quantified=True)
            total *= min(most, SUBJECT_PATTERN_MAX_CHARS) + 1
        elif op is sre.BRANCH:
            if quantified:
                raise _UnsafePatternError("an alternation inside a quantified group")
            total *= sum(_choices(branch, quantified=False) for branch in argument[1])
        elif op is sre.SUBPATTERN:
            total *= _choices(argument[3], quantified=quantified)
        elif op is sre.ATOMIC_GROUP:
            total *= _choices(argument, quantified=quantified)
        total = min(total, PATTERN_CHOICES_MAX + 1)
    return total


def _groups(claims: Mapping[str, Any], paths: tuple[tuple[str, ...], ...]) -> frozenset[str]:
    """The strings of the lists at `paths` in the claims (others count as none)."""
    found: set[str] = set()
    for path in paths:
        value: Any = claims
        for name in path:
            value = value.get(name) if isinstance(value, Mapping) else None
        if isinstance(value, list):
            found.update(item for item in value if isinstance(item, str))
    return frozenset(found)


def mapped_role(identity: IdentityMap, subject: str, claims: Mapping[str, Any]) -> str | None:
    """The role the first matching rule names, else the default role, else None (refused)."""
    groups = _groups(claims, identity.group_claims)
    for rule in identity.rules:
        if rule.matches(subject, groups):
            return rule.role
    return identity.default_role


def claims_json(identity: IdentityMap, subject: str, claims: Mapping[str, Any]) -> str:
    """`{"sub": subject, ...}` with each claim the map names that the token holds, as compact JSON
    (keys sorted: the same caller always sends the same text)."""
    passed: dict[str, Any] = {name: claims[name] for name in identity.claims if name in claims}
    passed["sub"] = subject
    return json.dumps(passed, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def application_name(identity: IdentityMap, subject: str) -> str:
    """`mcp-suite/<subject>`; `mcp-suite/"<subject>"` (JSON-quoted, escapes and all) when it could be
    misread shown raw (spaces at an end, a leading `"` or `~`, a character that is not printable
    ASCII); `mcp-suite/~<keyed hash>` when the subject is personal data or too long to show: always
    printable ASCII, at most 63 bytes (PostgreSQL keeps no more), one reading per subject."""
    raw = all(" " <= c <= "~" for c in subject) and subject == subject.strip(" ")
    shown = subject if raw and not subject.startswith(("~", '"')) else json.dumps(subject, ensure_ascii=True)
    if identity.personal_subject or len(APPLICATION_PREFIX) + len(shown) > ROLE_NAME_BYTES:
        keyed = hmac.new(identity.subject_key, subject.encode(), hashlib.sha256)
        shown = "~" + keyed.hexdigest()[:_HASH_CHARS]
    return APPLICATION_PREFIX + shown


class UnsafeClaimError(ValueError):
    """A claim passed on to PostgreSQL (or the subject) holds a control character; `args[0]` names it."""


def _control_in(value: object) -> bool:
    if isinstance(value, str):
        return _CONTROL.search(value) is not None
    if isinstance(value, list):
        return any(_control_in(item) for item in value)
    if isinstance(value, Mapping):
        return any(_control_in(key) or _control_in(item) for key, item in value.items())
    return False


def call_role(identity: IdentityMap, subject: str, claims: Mapping[str, Any]) -> CallRole | None:
    """What a call by `subject` with `claims` runs as; None when no rule maps it (the call is refused).

    Raises `UnsafeClaimError` when the subject or a claim passed on holds a control character (a
    NUL, a newline, an escape...): PostgreSQL's json cannot give every one back as text, so every
    policy reading it would fail with an error of its own; the call is refused with a clear one."""
    passed = {name: claims[name] for name in identity.claims if name in claims}
    for name, value in (("sub", subject), *passed.items()):
        if _control_in(value):
            raise UnsafeClaimError(name)
    role = mapped_role(identity, subject, claims)
    if role is None:
        return None
    return CallRole(
        role=role,
        claims=claims_json(identity, subject, claims),
        application_name=application_name(identity, subject),
    )
