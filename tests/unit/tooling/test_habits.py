"""The habits that keep forks honest: the CI workflow is read-only and pinned; pre-commit = make lint."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml  # type: ignore[import-untyped]  # PyYAML ships no stubs

REPO = Path(__file__).resolve().parents[3]
PINNED = re.compile(r"^[\w.-]+/[\w.-]+@[0-9a-f]{40}$")


def _load(relative: str) -> Any:
    return yaml.safe_load((REPO / relative).read_text())


def test_the_workflow_token_can_only_read() -> None:
    workflow = _load(".github/workflows/ci.yml")
    assert workflow["permissions"] == {"contents": "read"}
    for job in workflow["jobs"].values():
        assert job.get("permissions", {"contents": "read"}) == {"contents": "read"}


def test_every_action_in_the_workflow_is_pinned_to_a_commit_hash() -> None:
    workflow = _load(".github/workflows/ci.yml")
    uses = [step["uses"] for job in workflow["jobs"].values() for step in job["steps"] if "uses" in step]
    assert uses
    assert [u for u in uses if not PINNED.match(u)] == []
    checkout = next(
        step
        for job in workflow["jobs"].values()
        for step in job["steps"]
        if "checkout" in step.get("uses", "")
    )
    assert checkout["with"]["persist-credentials"] is False


def test_the_workflow_runs_make_test() -> None:
    workflow = _load(".github/workflows/ci.yml")
    runs = [step.get("run", "") for job in workflow["jobs"].values() for step in job["steps"]]
    assert "make test" in runs


def test_pre_commit_runs_exactly_make_lint() -> None:
    config = _load(".pre-commit-config.yaml")
    hooks = [hook for repo in config["repos"] for hook in repo["hooks"]]
    assert [(h["entry"], h["language"], h["pass_filenames"]) for h in hooks] == [
        ("make lint", "system", False)
    ]
