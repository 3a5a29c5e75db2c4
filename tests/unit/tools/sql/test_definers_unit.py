"""The run-time SECURITY DEFINER check without a database: `DefinerGuard.check` reads the catalogue
through its `conn` parameter, so a small connection that answers `CATALOGUE_SQL` with chosen rows
drives every branch (the cache, its expiry, its refresh, names it does not hold, acceptance, the
refusal's exact wording).
`tests/pg/test_sql_definers.py` proves the same guard against real functions in PostgreSQL.
"""

from __future__ import annotations

from collections.abc import Iterable

import pytest

from mcp_suite.problems import QueryViolationError
from mcp_suite.tools.sql.engine.definers import CATALOGUE_SQL, DefinerGuard
from tests.support.fakes import Clock, FakeCatalogue

Row = tuple[str, str, str | None, str | None]


def _definer(name: str, qualified: str, arguments: str = "") -> Row:
    return ("definer", name, qualified, arguments)


def _definer_operator(name: str, qualified: str, arguments: str) -> Row:
    return ("definer-operator", name, qualified, arguments)


PLAIN: list[Row] = []  # a catalogue without a single SECURITY DEFINER function
EXPORT = [_definer("page_export", "docs.page_export")]


def _refusal(
    guard: DefinerGuard, db: FakeCatalogue[Row], functions: Iterable[str], operators: Iterable[str] = ()
) -> str:
    with pytest.raises(QueryViolationError) as caught:
        guard.check(db.conn, frozenset(functions), frozenset(operators))
    problem = caught.value
    assert problem.invalid_params == ("sql",)
    assert set(problem.metadata) == {"rule", "function"}
    assert problem.metadata["rule"] == "definer-function"
    return problem.detail


def _detail(called: str, definer: str) -> str:
    return (
        f"The query calls {called}, and {definer} is a SECURITY DEFINER function: it runs with its "
        "owner's privileges, so what it does cannot be checked. Remove it from the query."
    )


def test_a_statement_naming_no_definer_passes_and_reads_the_catalogue_once() -> None:
    db = FakeCatalogue(CATALOGUE_SQL, PLAIN + EXPORT)
    guard = DefinerGuard(cache_s=60, clock=Clock())
    guard.check(db.conn, frozenset({"lower"}), frozenset({"+"}))
    guard.check(db.conn, frozenset({"upper", "lower"}), frozenset({"||"}))
    guard.check(db.conn, frozenset(), frozenset())
    assert db.reads == 1
    stats = guard.statistics()
    assert (stats.catalogue_reads, stats.refused) == (1, 0)


def test_a_definer_function_is_refused_with_its_qualified_name_and_arguments() -> None:
    db = FakeCatalogue(CATALOGUE_SQL, [*PLAIN, _definer("page_export", "docs.page_export", "integer")])
    guard = DefinerGuard(cache_s=60, clock=Clock())
    detail = _refusal(guard, db, {"lower", "page_export"})
    assert detail == _detail("page_export()", "docs.page_export(integer)")
    assert guard.statistics().refused == 1


def test_the_refusal_metadata_names_the_function_and_the_counter_counts_each_refusal() -> None:
    db = FakeCatalogue(CATALOGUE_SQL, EXPORT)
    guard = DefinerGuard(cache_s=60, clock=Clock())
    for expected in (1, 2, 3):
        with pytest.raises(QueryViolationError) as caught:
            guard.check(db.conn, frozenset({"page_export"}), frozenset())
        assert caught.value.metadata == {"rule": "definer-function", "function": "docs.page_export()"}
        assert guard.statistics() == type(guard.statistics())(catalogue_reads=1, refused=expected)


def test_of_two_definers_named_the_first_in_sorted_order_is_the_one_reported() -> None:
    rows = [
        _definer("zeta", "docs.zeta"),
        _definer("alpha", "docs.alpha"),
    ]
    guard = DefinerGuard(cache_s=60, clock=Clock())
    assert _refusal(guard, FakeCatalogue(CATALOGUE_SQL, rows), {"zeta", "alpha"}) == _detail(
        "alpha()", "docs.alpha()"
    )


def test_a_function_definer_is_reported_before_an_operator_definer() -> None:
    rows = [
        _definer("page_export", "docs.page_export"),
        _definer_operator("@@@", "docs.match", "text, text"),
    ]
    guard = DefinerGuard(cache_s=60, clock=Clock())
    detail = _refusal(guard, FakeCatalogue(CATALOGUE_SQL, rows), {"page_export"}, {"@@@"})
    assert detail == _detail("page_export()", "docs.page_export()")


def test_an_operator_whose_function_is_a_definer_is_refused_as_an_operator() -> None:
    rows = [*PLAIN, _definer_operator("@@@", "docs.match", "text, text")]
    guard = DefinerGuard(cache_s=60, clock=Clock())
    db = FakeCatalogue(CATALOGUE_SQL, rows)
    detail = _refusal(guard, db, {"lower"}, {"+", "@@@"})
    assert detail == _detail("the operator @@@", "docs.match(text, text)")
    guard.check(db.conn, frozenset({"lower"}), frozenset({"+"}))  # the other operators still pass
    assert guard.statistics().refused == 1


