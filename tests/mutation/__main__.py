"""`make mutate`: the hand checks a reviewer tries first, then mutmut over the guardrail modules.

    python -m tests.mutation hand        the hand checks only (what CI runs: a fixed sample)
    python -m tests.mutation mutmut      mutmut over every module of MODULES, with the table
    python -m tests.mutation             both
    python -m tests.mutation modules     print the guardrail modules, comma-separated (the Makefile's)

A hand check removes one defence from a copy of the tree and runs the tests that guard it: they must
fail. mutmut makes every small change it knows to the guardrail modules and runs the tests that cover
the changed function; a mutant that survives must be killed by a new test, or be listed, with the
reason it is equivalent, in docs/mutation.md. Prints to stdout (a developer's tool, not the server).
Exits 1 when a hand check survives, a module kills under 90 %, or a survivor is not listed.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FLOOR = 0.90
EQUIVALENTS_DOC = REPO / "docs" / "mutation.md"

# The guardrail modules, listed once: `only_mutate` of pyproject's [tool.mutmut] (mutmut reads it
# there). The Makefile's 100 % branch-coverage floor reads it through `modules` below, and MODULES
# must name the same modules (tests/unit/tooling/test_mutation_config.py).
GUARDRAIL_MODULES: tuple[str, ...] = tuple(
    tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["mutmut"]["only_mutate"]
)

# module -> the tests that guard it (unit and property layers: fast enough to run per mutant)
MODULES: dict[str, tuple[str, ...]] = {
    "mcp_suite/protocol/sanitize.py": (
        "tests/unit/protocol/test_sanitizer.py",
        "tests/unit/protocol/test_sanitizer_details.py",
        "tests/property/test_guard_props.py",
    ),
    "mcp_suite/tools/sql/engine/denylist.py": ("tests/unit/tools/sql/test_sql_policy.py",),
    "mcp_suite/runtime/limiter.py": (
        "tests/trio/test_limiter.py",
        "tests/regressions/test_limiter_queue_bounded.py",
    ),
    # who gets the next call slot or database thread: shares, turns, the fewest first, push-out
    "mcp_suite/turns.py": ("tests/trio/test_turns.py", "tests/trio/test_limiter.py"),
    "mcp_suite/tools/files/policy.py": ("tests/unit/tools/files/test_fs_policy.py",),
    # the PostgreSQL tests of the guard (tests/pg/test_sql_definers.py) are too slow to run per mutant
    "mcp_suite/tools/sql/engine/definers.py": ("tests/unit/tools/sql/test_definers_unit.py",),
    "mcp_suite/protocol/framing.py": (
        "tests/unit/protocol/test_framing.py",
        "tests/property/test_framing_props.py",
    ),
    "mcp_suite/protocol/jsonrpc.py": (
        "tests/unit/protocol/test_jsonrpc_guard.py",
        "tests/unit/protocol/test_jsonrpc_details.py",
        "tests/property/test_wire_props.py",
        "tests/property/test_guard_props.py",
        "tests/unit/protocol/test_untrusted_frame.py",
    ),
    # the canary property (tests/property/test_fs_property.py) is too slow to run per mutant
    "mcp_suite/tools/files/fdwalk.py": (
        "tests/unit/tools/files/test_fdwalk_faults.py",
        "tests/unit/tools/files/test_fs_attacks.py",
        "tests/unit/tools/files/test_fs_race.py",
        "tests/unit/tools/files/test_fs_list.py",
        "tests/unit/tools/files/test_fdwalk_edges.py",
    ),
    "mcp_suite/tools/sql/engine/policy/rewrite.py": (
        "tests/unit/tools/sql/test_sql_policy.py",
        "tests/unit/tools/sql/test_sql_policy_corpus.py",
        "tests/unit/tools/sql/test_sql_rewrite.py",
    ),
    "mcp_suite/protocol/core.py": (
        "tests/unit/protocol/test_session_core.py",
        "tests/unit/protocol/test_session_core_details.py",
        "tests/unit/protocol/test_session_core_talk.py",
        "tests/unit/protocol/test_session_core_offers.py",
        "tests/unit/protocol/test_untrusted_frame.py",
        "tests/unit/protocol/test_completion.py",
    ),
    "mcp_suite/tools/sql/engine/policy/refusals.py": (
        "tests/unit/tools/sql/test_sql_refusal_details.py",
        "tests/unit/tools/sql/test_sql_policy.py",
        "tests/unit/tools/sql/test_sql_policy_corpus.py",
        "tests/unit/tools/sql/test_sql_rewrite.py",
        "tests/property/test_sql_policy_properties.py",
        "tests/unit/tools/sql/test_sql_names_as_resolved.py",
        "tests/unit/tools/sql/test_sql_built_operands.py",
    ),
    "mcp_suite/tools/sql/engine/policy/__init__.py": (
        "tests/unit/tools/sql/test_sql_pipeline.py",
        "tests/unit/tools/sql/test_sql_refusal_details.py",
        "tests/unit/tools/sql/test_sql_policy.py",
        "tests/unit/tools/sql/test_sql_policy_corpus.py",
        "tests/unit/tools/sql/test_sql_rewrite.py",
        "tests/property/test_sql_policy_properties.py",
    ),
    "mcp_suite/tools/sql/engine/policy/postgres_walk.py": (
        "tests/unit/tools/sql/test_sql_postgres_walk.py",
        "tests/unit/tools/sql/test_sql_refusal_details.py",
        "tests/unit/tools/sql/test_sql_policy.py",
        "tests/unit/tools/sql/test_sql_policy_corpus.py",
        "tests/unit/tools/sql/test_sql_rewrite.py",
        "tests/property/test_sql_policy_properties.py",
        "tests/unit/tools/sql/test_sql_names_as_resolved.py",
        "tests/unit/tools/sql/test_sql_built_operands.py",
    ),
    "mcp_suite/tools/sql/engine/policy/catalogue.py": (
        "tests/unit/tools/sql/test_sql_catalogue.py",
        "tests/unit/tools/sql/test_sql_policy_corpus.py",
    ),
    "mcp_suite/tools/sql/engine/policy/sqlglot_walk.py": (
        "tests/unit/tools/sql/test_sql_sqlglot_walk.py",
        "tests/unit/tools/sql/test_sql_refusal_details.py",
        "tests/unit/tools/sql/test_sql_pipeline.py",
        "tests/unit/tools/sql/test_sql_policy.py",
        "tests/unit/tools/sql/test_sql_policy_corpus.py",
        "tests/unit/tools/sql/test_sql_rewrite.py",
        "tests/property/test_sql_policy_properties.py",
    ),
    # who may call what over HTTP: the claims of a verified token and the scope each tool needs
    "mcp_suite/protocol/authz.py": (
        "tests/unit/protocol/test_http_rules.py",
        "tests/trio/test_http_keys.py",
        "tests/unit/tools/sql/test_authz_sources.py",
    ),
    # the signature behind those claims: the issuer's key set, its bounds and refreshes, kept tokens
    "mcp_suite/runtime/http_auth.py": (
        "tests/trio/test_http_keys.py",
        "tests/unit/runtime/test_http_jwks.py",
    ),
    # every HTTP decision: statuses, sessions and their quotas, the scope check and its wording
    "mcp_suite/protocol/exchange.py": ("tests/unit/protocol/test_http_exchange.py",),
    # what a query may name: PostgreSQL's functions and types, and (on the role's catalogue) the others
    "mcp_suite/tools/sql/engine/policy/allowlist.py": ("tests/unit/tools/sql/test_sql_allowlist.py",),
    "mcp_suite/tools/sql/engine/names.py": ("tests/unit/tools/sql/test_sql_allowlist.py",),
    # what a query builds and hands to work PostgreSQL does not interrupt (issue 51)
    "mcp_suite/tools/sql/engine/policy/built.py": ("tests/unit/tools/sql/test_sql_built_operands.py",),
    # a curated tool's declaration: its keys, types, bounds, claim bindings and placeholders (issue 55)
    "mcp_suite/tools/sql/curated/policy.py": ("tests/unit/tools/sql/test_curated_declarations.py",),
}


@dataclass(frozen=True)
class HandCheck:
    """One defence removed by hand: `old` becomes `new` in `path`; `tests` must then fail."""

    name: str
    path: str
    old: str
    new: str
    tests: tuple[str, ...]


HAND_CHECKS = (
    HandCheck(
        "drop O_NOFOLLOW from the descriptor walk",
        "mcp_suite/tools/files/fdwalk.py",
        " | os.O_NOFOLLOW",
        "",
        ("tests/unit/tools/files/test_fs_attacks.py", "tests/unit/tools/files/test_fs_race.py"),
    ),
    HandCheck(
        "let the outer LIMIT pass ten times max_rows",
        "mcp_suite/tools/sql/engine/policy/__init__.py",
        "    cap = max_rows + 1\n",
        "    cap = 10 * (max_rows + 1)\n",
        ("tests/unit/tools/sql/test_sql_policy.py",),
    ),
    HandCheck(
        "let every function PostgreSQL ships through the allow-list",
        "mcp_suite/tools/sql/engine/policy/allowlist.py",
        '    if verdict == "allow" or (allow_catalogue and why in LIFTED_BY_CATALOGUE):',
        "    if True:",
        ("tests/unit/tools/sql/test_sql_allowlist.py",),
    ),
    HandCheck(
        "let every denied function through",
        "mcp_suite/tools/sql/engine/denylist.py",
        "    return reason_by_name(normalize_function_name(name), DENIED_FUNCTIONS, DENIED_PREFIXES)",
        "    return None",
        ("tests/unit/tools/sql/test_sql_policy.py", "tests/unit/tools/sql/test_sql_policy_corpus.py"),
    ),
    HandCheck(
        "let every catalogue read through",
        "mcp_suite/tools/sql/engine/policy/catalogue.py",
        "    for schema, name in sorted(relations):",
        "    return\n    for schema, name in sorted(relations):",
        ("tests/unit/tools/sql/test_sql_catalogue.py", "tests/unit/tools/sql/test_sql_policy_corpus.py"),
    ),
    HandCheck(
        "skip the start-up role audit",
        "mcp_suite/tools/sql/engine/engine.py",
        "    try:\n        findings = audit_role(dsn, settings, roles)",
        "    return []\n    try:\n        findings = audit_role(dsn, settings, roles)",
        ("tests/pg/test_sql_audit.py",),
    ),
    HandCheck(
        "drop READ ONLY from the call's transaction",
        "mcp_suite/tools/sql/engine/executor.py",
        '_BEGIN: Final = b"BEGIN READ ONLY"',
        '_BEGIN: Final = b"BEGIN"',
        ("tests/pg/test_sql_layers.py",),
    ),
    HandCheck(
        "skip the SECURITY DEFINER check at run time",
        "mcp_suite/tools/sql/engine/definers.py",
        "        catalogue = self._catalogue\n        if catalogue is None",
        "        return\n        catalogue = self._catalogue\n        if catalogue is None",
        ("tests/pg/test_sql_definers.py",),
    ),
    HandCheck(
        "send the rows of read_only_sql without the untrusted-data frame",
        "mcp_suite/tools/sql/read_only_sql/tool.py",
        "        untrusted=True,  # database values\n",
        "",
        ("tests/pg/test_sql_tool_frame.py",),
    ),
    HandCheck(
        "keep a boundary the data holds",
        "mcp_suite/protocol/untrusted.py",
        "        if boundary not in body:\n",
        "        if True:\n",
        ("tests/unit/protocol/test_untrusted_frame.py",),
    ),
    HandCheck(
        "let calls through while a re-audit refuses the role",
        "mcp_suite/tools/sql/engine/audit_gate.py",
        "        self._gate.check(role)\n",
        "",
        ("tests/pg/test_sql_reaudit.py",),
    ),
    HandCheck(
        "run a mapped caller's call as the login role (no role switch)",
        "mcp_suite/tools/sql/engine/executor.py",
        "            commands.append(_switch_role(role))",
        "            pass",
        ("tests/pg/test_sql_identity.py",),
    ),
)


def _say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def _copy_tree(into: Path) -> None:
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    for raw in filter(None, listed):
        source = REPO / raw.decode()
        if source.is_file():
            target = into / raw.decode()
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)


def run_hand_checks() -> bool:
    survived = 0
    for check in HAND_CHECKS:
        with tempfile.TemporaryDirectory(prefix="mcp-suite-hand-") as scratch:
            root = Path(scratch)
            _copy_tree(root)
            path = root / check.path
            text = path.read_text()
            if text.count(check.old) < 1:
                _say(f"STALE  {check.name}: {check.path} no longer holds the text to change")
                survived += 1
                continue
            path.write_text(text.replace(check.old, check.new))
            env = {k: v for k, v in os.environ.items() if not k.startswith("COVERAGE")}
            proc = subprocess.run(
                [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-x", "-q", *check.tests],
                cwd=root,
                env=env,
                capture_output=True,
                text=True,
                check=False,
            )
            if proc.returncode == 0:
                _say(f"SURVIVED  {check.name}: {' '.join(check.tests)} still pass")
                survived += 1
            else:
                failed = re.findall(r"^FAILED (\S+)", proc.stdout, flags=re.M)
                _say(f"killed    {check.name}: {len(failed) or 'the run'} failing ({(failed or ['-'])[0]})")
    _say(f"hand checks: {len(HAND_CHECKS) - survived} of {len(HAND_CHECKS)} killed")
    return survived == 0


def _equivalents() -> set[str]:
    """Mutant names listed in docs/mutation.md (first column of its table) as equivalent."""
    if not EQUIVALENTS_DOC.is_file():
        return set()
    return set(re.findall(r"^\| `([^`]+)` \|", EQUIVALENTS_DOC.read_text(), flags=re.M))


def module_of(mutant: str) -> str | None:
    """The module of MODULES a mutant's name (`package.module.x_function__mutmut_N`) belongs to."""
    dotted = mutant.rpartition(".")[0]
    return next((m for m in MODULES if m[:-3].replace("/", ".").removesuffix(".__init__") == dotted), None)


