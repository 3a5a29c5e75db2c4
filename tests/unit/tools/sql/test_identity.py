"""The identity map (issue 42), without a database: a source's `[sources.identity]` table read and
validated (every problem named by key, never a value), the role a caller maps to (first match wins,
then the default, else refused), the claims passed on and the `application_name` that names the
caller."""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import json
from pathlib import Path
from typing import Any

import pytest

from mcp_suite.settings import Settings, SettingsError
from mcp_suite.tools.sql.engine.identity import (
    APPLICATION_PREFIX,
    PATTERN_CHOICES_MAX,
    SUBJECT_PATTERN_MAX_CHARS,
    IdentityMap,
    UnsafeClaimError,
    application_name,
    call_role,
    claims_json,
    mapped_role,
    parse_identity,
)
from mcp_suite.tools.sql.sources import load_sources


def _parse(table: object) -> tuple[IdentityMap | None, list[str]]:
    problems: list[str] = []
    return parse_identity(table, "f: sources[0] (a): identity", problems), problems


def _map(**table: Any) -> IdentityMap:
    identity, problems = _parse(table)
    assert problems == []
    assert identity is not None
    return identity


RULES = [
    {"group": "analysts", "role": "mcp_analyst"},
    {"subject": "erin", "role": "mcp_erin"},
    {"subject_pattern": "svc-[a-z]+", "role": "mcp_service"},
]


def test_the_first_matching_rule_names_the_role_then_the_default() -> None:
    identity = _map(rules=RULES, default_role="mcp_guest")
    assert mapped_role(identity, "erin", {"groups": ["analysts"]}) == "mcp_analyst"  # first wins
    assert mapped_role(identity, "erin", {"roles": ["other"]}) == "mcp_erin"
    assert mapped_role(identity, "frank", {"roles": ["analysts"]}) == "mcp_analyst"  # roles claim too
    assert mapped_role(identity, "svc-backup", {}) == "mcp_service"
    assert mapped_role(identity, "svc-backup2", {}) == "mcp_guest"  # a full match only
    assert mapped_role(identity, "xsvc-a", {}) == "mcp_guest"
    assert identity.roles == ("mcp_analyst", "mcp_erin", "mcp_service", "mcp_guest")


def test_without_a_default_a_caller_no_rule_maps_is_refused() -> None:
    identity = _map(rules=RULES)
    assert mapped_role(identity, "frank", {"groups": "analysts"}) is None  # not a list: no group
    assert mapped_role(identity, "frank", {"groups": [1, "other"]}) is None
    assert call_role(identity, "frank", {}) is None
    assert identity.roles == ("mcp_analyst", "mcp_erin", "mcp_service")


def test_a_default_role_alone_maps_everyone_and_is_named_once() -> None:
    identity = _map(rules=[{"group": "a", "role": "r"}], default_role="r")
    assert identity.roles == ("r",)
    assert mapped_role(_map(default_role="guest"), "anyone", {}) == "guest"


def test_the_claims_passed_on_are_the_subject_and_those_the_map_names() -> None:
    identity = _map(default_role="r", claims=["department", "tenant", "department"])
    assert identity.claims == ("department", "tenant")
    text = claims_json(identity, "erin", {"department": "sales", "groups": ["x"], "sub": "forged"})
    assert json.loads(text) == {"sub": "erin", "department": "sales"}
    assert text == '{"department":"sales","sub":"erin"}'  # compact, sorted: the same every call
    assert claims_json(identity, "é", {}).isascii()


def test_application_name_carries_the_subject_or_its_keyed_hash() -> None:
    plain = _map(default_role="r")
    assert application_name(plain, "erin@example.com") == "mcp-suite/erin@example.com"
    personal = _map(default_role="r", personal_subject=True)
    key = b"k" * 32
    keyed = dataclasses.replace(personal, subject_key=key)
    digest = "~" + hmac.new(key, b"erin@example.com", hashlib.sha256).hexdigest()[:16]
    assert application_name(keyed, "erin@example.com") == APPLICATION_PREFIX + digest
    # Not the plain SHA-256 a list of staff addresses would reverse, and without a key file each
    # map's key is random: the hash tells callers apart, it names no one.
    unkeyed = "~" + hashlib.sha256(b"erin@example.com").hexdigest()[:16]
    assert application_name(personal, "erin@example.com") != APPLICATION_PREFIX + unkeyed
    other = _map(default_role="r", personal_subject=True)
    assert application_name(other, "erin@example.com") != application_name(personal, "erin@example.com")
    assert application_name(personal, "erin@example.com") == application_name(personal, "erin@example.com")
    # Too long for PostgreSQL's 63 bytes: hashed.
    for subject in ("x" * 60, "é" * 30):
        name = application_name(plain, subject)
        assert name.startswith("mcp-suite/~")
        assert len(name.encode()) <= 63
    assert len(application_name(plain, "x" * 53)) == 63  # the longest shown whole