def test_the_counter_counts_operator_refusals_too() -> None:
    rows = [
        EXPORT[0],
        _definer_operator("@@@", "docs.match", "text"),
    ]
    guard = DefinerGuard(cache_s=60, clock=Clock())
    db = FakeCatalogue(CATALOGUE_SQL, rows)
    for expected in (1, 2):
        _refusal(guard, db, set(), {"@@@"})
        assert guard.statistics().refused == expected
    _refusal(guard, db, {"page_export"})
    _refusal(guard, db, set(), {"@@@"})
    assert guard.statistics().refused == 4


def test_of_two_definer_operators_named_the_first_in_sorted_order_is_reported() -> None:
    rows = [
        _definer_operator("~~~", "docs.tilde", "text"),
        _definer_operator("!!!", "docs.bang", "text"),
    ]
    guard = DefinerGuard(cache_s=60, clock=Clock())
    assert _refusal(guard, FakeCatalogue(CATALOGUE_SQL, rows), set(), {"~~~", "!!!"}) == _detail(
        "the operator !!!", "docs.bang(text)"
    )


def test_a_function_name_is_not_an_operator_name_nor_the_other_way_round() -> None:
    rows = [
        _definer("page_export", "docs.page_export"),
        _definer_operator("@@@", "docs.match", "text"),
    ]
    guard = DefinerGuard(cache_s=60, clock=Clock())
    db = FakeCatalogue(CATALOGUE_SQL, rows)
    guard.check(db.conn, frozenset({"@@@"}), frozenset({"page_export"}))
    assert guard.statistics().refused == 0


def test_a_catalogue_with_only_operator_definers_still_refuses() -> None:
    rows = [_definer_operator("@@@", "docs.match", "text")]
    guard = DefinerGuard(cache_s=60, clock=Clock())
    assert _refusal(guard, FakeCatalogue(CATALOGUE_SQL, rows), set(), {"@@@"}) == _detail(
        "the operator @@@", "docs.match(text)"
    )


def test_function_names_are_case_folded_and_operator_names_are_not() -> None:
    rows = [_definer("Page_Export", "Docs.Page_Export", "text")]
    guard = DefinerGuard(cache_s=60, clock=Clock())
    db = FakeCatalogue(CATALOGUE_SQL, rows)
    assert _refusal(guard, db, {"page_export"}) == _detail("page_export()", "Docs.Page_Export(text)")
    assert db.reads == 1  # "page_export" was known, as the case-folded "Page_Export"


def test_the_first_overload_of_a_name_is_the_one_reported() -> None:
    rows = [
        _definer("page_export", "docs.page_export", "integer"),
        _definer("PAGE_EXPORT", "other.page_export", "text"),
        _definer_operator("@@@", "docs.first", "text"),
        _definer_operator("@@@", "docs.second", "integer"),
    ]
    guard = DefinerGuard(cache_s=60, clock=Clock())
    db = FakeCatalogue(CATALOGUE_SQL, rows)
    assert _refusal(guard, db, {"page_export"}) == _detail("page_export()", "docs.page_export(integer)")
    assert _refusal(guard, db, set(), {"@@@"}) == _detail("the operator @@@", "docs.first(text)")


def test_an_accepted_definer_passes_and_another_overload_elsewhere_does_not() -> None:
    rows = [
        _definer("page_export", "docs.page_export"),
        _definer("page_count", "docs.page_count"),
        _definer("page_count", "audit.page_count", "integer"),
        _definer_operator("@@@", "docs.match", "text"),
    ]
    guard = DefinerGuard(
        accepted=["docs.page_export", "docs.page_count", "docs.match"], cache_s=60, clock=Clock()
    )
    db = FakeCatalogue(CATALOGUE_SQL, rows)
    guard.check(db.conn, frozenset({"page_export"}), frozenset({"@@@"}))
    assert _refusal(guard, db, {"page_count"}) == _detail("page_count()", "audit.page_count(integer)")


def test_acceptance_is_by_qualified_name_not_bare_name() -> None:
    guard = DefinerGuard(accepted=["page_export"], cache_s=60, clock=Clock())
    assert _refusal(guard, FakeCatalogue(CATALOGUE_SQL, EXPORT), {"page_export"}) == _detail(
        "page_export()", "docs.page_export()"
    )


def test_with_no_acceptance_given_every_definer_is_refused() -> None:
    guard = DefinerGuard(cache_s=60)  # the defaults: nothing accepted, the monotonic clock
    assert _refusal(guard, FakeCatalogue(CATALOGUE_SQL, EXPORT), {"page_export"}) == _detail(
        "page_export()", "docs.page_export()"
    )


