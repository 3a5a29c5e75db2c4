"""The offline container-profile check (containers/check_profile.py) passes on the real files and
catches each way the hardened profile could be weakened."""

from __future__ import annotations

import importlib.util
import json
import re
import shlex
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest
import yaml  # type: ignore[import-untyped]  # PyYAML ships no stubs; only a cross-check here

CONTAINERS = Path(__file__).resolve().parents[3] / "containers"


def _load_checker() -> ModuleType:
    spec = importlib.util.spec_from_file_location("check_profile", CONTAINERS / "check_profile.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve annotations through sys.modules
    spec.loader.exec_module(module)
    return module


check = _load_checker()
CONTAINERFILE = (CONTAINERS / "Containerfile").read_text(encoding="utf-8")
COMPOSE = (CONTAINERS / "compose.yaml").read_text(encoding="utf-8")
PROFILE = (CONTAINERS / "profile.sh").read_text(encoding="utf-8")
RUN_SCRIPT = (CONTAINERS / "run.sh").read_text(encoding="utf-8")
COMPOSE_HTTP = (CONTAINERS / "compose.http.yaml").read_text(encoding="utf-8")
CONTAINERFILE_STACK = (CONTAINERS / "Containerfile.stack").read_text(encoding="utf-8")


def _failures(
    containerfile: str = CONTAINERFILE,
    compose: str = COMPOSE,
    profile: str = PROFILE,
    run_script: str = RUN_SCRIPT,
    compose_http: str = COMPOSE_HTTP,
    containerfile_stack: str = CONTAINERFILE_STACK,
) -> list[str]:
    report = check.Report()
    check.check_containerfile(containerfile, report)
    check.check_compose(compose, report)
    check.check_profile_script(profile, run_script, report)
    check.check_http_profile_script(profile, run_script, report)
    check.check_http_compose(compose_http, report)
    check.check_stack_containerfile(containerfile_stack, report)
    failures: list[str] = report.failures
    return failures


def _in_mcp2(old: str, new: str) -> str:
    """compose.http.yaml with `old` replaced by `new` in the mcp2 service only."""
    start = COMPOSE_HTTP.index("\n  mcp2:\n")
    end = COMPOSE_HTTP.index("\n  mcp3:\n")
    return COMPOSE_HTTP[:start] + _replace(COMPOSE_HTTP[start:end], old, new) + COMPOSE_HTTP[end:]


def _replace(text: str, old: str, new: str) -> str:
    assert old in text, f"the fixture no longer contains {old!r}"
    return text.replace(old, new)


def test_offline_check_passes_on_the_committed_files() -> None:
    assert _failures() == []


def test_offline_check_runs_as_a_script_without_the_venv_packages() -> None:
    result = subprocess.run(
        [sys.executable, "-S", str(CONTAINERS / "check_profile.py")],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.rstrip().endswith(" passed, 0 failed")


Mutation = Callable[[], list[str]]

MUTATIONS: dict[str, tuple[Mutation, str]] = {
    "root user": (
        lambda: _failures(containerfile=_replace(CONTAINERFILE, "USER 10001:10001", "USER 0:0")),
        "Containerfile: USER 10001:10001",
    ),
    "no stop signal": (
        lambda: _failures(containerfile=_replace(CONTAINERFILE, "STOPSIGNAL SIGTERM", "")),
        "Containerfile: STOPSIGNAL SIGTERM",
    ),
    "unpinned base": (
        lambda: _failures(
            containerfile=_replace(CONTAINERFILE, "@sha256:", ":latest-").replace(
                "-slim-bookworm:latest-", "-slim-bookworm-"
            )
        ),
        "Containerfile: ARG BASE_IMAGE defaults to a digest-pinned image",
    ),
    "sdists allowed": (
        lambda: _failures(containerfile=_replace(CONTAINERFILE, "--only-binary :all:", "")),
        "Containerfile: runtime dependencies installed with --require-hashes --no-deps, wheels only",
    ),
    "unhashed install": (
        lambda: _failures(containerfile=_replace(CONTAINERFILE, "--require-hashes", "")),
        "Containerfile: runtime dependencies installed with --require-hashes --no-deps, wheels only",
    ),
    "run in the runtime stage": (
        lambda: _failures(
            containerfile=_replace(
                CONTAINERFILE,
                "USER 10001:10001",
                "RUN apt-get install -y curl\nUSER 10001:10001",
            )
        ),
        "Containerfile: the runtime stage runs nothing (no tool can come back)",
    ),
    "setuid bits kept": (
        lambda: _failures(containerfile=_replace(CONTAINERFILE, "chmod a-s", "true")),
        "Containerfile: builder strip step: setuid/setgid bits cleared",
    ),
    "shell-form entrypoint": (
        lambda: _failures(
            containerfile=_replace(
                CONTAINERFILE,
                'ENTRYPOINT ["/opt/mcp-suite/bin/python", "-m", "mcp_suite"]',
                "ENTRYPOINT /opt/mcp-suite/bin/python -m mcp_suite",
            )
        ),
        "Containerfile: ENTRYPOINT is the exec form of the server (no shell as PID 1)",
    ),
    "compose network": (
        lambda: _failures(compose=_replace(COMPOSE, "network_mode: none", "network_mode: bridge")),
        "compose.yaml: network_mode: none",
    ),
    "compose writable root": (
        lambda: _failures(compose=_replace(COMPOSE, "read_only: true\n    cap_drop", "cap_drop")),
        "compose.yaml: read_only: true",
    ),
    "compose no pids limit": (
        lambda: _failures(compose=_replace(COMPOSE, "    pids_limit: 64\n", "")),
        "compose.yaml: pids_limit: 64",
    ),
    "compose writable data": (
        lambda: _failures(
            compose=_replace(
                COMPOSE, "target: /safe_data_dir\n        read_only: true", "target: /safe_data_dir"
            )
        ),
        "compose.yaml: the data folder is mounted read-only at /safe_data_dir",
    ),
    "compose capability added": (
        lambda: _failures(
            compose=_replace(COMPOSE, "    cap_drop:\n", "    cap_add:\n      - SYS_ADMIN\n    cap_drop:\n")
        ),
        "compose.yaml: no cap_add",
    ),
    "compose exec tmp": (
        lambda: _failures(compose=_replace(COMPOSE, "rw,noexec,nosuid", "rw,nosuid")),
        "compose.yaml: /tmp is a 16 MiB rw,noexec,nosuid tmpfs",
    ),
    "profile without nofile ulimit": (
        lambda: _failures(profile=_replace(PROFILE, "    --ulimit nofile=1024:1024\n", "")),
        "profile.sh: --ulimit nofile=1024:1024",
    ),
    "profile with the engine's nproc": (
        lambda: _failures(profile=_replace(PROFILE, "    --ulimit nproc=1024:1024\n", "")),
        "profile.sh: --ulimit nproc=1024:1024",
    ),
    "compose without ulimits": (
        lambda: _failures(
            compose=_replace(COMPOSE, "      nproc:\n        soft: 1024\n        hard: 1024\n", "")
        ),
        "compose.yaml: ulimits nofile and nproc 1024",
    ),
    "profile without read-only": (
        lambda: _failures(profile=_replace(PROFILE, "    --read-only\n", "")),
        "profile.sh: --read-only",
    ),
    "profile privileged": (
        lambda: _failures(
            profile=_replace(PROFILE, "    --read-only\n", "    --read-only\n    --privileged\n")
        ),
        "profile.sh: no --privileged",
    ),
    "http profile on every host address": (
        lambda: _failures(profile=_replace(PROFILE, ':-127.0.0.1:8000}"', ':-8000}"')),
        "profile.sh (http): exactly one port published, on 127.0.0.1 by default",
    ),
    "http profile on the host's network": (
        lambda: _failures(
            profile=_replace(PROFILE, "MCP_CONTAINER_NETWORK:-bridge}", "MCP_CONTAINER_NETWORK:-host}")
        ),
        "profile.sh (http): one --network, by default the engine's bridge (never the host's)",
    ),
    "http profile without the hardening": (
        lambda: _failures(
            profile=_replace(PROFILE, 'MCP_PROFILE_HTTP=("${MCP_HARDENING[@]}" ', "MCP_PROFILE_HTTP=(")
        ),
        "profile.sh (http): --read-only",
    ),
    "http replica with a capability": (
        lambda: _failures(
            compose_http=_in_mcp2("    cap_drop:\n", "    cap_add:\n      - NET_RAW\n    cap_drop:\n")
        ),
        "compose.http.yaml: mcp2: cap_drop ALL, no cap_add",
    ),
    "http replica port published": (
        lambda: _failures(
            compose_http=_in_mcp2("    networks:\n", '    ports:\n      - "8000:8000"\n    networks:\n')
        ),
        "compose.http.yaml: mcp2: no published port",
    ),
    "http replica writable root": (
        lambda: _failures(compose_http=_in_mcp2("    read_only: true\n    cap_drop", "    cap_drop")),
        "compose.http.yaml: mcp2: read_only: true",
    ),
    "http replica as root": (
        lambda: _failures(compose_http=_in_mcp2('user: "10001:10001"', 'user: "0:0"')),
        "compose.http.yaml: mcp2: user 10001:10001",
    ),
    "http proxy on every host address": (
        lambda: _failures(
            compose_http=_replace(
                COMPOSE_HTTP, "MCP_STACK_PUBLISH:-127.0.0.1:8080}", "MCP_STACK_PUBLISH:-8080}"
            )
        ),
        "compose.http.yaml: HAProxy publishes one port, on 127.0.0.1 by default",
    ),
    "http internal network opened": (
        lambda: _failures(
            compose_http=_replace(
                COMPOSE_HTTP, "  mcp:\n    internal: true\n", "  mcp:\n    driver: bridge\n"
            )
        ),
        "compose.http.yaml: the network between proxy, replicas and PgBouncer is internal",
    ),
    "http replicas without tokens": (
        lambda: _failures(
            compose_http=_replace(
                COMPOSE_HTTP,
                "      MCP_HTTP_HOST: 0.0.0.0\n",
                "      MCP_HTTP_HOST: 0.0.0.0\n      MCP_HTTP_AUTH: none\n",
            )
        ),
        "compose.http.yaml: the replicas listen on their interface with bearer tokens (no MCP_HTTP_AUTH)",
    ),
    "http password in the DSN": (
        lambda: _failures(
            compose_http=_replace(COMPOSE_HTTP, "passfile=/run/secrets/pgpass", "password=secret")
        ),
        "compose.http.yaml: the replicas' DSN holds no password (a passfile)",
    ),
    "http writable secret": (
        lambda: _failures(
            compose_http=_replace(
                COMPOSE_HTTP,
                "target: /run/secrets/userlist\n        read_only: true\n",
                "target: /run/secrets/userlist\n",
            )
        ),
        "compose.http.yaml: pgbouncer: every mount read-only",
    ),
    "http replica restarted for ever": (
        lambda: _failures(compose_http=_in_mcp2("restart: on-failure:5", "restart: always")),
        "compose.http.yaml: mcp2: restart: on-failure with at most 10 tries",
    ),
    "http replica without a restart policy": (
        lambda: _failures(compose_http=_in_mcp2("    restart: on-failure:5\n", "")),
        "compose.http.yaml: mcp2: restart: on-failure with at most 10 tries",
    ),
    "http proxy resolving only at start": (
        lambda: _failures(compose_http=_replace(COMPOSE_HTTP, "      MCPLB_RESOLVERS: resolv.conf\n", "")),
        "compose.http.yaml: HAProxy keeps resolving the replicas' names (MCPLB_RESOLVERS: resolv.conf)",
    ),
    "http proxy tied to a replica": (
        lambda: _failures(
            compose_http=_replace(
                COMPOSE_HTTP,
                "    environment:\n      MCPLB_BIND:",
                "    depends_on:\n      - mcp2\n    environment:\n      MCPLB_BIND:",
            )
        ),
        "compose.http.yaml: HAProxy does not depend on the replicas (each can be re-created alone)",
    ),
    "stack image as root": (
        lambda: _failures(
            containerfile_stack=_replace(
                CONTAINERFILE_STACK, "USER 10001:10001\n# HAProxy", "USER 0:0\n# HAProxy"
            )
        ),
        "Containerfile.stack: haproxy: USER 10001:10001",
    ),
}


@pytest.mark.parametrize("name", sorted(MUTATIONS))
def test_offline_check_reports_each_weakened_profile(name: str) -> None:
    mutate, expected = MUTATIONS[name]
    assert expected in mutate()


def test_yaml_subset_reader_agrees_with_pyyaml_on_compose() -> None:
    assert check.parse_yaml_subset(COMPOSE) == yaml.safe_load(COMPOSE)
    assert check.parse_yaml_subset(COMPOSE_HTTP) == yaml.safe_load(COMPOSE_HTTP)


def test_yaml_subset_reader_refuses_what_it_does_not_model() -> None:
    with pytest.raises(check.YamlSubsetError):
        check.parse_yaml_subset("a: &anchor 1\nb: *anchor\n")
    with pytest.raises(check.YamlSubsetError):
        check.parse_yaml_subset("a: 1\na: 2\n")
    report = check.Report()
    check.check_compose("services:\n  x: {read_only: true}\n", report)
    assert report.failures


CLIENTS_DOC = (CONTAINERS.parent / "docs" / "operations" / "clients.md").read_text(encoding="utf-8")


def _container_argvs_in_clients_doc() -> list[list[str]]:
    """Every container launch in docs/operations/clients.md: JSON configs and shell commands."""
    argvs: list[list[str]] = []
    for block in re.findall(r"```json\n(.*?)```", CLIENTS_DOC, re.DOTALL):
        document = json.loads(block)
        if isinstance(document, list):
            continue  # the bare argument list shown once for reference
        servers = document.get("mcpServers") or document.get("servers") or {}
        for server in servers.values():
            if server["command"].endswith("podman"):
                argvs.append([server["command"], *server["args"]])
    for block in re.findall(r"```sh\n(.*?)```", CLIENTS_DOC, re.DOTALL):
        words = shlex.split(block.replace("\\\n", " "), comments=True)
        if "podman" in words and "run" in words:
            argvs.append(words[words.index("podman") :])
    return argvs


def test_clients_doc_has_a_container_config_for_each_client() -> None:
    assert len(_container_argvs_in_clients_doc()) == 5  # Desktop, Code (2), Cursor, VS Code


@pytest.mark.parametrize("index", range(5))
def test_every_container_config_in_clients_doc_applies_the_whole_profile(index: int) -> None:
    argv = _container_argvs_in_clients_doc()[index]
    flags = argv[2 : argv.index("localhost/mcp-suite:latest")]
    fake_profile = "MCP_PROFILE=(\n" + "\n".join(shlex.quote(f) for f in flags) + "\n)\n"
    report = check.Report()
    check.check_profile_script(fake_profile, RUN_SCRIPT, report)
    assert report.failures == []
    assert "-i" in flags
    assert "-t" not in flags
    assert "--tty" not in flags
    assert any(f.endswith(":/safe_data_dir:ro") for f in flags)