@pytest.mark.parametrize(
    ("subject", "shown"),
    [
        ("erin ", '"erin "'),  # spaces at an end: quoted, never shown as "erin"
        (" erin", '" erin"'),
        ("a\nb", '"a\\nb"'),
        ("a\x00b", '"a\\u0000b"'),
        ("\u00e9rin", '"\\u00e9rin"'),
        ("~abc", '"~abc"'),  # would read as a hash
        ('"erin"', '"\\"erin\\""'),  # would read as quoted
        ("e r i n", "e r i n"),  # spaces inside are plain
    ],
)
def test_application_name_is_printable_and_reads_one_way(subject: str, shown: str) -> None:
    name = application_name(_map(default_role="r"), subject)
    assert name == APPLICATION_PREFIX + shown
    assert all(" " <= c <= "~" for c in name)
    assert json.loads(shown) == subject if shown.startswith('"') else shown == subject


def test_the_group_claims_can_be_nested_or_named_with_a_colon() -> None:
    keycloak = _map(rules=[{"group": "analysts", "role": "r"}], group_claims=["realm_access.roles"])
    assert keycloak.group_claims == (("realm_access", "roles"),)
    assert mapped_role(keycloak, "ann", {"realm_access": {"roles": ["analysts"]}}) == "r"
    assert mapped_role(keycloak, "ann", {"groups": ["analysts"]}) is None  # the default paths replaced
    assert mapped_role(keycloak, "ann", {"realm_access": ["analysts"]}) is None
    assert mapped_role(keycloak, "ann", {"realm_access": {"roles": "analysts"}}) is None
    cognito = _map(rules=[{"group": "analysts", "role": "r"}], group_claims=["cognito:groups", "groups"])
    assert mapped_role(cognito, "ann", {"cognito:groups": ["analysts"]}) == "r"
    assert mapped_role(cognito, "ann", {"groups": ["analysts"]}) == "r"
    dotted = _map(rules=[{"group": "a", "role": "r"}], group_claims=[["https://example.com/groups"]])
    assert mapped_role(dotted, "ann", {"https://example.com/groups": ["a"]}) == "r"
    assert _map(default_role="r").group_claims == (("groups",), ("roles",))


@pytest.mark.parametrize(
    "value",
    ["groups", [], ["a"] * 9, [""], ["a..b"], [["a", 1]], ["a.b.c.d.e"], ["x" * 129], ["a\x00"], [3]],
)
def test_group_claims_that_are_not_claim_paths_are_named(value: object) -> None:
    identity, problems = _parse({"default_role": "r", "group_claims": value})
    assert identity is None
    assert problems == [
        "f: sources[0] (a): identity: group_claims: a list of 1 to 8 claim paths, each a name or dotted "
        "names (realm_access.roles), or an array of 1 to 4 names"
    ]


@pytest.mark.parametrize(
    ("subject", "claims", "named"),
    [
        ("a\x00b", {}, "sub"),
        ("ann\n", {}, "sub"),
        ("ann", {"team": "north\x00"}, "team"),
        ("ann", {"team": ["ok", "b\x1b[2J"]}, "team"),
        ("ann", {"team": {"k\x7f": "v"}}, "team"),
        ("ann", {"team": {"k": "\x85"}}, "team"),
    ],
)
def test_a_control_character_in_a_claim_passed_on_refuses_the_call_naming_the_claim(
    subject: str, claims: dict[str, Any], named: str
) -> None:
    identity = _map(default_role="r", claims=["team"])
    with pytest.raises(UnsafeClaimError) as caught:
        call_role(identity, subject, claims)
    assert caught.value.args == (named,)


def test_a_control_character_in_a_claim_not_passed_on_is_left_alone() -> None:
    identity = _map(default_role="r", claims=["team"])
    role = call_role(identity, "ann", {"other": "x\x00", "team": "t\u00e9am"})
    assert role is not None
    assert json.loads(role.claims) == {"sub": "ann", "team": "t\u00e9am"}


def test_call_role_is_the_role_the_claims_and_the_application_name() -> None:
    identity = _map(rules=RULES, claims=["department"])
    role = call_role(identity, "erin", {"department": "ops"})
    assert role is not None
    assert (role.role, role.application_name) == ("mcp_erin", "mcp-suite/erin")
    assert json.loads(role.claims) == {"sub": "erin", "department": "ops"}