def test_the_cache_is_trusted_until_it_expires_and_read_again_at_expiry() -> None:
    clock = Clock()
    db = FakeCatalogue(CATALOGUE_SQL, PLAIN)
    guard = DefinerGuard(cache_s=30, clock=clock)
    guard.check(db.conn, frozenset({"lower"}), frozenset())
    clock.now += 29.5
    guard.check(db.conn, frozenset({"lower"}), frozenset())
    assert db.reads == 1
    clock.now = 1030.0  # exactly `cache_s` after the read
    guard.check(db.conn, frozenset({"lower"}), frozenset())
    assert db.reads == 2
    assert guard.statistics().catalogue_reads == 2
    clock.now += 29.5  # the new read is trusted for `cache_s` again
    guard.check(db.conn, frozenset({"lower"}), frozenset())
    assert db.reads == 2


def test_a_definer_created_after_the_read_is_refused_once_the_cache_expires() -> None:
    clock = Clock()
    db = FakeCatalogue(CATALOGUE_SQL, PLAIN)
    guard = DefinerGuard(cache_s=30, clock=clock)
    guard.check(db.conn, frozenset({"page_export"}), frozenset())
    db.rows.append(_definer("page_export", "docs.page_export"))  # CREATE OR REPLACE ... SECURITY DEFINER
    guard.check(db.conn, frozenset({"page_export"}), frozenset())  # still trusted: the old answer
    clock.now += 30
    assert _refusal(guard, db, {"page_export"}) == _detail("page_export()", "docs.page_export()")


def test_a_function_name_new_to_the_cache_does_not_read_the_catalogue_until_a_refresh() -> None:
    db = FakeCatalogue(CATALOGUE_SQL, PLAIN)
    guard = DefinerGuard(cache_s=3600, clock=Clock())
    guard.check(db.conn, frozenset({"lower"}), frozenset())
    db.rows += EXPORT  # a definer created since the last read
    guard.check(db.conn, frozenset({"lower", "page_export"}), frozenset())  # negative cache: passes
    assert db.reads == 1
    guard.refresh(db.conn)  # what each re-audit does, on its own connection
    assert _refusal(guard, db, {"lower", "page_export"}) == _detail("page_export()", "docs.page_export()")
    assert db.reads == 2


def test_an_operator_name_new_to_the_cache_does_not_read_the_catalogue_until_a_refresh() -> None:
    db = FakeCatalogue(CATALOGUE_SQL, PLAIN)
    guard = DefinerGuard(cache_s=3600, clock=Clock())
    guard.check(db.conn, frozenset(), frozenset({"+"}))
    db.rows += [_definer_operator("@@@", "docs.match", "text")]
    guard.check(db.conn, frozenset(), frozenset({"+", "@@@"}))
    assert db.reads == 1
    guard.refresh(db.conn)
    assert _refusal(guard, db, set(), {"+", "@@@"}) == _detail("the operator @@@", "docs.match(text)")
    assert db.reads == 2


def test_a_refresh_restarts_the_caches_time() -> None:
    clock = Clock()
    db = FakeCatalogue(CATALOGUE_SQL, PLAIN)
    guard = DefinerGuard(cache_s=30, clock=clock)
    guard.check(db.conn, frozenset({"lower"}), frozenset())
    clock.now += 20
    guard.refresh(db.conn)
    clock.now += 20  # 40 s after the first read, 20 s after the refresh: still fresh
    guard.check(db.conn, frozenset({"lower"}), frozenset())
    assert db.reads == 2


def test_names_that_no_catalogue_holds_never_cause_a_read() -> None:
    # The cost the issue measured (373 -> 150 calls/s): an unknown name forced a read on every call.
    db = FakeCatalogue(CATALOGUE_SQL, PLAIN + EXPORT)
    guard = DefinerGuard(cache_s=3600, clock=Clock())
    for round_ in range(100):
        guard.check(db.conn, frozenset({f"no_such_function_{round_}"}), frozenset({f"@{round_}"}))
    assert db.reads == 1  # PostgreSQL itself will refuse them; the guard does not ask again


def test_long_names_are_cut_in_the_detail_and_the_metadata() -> None:
    name = "f" * 100
    qualified = "docs." + name
    arguments = ", ".join(["integer"] * 10)
    guard = DefinerGuard(cache_s=60, clock=Clock())
    db = FakeCatalogue(CATALOGUE_SQL, [_definer(name, qualified, arguments)])
    with pytest.raises(QueryViolationError) as caught:
        guard.check(db.conn, frozenset({name}), frozenset())
    called = f"{name}()"[:79] + "…"
    definer = f"{qualified}({arguments})"[:119] + "…"
    assert caught.value.detail == _detail(called, definer)
    assert caught.value.metadata["function"] == definer


def test_names_at_the_echo_limits_are_shown_whole() -> None:
    name = "g" * 78  # "g…g()" is exactly 80 characters
    qualified = "docs." + name
    arguments = "x" * (120 - len(qualified) - 2)
    guard = DefinerGuard(cache_s=60, clock=Clock())
    db = FakeCatalogue(CATALOGUE_SQL, [_definer(name, qualified, arguments)])
    with pytest.raises(QueryViolationError) as caught:
        guard.check(db.conn, frozenset({name}), frozenset())
    assert caught.value.detail == _detail(f"{name}()", f"{qualified}({arguments})")
    assert caught.value.metadata["function"] == f"{qualified}({arguments})"
