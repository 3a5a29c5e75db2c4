"""A refusal by a rule is a fact of its problem class (`ProblemError.refusal`), and the rule that
refused is read off the problem (`refused_by`): the metrics name no problem type of their own."""

from __future__ import annotations

import mcp_suite.problems as problems
from mcp_suite.problems import (
    AccessDeniedError,
    IdentityChangedError,
    InsufficientScopeError,
    InvalidArgumentsError,
    ProblemError,
    QueryViolationError,
    ResourceAccessDeniedError,
    RoleRefusedError,
)
from mcp_suite.tools.sql.engine.policy import refusals


def _every_problem_class() -> set[type[ProblemError]]:
    found: set[type[ProblemError]] = set()
    todo = [ProblemError]
    while todo:
        cls = todo.pop()
        for sub in cls.__subclasses__():
            if sub not in found:
                found.add(sub)
                todo.append(sub)
    return found


def test_the_refusals_by_a_rule_are_the_four_problem_types_and_their_subclasses() -> None:
    refusing = {cls for cls in _every_problem_class() if cls.refusal}
    assert {cls.slug for cls in refusing} == {
        "query-violation",
        "access-denied",
        "role-refused",
        "insufficient-scope",
    }
    assert {
        AccessDeniedError,
        ResourceAccessDeniedError,
        QueryViolationError,
        IdentityChangedError,
        RoleRefusedError,
        InsufficientScopeError,
    } <= refusing
    assert not ProblemError.refusal
    assert problems.InvalidArgumentsError.refusal is False


def test_a_refusal_names_the_rule_its_raiser_gave_else_its_problem_type() -> None:
    assert QueryViolationError("no", metadata={"rule": "catalogue"}).refused_by == "catalogue"
    assert AccessDeniedError("no").refused_by == "access-denied"
    assert RoleRefusedError("no", metadata={"rule": 7}).refused_by == "role-refused"


def test_a_problem_that_is_no_refusal_names_no_rule_even_with_a_rule_in_its_metadata() -> None:
    assert InvalidArgumentsError("bad", metadata={"rule": "too-long"}).refused_by is None
    assert refusals.too_long(10, 5).refused_by is None


def test_each_policy_violation_is_refused_by_the_rule_it_is_worded_with() -> None:
    problem = refusals.violation("The query writes.", "data-modifying")
    assert problem.refusal
    assert problem.refused_by == "data-modifying"