@pytest.mark.parametrize(
    ("table", "said"),
    [
        ("not a table", "a table ([sources.identity])"),
        ({}, "rules: no rule and no default_role"),
        ({"rules": [], "role": "x"}, "role: unknown key"),
        ({"rules": {"group": "a"}}, "rules: an array of tables"),
        ({"rules": ["x"]}, "rules[0]: a table with a role"),
        ({"rules": [{"group": "a"}]}, "rules[0]: role: required"),
        ({"rules": [{"group": "a", "role": "x" * 64}]}, "rules[0]: role: required"),
        ({"rules": [{"group": "a", "role": "r\x00"}]}, "rules[0]: role: required"),
        ({"rules": [{"group": "a", "subject": "b", "role": "r"}]}, "rules[0]: exactly one of"),
        ({"rules": [{"role": "r"}]}, "rules[0]: exactly one of"),
        ({"rules": [{"group": "a", "role": "r", "when": 1}]}, "rules[0]: when: unknown key"),
        ({"rules": [{"group": "", "role": "r"}]}, "rules[0]: group: a non-empty string"),
        ({"rules": [{"subject": 3, "role": "r"}]}, "rules[0]: subject: a non-empty string"),
        ({"rules": [{"subject_pattern": "(", "role": "r"}]}, "rules[0]: subject_pattern: not a regular"),
        ({"default_role": ""}, "default_role: a role name"),
        ({"default_role": "r", "claims": "department"}, "claims: a list of claim names"),
        ({"default_role": "r", "claims": ["bad name"]}, "claims: a list of claim names"),
        ({"default_role": "r", "claims": ["sub", "exp"]}, "claims: exp, sub: passed on already"),
        ({"default_role": "r", "personal_subject": "yes"}, "personal_subject: true or false"),
    ],
)
def test_every_problem_of_the_table_is_named_by_its_key(table: object, said: str) -> None:
    identity, problems = _parse(table)
    assert identity is None
    assert any(said in p for p in problems), problems
    assert all(p.startswith("f: sources[0] (a): identity: ") for p in problems)


def test_the_configuration_file_gives_a_source_its_identity_map(tmp_path: Path) -> None:
    path = tmp_path / "sources.toml"
    path.write_text(
        "[[sources]]\nname='a'\ndescription='d'\ndsn='dbname=a'\n"
        "[sources.identity]\ndefault_role = 'guest'\nclaims = ['team']\npersonal_subject = true\n"
        "[[sources.identity.rules]]\ngroup = 'analysts'\nrole = 'mcp_analyst'\n"
        "[[sources]]\nname='b'\ndescription='d'\ndsn='dbname=b'\n"
    )
    first, second = load_sources(Settings(config_file=path), {})
    assert first.identity is not None
    assert first.identity.roles == ("mcp_analyst", "guest")
    assert (first.identity.claims, first.identity.personal_subject) == (("team",), True)
    assert second.identity is None


def test_a_bad_identity_map_stops_the_start_naming_the_file_source_and_key(tmp_path: Path) -> None:
    path = tmp_path / "sources.toml"
    path.write_text(
        "[[sources]]\nname='a'\ndescription='d'\ndsn='dbname=a'\n"
        "[[sources.identity.rules]]\nsubject_pattern = '[z'\nrole = 'r'\n"
    )
    with pytest.raises(SettingsError) as caught:
        load_sources(Settings(config_file=path), {})
    assert f"{path}: source 1 (a): identity: rules[0]: subject_pattern: not a regular expression" in str(
        caught.value
    )
    assert "[z" not in str(caught.value)


@pytest.mark.parametrize(
    ("pattern", "said"),
    [
        ("(a+)+$", "nested quantifiers"),
        ("^(\\w+\\s?)*$", "nested quantifiers"),
        ("(a|aa)*b", "an alternation inside a quantified group"),
        ("(x+x+)+y", "nested quantifiers"),
        ("(.*)\\1", "a backreference"),
        ("(a)?(?(1)b|c)", "a conditional group"),
        ("(?=svc)svc-.*", "a lookaround"),
        ("(?<!x)svc", "a lookaround"),
        (".+@.+\\..+", "too many quantifiers"),
        ("a?" * 20, "too many quantifiers"),
    ],
)
def test_a_subject_pattern_whose_matching_has_no_small_bound_is_refused_at_load(
    pattern: str, said: str
) -> None:
    identity, problems = _parse({"rules": [{"subject_pattern": pattern, "role": "r"}]})
    assert identity is None
    assert any("rules[0]: subject_pattern: " in p and said in p for p in problems), problems
    assert not any(pattern in p for p in problems)  # the file's text is not echoed


@pytest.mark.parametrize(
    "pattern",
    [
        "svc-[a-z]+",
        "[a-z]+\\.[a-z]+@example\\.com",
        ".*@example\\.com",
        "auth0\\|[0-9a-f]{24}",
        "(?i)[a-z0-9._%+-]+@(?:sales|support)\\.example\\.com",
        "(?:team-a|team-b)-user-\\d+",
        "(?:ab)+",
    ],
)
def test_the_patterns_operators_write_are_accepted(pattern: str) -> None:
    identity, problems = _parse({"rules": [{"subject_pattern": pattern, "role": "r"}]})
    assert problems == []
    assert identity is not None


def test_a_subject_longer_than_the_bound_never_matches_a_pattern() -> None:
    identity, _ = _parse({"rules": [{"subject_pattern": "svc-.*", "role": "r"}], "default_role": "guest"})
    assert identity is not None
    near = "svc-" + "x" * (SUBJECT_PATTERN_MAX_CHARS - 4)
    assert mapped_role(identity, near, {}) == "r"
    assert mapped_role(identity, near + "x", {}) == "guest"


def test_the_accepted_worst_case_is_within_the_bound_the_rule_states() -> None:
    # Two unbounded quantifiers over the longest subject: the most the rule lets through.
    assert (SUBJECT_PATTERN_MAX_CHARS + 1) ** 2 <= PATTERN_CHOICES_MAX < (SUBJECT_PATTERN_MAX_CHARS + 1) ** 3
