"""A subject_pattern whose matching has no small bound stops the start (issue 51): the pattern is
matched on the event loop for every call, and one with nested quantifiers stalled every caller for
seconds on a 31-character subject. The real process, over stdio and as the HTTP server, exits 78
naming the rule, before it serves anything."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

CONFIG = (
    "[[sources]]\nname='people'\ndescription='d'\ndsn='dbname=people'\n"
    "[sources.identity]\n"
    "[[sources.identity.rules]]\nsubject_pattern = '^(\\w+\\s?)*$'\nrole = 'mcp_people'\n"
)


# The HTTP server's own settings, complete (nothing is fetched: the file is refused first).
HTTP = {
    "MCP_HTTP_RESOURCE_URI": "http://127.0.0.1:9/mcp",
    "MCP_HTTP_ISSUER": "http://127.0.0.1:9",
    "MCP_HTTP_JWKS_URL": "http://127.0.0.1:9/jwks",
}


@pytest.mark.parametrize("command", [[], ["serve-http"]], ids=["stdio", "http"])
def test_a_nested_quantifier_in_a_subject_pattern_stops_the_start(tmp_path: Path, command: list[str]) -> None:
    path = tmp_path / "sources.toml"
    path.write_text(CONFIG)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MCP_")}
    if command:
        env.update(HTTP)
    done = subprocess.run(
        [sys.executable, "-m", "mcp_suite", "--config", str(path), *command],
        input=b"",
        env=env,
        capture_output=True,
        timeout=60,
        check=False,
    )
    stderr = done.stderr.decode()
    assert done.returncode == 78, stderr
    assert "identity: rules[0]: subject_pattern: a quantifier inside a quantified group" in stderr
    assert done.stdout == b""