def run_mutmut() -> bool:
    mutmut = Path(sys.executable).with_name("mutmut")
    env = {**os.environ, "HYPOTHESIS_PROFILE": "mutation"}
    shutil.rmtree(REPO / "mutants", ignore_errors=True)
    subprocess.run([str(mutmut), "run"], cwd=REPO, env=env, check=False, capture_output=True)
    listed = subprocess.run(
        [str(mutmut), "results", "--all", "true"], cwd=REPO, capture_output=True, text=True, check=False
    ).stdout
    outcomes: dict[str, Counter[str]] = {module: Counter() for module in MODULES}
    unlisted: list[str] = []
    equivalent = _equivalents()
    for name, status in re.findall(r"^\s*(\S+): (\S+)$", listed, flags=re.M):
        module = module_of(name)
        if module is None:
            continue
        if status in ("killed", "timeout"):
            outcomes[module]["killed"] += 1
        elif name in equivalent:
            outcomes[module]["equivalent"] += 1
        else:
            outcomes[module]["survived"] += 1
            unlisted.append(f"{name}: {status}")
    ok = True
    width = max(len(module) for module in MODULES)
    _say(f"{'module':<{width}} {'mutants':>8} {'killed':>7} {'equiv.':>7} {'survived':>9} {'kill rate':>10}")
    for module, counts in outcomes.items():
        total = sum(counts.values())
        rate = counts["killed"] / total if total else 0.0
        ok &= total > 0 and rate >= FLOOR and counts["survived"] == 0
        _say(
            f"{module:<{width}} {total:>8} {counts['killed']:>7} {counts['equivalent']:>7}"
            f" {counts['survived']:>9} {rate:>9.1%}"
        )
    for line in unlisted:
        _say(f"  not killed, not listed as equivalent: {line}")
    _say(f"floor: {FLOOR:.0%} killed per module, and every survivor listed in docs/mutation.md")
    return ok


def main(argv: list[str]) -> int:
    which = argv[0] if argv else "all"
    if which == "modules":
        _say(",".join(GUARDRAIL_MODULES))
        return 0
    ok = True
    if which in ("all", "hand"):
        ok &= run_hand_checks()
    if which in ("all", "mutmut"):
        ok &= run_mutmut()
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
