"""Offline check of the container profile (docs/operations/), no engine needed.

Run by `containers/smoke.sh --offline`.

Parses containers/Containerfile, containers/compose.yaml, the shared flag lists in
containers/profile.sh (stdio and HTTP), and the HTTP stack's containers/compose.http.yaml and
containers/Containerfile.stack with the standard library alone and asserts every element of the
hardened profile is present in each (and nothing that would undo it). Exit status 0 when all checks
pass, 1 otherwise; one line per check on stdout. The compose files are read with a small parser for
the YAML subset they use (block mappings and lists, plain or quoted scalars); where PyYAML is
importable the two readings must agree, so a file cannot drift outside that subset unnoticed.
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DIGEST_PINNED = re.compile(r"^[^\s@]+@sha256:[0-9a-f]{64}$")
UID_GID = "10001:10001"
TMPFS_PATH = "/tmp"  # noqa: S108  # the container's tmpfs mount point, not a file we create
TMPFS_OPTIONS = {"rw", "noexec", "nosuid", "size=16m"}
# Explicit resource limits: without them podman (as root) asks the runtime for 1048576 open files and
# processes, which a host with lower limits of its own refuses (exit 126). Lower ones always work.
ULIMITS = {"nofile": 1024, "nproc": 1024}
ULIMIT_NOFILE = f"nofile={ULIMITS['nofile']}:{ULIMITS['nofile']}"
ULIMIT_NPROC = f"nproc={ULIMITS['nproc']}:{ULIMITS['nproc']}"


@dataclass
class Report:
    """Collected check outcomes: (passed, description)."""

    results: list[tuple[bool, str]] = field(default_factory=list)

    def check(self, ok: bool, what: str) -> None:
        self.results.append((bool(ok), what))

    @property
    def failures(self) -> list[str]:
        return [what for ok, what in self.results if not ok]


# --- Containerfile ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Instruction:
    keyword: str
    args: str


@dataclass
class Stage:
    base: str
    name: str | None
    instructions: list[Instruction] = field(default_factory=list)

    def all(self, keyword: str) -> list[str]:
        return [i.args for i in self.instructions if i.keyword == keyword]


def parse_containerfile(text: str) -> tuple[dict[str, str], list[Stage]]:
    """Split into instructions (continuations joined, comment lines dropped) and build stages.

    Returns the global ARG defaults (those before the first FROM) and the stages in order.
    """
    logical: list[str] = []
    current = ""
    for raw in text.splitlines():
        stripped = raw.strip()
        if stripped.startswith("#") or (not stripped and not current):
            continue  # a comment line inside a continuation is dropped, as the engines do
        if stripped.endswith("\\"):
            current += stripped[:-1] + " "
            continue
        current += stripped
        if current.strip():
            logical.append(current.strip())
        current = ""
    if current.strip():
        logical.append(current.strip())

    global_args: dict[str, str] = {}
    stages: list[Stage] = []
    for line in logical:
        keyword, _, args = line.partition(" ")
        keyword = keyword.upper()
        args = args.strip()
        if keyword == "FROM":
            parts = args.split()
            name = parts[2] if len(parts) >= 3 and parts[1].upper() == "AS" else None
            stages.append(Stage(base=parts[0], name=name))
        elif not stages:
            if keyword == "ARG":
                key, _, default = args.partition("=")
                global_args[key.strip()] = default.strip()
        else:
            stages[-1].instructions.append(Instruction(keyword, args))
    return global_args, stages


def _env_pairs(args: str) -> dict[str, str]:
    return dict(tok.split("=", 1) for tok in shlex.split(args) if "=" in tok)


def check_containerfile(text: str, report: Report) -> None:
    global_args, stages = parse_containerfile(text)
    base_default = global_args.get("BASE_IMAGE", "")
    report.check(
        bool(DIGEST_PINNED.match(base_default)),
        "Containerfile: ARG BASE_IMAGE defaults to a digest-pinned image",
    )
    report.check(len(stages) == 2, "Containerfile: two stages (builder, runtime)")
    if not stages:
        return
    builder, runtime = stages[0], stages[-1]
    report.check(
        builder.base in ("${BASE_IMAGE}", "$BASE_IMAGE"),
        "Containerfile: the builder stage is FROM the BASE_IMAGE build argument",
    )

    runs = " ".join(builder.all("RUN"))
    pip_runs = [r for r in builder.all("RUN") if "runtime.txt" in r]
    report.check(
        any("--require-hashes" in r and "--no-deps" in r and "--only-binary :all:" in r for r in pip_runs),
        "Containerfile: runtime dependencies installed with --require-hashes --no-deps, wheels only",
    )
    report.check(
        all(not re.search(r"\bADD\s+https?://", i) for i in text.splitlines()),
        "Containerfile: no ADD from a URL",
    )
    for needle, what in (
        ("ensurepip", "ensurepip removed"),
        ('"$site"/pip ', "pip removed from the venv"),
        ("/usr/bin/apt", "apt removed"),
        ("/usr/bin/dpkg", "dpkg removed"),
        ("gcc", "compilers removed"),
        ("-perm /6000", "setuid/setgid files searched"),
        ("chmod a-s", "setuid/setgid bits cleared"),
    ):
        report.check(needle in runs, f"Containerfile: builder strip step: {what}")

    runtime_runs = runtime.all("RUN")
    report.check(not runtime_runs, "Containerfile: the runtime stage runs nothing (no tool can come back)")
    report.check(
        runtime.base == "scratch" and any(c.startswith("--from=builder") for c in runtime.all("COPY")),
        "Containerfile: the runtime stage is scratch + the stripped builder root (one layer)",
    )
    users = runtime.all("USER")
    report.check(users[-1:] == [UID_GID], f"Containerfile: USER {UID_GID}")
    report.check(runtime.all("STOPSIGNAL")[-1:] == ["SIGTERM"], "Containerfile: STOPSIGNAL SIGTERM")
    env: dict[str, str] = {}
    for args in runtime.all("ENV"):
        env.update(_env_pairs(args))
    report.check(
        env.get("MCP_SAFE_DATA_DIR") == "/safe_data_dir",
        "Containerfile: ENV MCP_SAFE_DATA_DIR=/safe_data_dir",
    )
    entry = runtime.all("ENTRYPOINT")[-1:] or [""]
    try:
        argv = json.loads(entry[0])
    except json.JSONDecodeError:
        argv = None
    report.check(
        isinstance(argv, list) and (argv[-2:] == ["-m", "mcp_suite"] or str(argv[-1]).endswith("/mcp-suite")),
        "Containerfile: ENTRYPOINT is the exec form of the server (no shell as PID 1)",
    )
    report.check(not runtime.all("EXPOSE"), "Containerfile: no EXPOSE (stdio only)")


# --- the YAML subset of compose.yaml ---------------------------------------------------------------


class YamlSubsetError(ValueError):
    pass


def _strip_comment(line: str) -> str:
    quote = ""
    for index, char in enumerate(line):
        if quote:
            if char == quote:
                quote = ""
        elif char in "'\"":
            quote = char
        elif char == "#" and (index == 0 or line[index - 1] in " \t"):
            return line[:index].rstrip()
    return line.rstrip()


def _scalar(text: str) -> Any:
    text = text.strip()
    if text == "" or text in ("~", "null"):
        return None
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    if text.startswith("[") and text.endswith("]"):
        inner = text[1:-1].strip()
        return [_scalar(part) for part in inner.split(",")] if inner else []
    if text.startswith(("{", "&", "*", "!", "|", ">")):
        raise YamlSubsetError(f"unsupported YAML construct: {text[:20]!r}")
    if text in ("true", "True"):
        return True
    if text in ("false", "False"):
        return False
    if re.fullmatch(r"[-+]?\d+", text):
        return int(text)
    if re.fullmatch(r"[-+]?\d+\.\d*", text):
        return float(text)
    return text


def parse_yaml_subset(text: str) -> Any:
    """Block mappings, block sequences (of scalars or mappings), scalars, flow lists of scalars."""
    lines: list[tuple[int, str]] = []
    for raw in text.splitlines():
        if "\t" in raw[: len(raw) - len(raw.lstrip())]:
            raise YamlSubsetError("tab indentation")
        body = _strip_comment(raw)
        if body.strip():
            lines.append((len(body) - len(body.lstrip(" ")), body.strip()))
    value, position = _block(lines, 0, lines[0][0] if lines else 0)
    if position != len(lines):
        raise YamlSubsetError(f"unparsed content at: {lines[position][1]!r}")
    return value


def _split_key(content: str) -> tuple[str, str] | None:
    match = re.match(r"^([A-Za-z0-9_.\-]+|\"[^\"]*\"|'[^']*'):(?:\s+(.*))?$", content)
    if not match:
        return None
    key = match.group(1).strip("'\"")
    return key, (match.group(2) or "")


def _block(lines: list[tuple[int, str]], position: int, indent: int) -> tuple[Any, int]:
    if position >= len(lines):
        return None, position
    if lines[position][1].startswith("- ") or lines[position][1] == "-":
        return _sequence(lines, position, indent)
    return _mapping(lines, position, indent)


def _mapping(lines: list[tuple[int, str]], position: int, indent: int) -> tuple[Any, int]:
    result: dict[str, Any] = {}
    while position < len(lines) and lines[position][0] == indent:
        split = _split_key(lines[position][1])
        if split is None:
            raise YamlSubsetError(f"expected 'key: value': {lines[position][1]!r}")
        key, rest = split
        if key in result:
            raise YamlSubsetError(f"duplicate key {key!r}")
        position += 1
        if rest:
            result[key] = _scalar(rest)
        elif position < len(lines) and lines[position][0] > indent:
            result[key], position = _block(lines, position, lines[position][0])
        elif position < len(lines) and lines[position][0] == indent and (lines[position][1].startswith("- ")):
            result[key], position = _sequence(lines, position, indent)
        else:
            result[key] = None
    if position < len(lines) and lines[position][0] > indent:
        raise YamlSubsetError(f"unexpected indentation: {lines[position][1]!r}")
    return result, position


def _sequence(lines: list[tuple[int, str]], position: int, indent: int) -> tuple[Any, int]:
    result: list[Any] = []
    while (
        position < len(lines)
        and lines[position][0] == indent
        and (lines[position][1].startswith("- ") or lines[position][1] == "-")
    ):
        item = lines[position][1][1:].strip()
        if _split_key(item) is not None and not item.startswith(("'", '"')):
            # "- key: value" opens a mapping whose further keys sit at the item's indentation.
            item_indent = indent + (len(lines[position][1]) - len(item))
            sub = [(item_indent, item)]
            end = position + 1
            while end < len(lines) and lines[end][0] >= item_indent:
                sub.append(lines[end])
                end += 1
            value, used = _mapping(sub, 0, item_indent)
            if used != len(sub):
                raise YamlSubsetError(f"unparsed item content: {sub[used][1]!r}")
            result.append(value)
            position = end
        else:
            result.append(_scalar(item))
            position += 1
    return result, position


# --- compose.yaml ----------------------------------------------------------------------------------


def _expand_default(value: Any) -> Any:
    """`${VAR:-default}` → default (what an engine sees with VAR unset)."""
    if isinstance(value, str):
        return re.sub(r"\$\{[A-Za-z_][A-Za-z0-9_]*:-([^}]*)\}", r"\1", value)
    return value


def check_compose(text: str, report: Report) -> None:
    try:
        document = parse_yaml_subset(text)
    except YamlSubsetError as exc:
        report.check(False, f"compose.yaml: parses as the supported YAML subset ({exc})")
        return
    report.check(True, "compose.yaml: parses as the supported YAML subset")
    try:
        import yaml  # type: ignore[import-untyped]  # optional cross-check, no stubs installed
    except ImportError:
        pass
    else:
        report.check(yaml.safe_load(text) == document, "compose.yaml: PyYAML reads the same document")

    services = document.get("services") if isinstance(document, dict) else None
    if not isinstance(services, dict) or len(services) != 1:
        report.check(False, "compose.yaml: exactly one service")
        return
    ((name, service),) = services.items()
    report.check(isinstance(service, dict), f"compose.yaml: service {name!r} is a mapping")
    if not isinstance(service, dict):
        return
    get = service.get

    report.check(get("read_only") is True, "compose.yaml: read_only: true")
    report.check(get("cap_drop") == ["ALL"], "compose.yaml: cap_drop: [ALL]")
    report.check(not get("cap_add"), "compose.yaml: no cap_add")
    report.check(
        any(str(opt) in ("no-new-privileges", "no-new-privileges:true") for opt in get("security_opt") or []),
        "compose.yaml: security_opt no-new-privileges",
    )
    report.check(get("network_mode") == "none", "compose.yaml: network_mode: none")
    report.check(not get("networks") and not get("ports"), "compose.yaml: no networks, no ports")
    tmpfs = get("tmpfs") or []
    tmp_entries = [t for t in tmpfs if isinstance(t, str) and t.split(":", 1)[0] == TMPFS_PATH]
    report.check(
        len(tmp_entries) == 1 and set(tmp_entries[0].partition(":")[2].split(",")) >= TMPFS_OPTIONS,
        "compose.yaml: /tmp is a 16 MiB rw,noexec,nosuid tmpfs",
    )
    report.check(get("pids_limit") == 64, "compose.yaml: pids_limit: 64")
    report.check(str(get("mem_limit")).lower() == "256m", "compose.yaml: mem_limit: 256m")
    report.check(str(get("cpus")) in ("1", "1.0"), "compose.yaml: cpus: 1")
    report.check(get("user") == UID_GID, f"compose.yaml: user {UID_GID}")
    report.check(get("stop_signal") == "SIGTERM", "compose.yaml: stop_signal: SIGTERM")
    report.check(get("stdin_open") is True and not get("tty"), "compose.yaml: stdin open, no TTY (stdio)")
    report.check(
        get("ulimits") == {name: {"soft": n, "hard": n} for name, n in ULIMITS.items()},
        "compose.yaml: ulimits nofile and nproc 1024",
    )
    for forbidden in ("privileged", "devices", "pid", "ipc", "userns_mode", "cgroup_parent"):
        report.check(not get(forbidden), f"compose.yaml: no {forbidden}")
    env = get("environment") or {}
    report.check(
        isinstance(env, dict) and env.get("MCP_SAFE_DATA_DIR") == "/safe_data_dir",
        "compose.yaml: MCP_SAFE_DATA_DIR=/safe_data_dir",
    )
    volumes = get("volumes") or []
    data = [
        v
        for v in volumes
        if (isinstance(v, dict) and v.get("target") == "/safe_data_dir")
        or (isinstance(v, str) and v.split(":")[1:2] == ["/safe_data_dir"])
    ]
    report.check(
        len(data) == 1
        and (
            (isinstance(data[0], dict) and data[0].get("read_only") is True)
            or (isinstance(data[0], str) and data[0].endswith(":ro"))
        ),
        "compose.yaml: the data folder is mounted read-only at /safe_data_dir",
    )
    report.check(
        all("docker.sock" not in str(v) and "podman.sock" not in str(v) and str(v) != "/" for v in volumes),
        "compose.yaml: no engine socket mounted",
    )
    build = get("build") or {}
    base = _expand_default((build.get("args") or {}).get("BASE_IMAGE", ""))
    report.check(
        bool(DIGEST_PINNED.match(str(base))),
        "compose.yaml: the build's BASE_IMAGE default is digest-pinned",
    )


# --- profile.sh (the flags of run.sh and smoke.sh) -------------------------------------------------


def shell_arrays(text: str) -> dict[str, list[str]]:
    """Every `NAME=( ... )` array of a bash file, in order, with `"${OTHER[@]}"` expanded from the
    arrays before it (the only expansion profile.sh uses); other words are kept as written."""
    arrays: dict[str, list[str]] = {}
    for match in re.finditer(r"^([A-Za-z_][A-Za-z0-9_]*)=\((.*?)\)[ \t]*$", text, re.MULTILINE | re.DOTALL):
        body = "\n".join(_strip_comment(line) for line in match.group(2).splitlines())
        words: list[str] = []
        for word in shlex.split(body):
            reference = re.fullmatch(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\[@\]\}", word)
            words.extend(arrays.get(reference.group(1), [word]) if reference else [word])
        arrays[match.group(1)] = words
    return arrays


def profile_flags(text: str, name: str = "MCP_PROFILE") -> list[str]:
    return shell_arrays(text).get(name, [])


def shell_default(text: str, name: str) -> str | None:
    """The default of `NAME="${NAME:-default}"` in a bash file, or None."""
    match = re.search(rf'^{name}="\$\{{{name}:-([^}}]*)\}}"', text, re.MULTILINE)
    return match.group(1) if match else None


HARDENING_PAIRS = (
    ("--cap-drop", "ALL"),
    ("--security-opt", "no-new-privileges"),
    ("--tmpfs", f"{TMPFS_PATH}:rw,noexec,nosuid,size=16m"),
    ("--pids-limit", "64"),
    ("--memory", "256m"),
    ("--cpus", "1"),
    ("--user", UID_GID),
    ("--stop-signal", "SIGTERM"),
    ("--ulimit", ULIMIT_NOFILE),
    ("--ulimit", ULIMIT_NPROC),
)
FORBIDDEN_FLAGS = ("--privileged", "--cap-add", "--device", "--pid", "--ipc", "--userns")


def _check_hardening(flags: list[str], label: str, report: Report) -> None:
    pairs = set(zip(flags, [*flags[1:], ""], strict=True))
    for expected in HARDENING_PAIRS:
        report.check(expected in pairs, f"{label}: {' '.join(expected)}")
    report.check("--read-only" in flags, f"{label}: --read-only")
    for bad in FORBIDDEN_FLAGS:
        report.check(not any(f == bad or f.startswith(bad + "=") for f in flags), f"{label}: no {bad}")


def check_profile_script(profile: str, run_script: str, report: Report) -> None:
    flags = profile_flags(profile)
    _check_hardening(flags, "profile.sh", report)
    pairs = set(zip(flags, [*flags[1:], ""], strict=True))
    report.check(("--network", "none") in pairs, "profile.sh: --network none")
    report.check('"${MCP_PROFILE[@]}"' in run_script, "run.sh: runs with the whole profile")
    report.check(":/safe_data_dir:ro" in run_script, "run.sh: mounts the data folder read-only")


def check_http_profile_script(profile: str, run_script: str, report: Report) -> None:
    """The HTTP mode: the same hardening, a network that is not the host's, one port published on
    loopback unless the operator says otherwise."""
    http = profile_flags(profile, "MCP_PROFILE_HTTP")
    _check_hardening(http, "profile.sh (http)", report)
    networks = [value for flag, value in zip(http, [*http[1:], ""], strict=True) if flag == "--network"]
    network_default = shell_default(profile, "MCP_CONTAINER_NETWORK")
    report.check(
        networks == ["$MCP_CONTAINER_NETWORK"] and network_default not in (None, "", "host", "none"),
        "profile.sh (http): one --network, by default the engine's bridge (never the host's)",
    )
    published = [
        value for flag, value in zip(http, [*http[1:], ""], strict=True) if flag in ("--publish", "-p")
    ]
    publish_default = shell_default(profile, "MCP_CONTAINER_PUBLISH") or ""
    report.check(
        published == ["$MCP_CONTAINER_PUBLISH:8000"] and publish_default.startswith("127.0.0.1:"),
        "profile.sh (http): exactly one port published, on 127.0.0.1 by default",
    )
    report.check(
        '"${MCP_PROFILE_HTTP[@]}"' in run_script, "run.sh: the HTTP mode runs with the whole HTTP profile"
    )


# --- compose.http.yaml -----------------------------------------------------------------------------

HTTP_SERVICES = {"haproxy", "mcp1", "mcp2", "mcp3", "pgbouncer"}
REPLICAS = ("mcp1", "mcp2", "mcp3")
# podman restarts a container that failed, without a pause between tries: a bound keeps a container
# that cannot start (a wrong setting) from restarting for ever.
RESTART_POLICY = re.compile(r"^on-failure:([1-9]|10)$")


def _binds(service: dict[str, Any]) -> list[dict[str, Any]]:
    return [v for v in service.get("volumes") or [] if isinstance(v, dict)]


def check_http_compose(text: str, report: Report) -> None:
    label = "compose.http.yaml"
    try:
        document = parse_yaml_subset(text)
    except YamlSubsetError as exc:
        report.check(False, f"{label}: parses as the supported YAML subset ({exc})")
        return
    report.check(True, f"{label}: parses as the supported YAML subset")
    try:
        import yaml
    except ImportError:
        pass
    else:
        report.check(yaml.safe_load(text) == document, f"{label}: PyYAML reads the same document")
    services = document.get("services") if isinstance(document, dict) else None
    if (
        not isinstance(services, dict)
        or set(services) != HTTP_SERVICES
        or not all(isinstance(s, dict) for s in services.values())
    ):
        report.check(False, f"{label}: services haproxy, mcp1..mcp3, pgbouncer")
        return
    report.check("name" not in document, f"{label}: no top-level name (docker-compose 1.x refuses it)")
    networks = document.get("networks") or {}
    report.check(
        isinstance(networks, dict) and (networks.get("mcp") or {}).get("internal") is True,
        f"{label}: the network between proxy, replicas and PgBouncer is internal",
    )
    for name, service in sorted(services.items()):
        get = service.get
        where = f"{label}: {name}"
        report.check(get("read_only") is True, f"{where}: read_only: true")
        report.check(get("cap_drop") == ["ALL"] and not get("cap_add"), f"{where}: cap_drop ALL, no cap_add")
        report.check(
            any(str(o) in ("no-new-privileges", "no-new-privileges:true") for o in get("security_opt") or []),
            f"{where}: no-new-privileges",
        )
        tmp = [t for t in get("tmpfs") or [] if isinstance(t, str) and t.split(":", 1)[0] == TMPFS_PATH]
        report.check(
            len(tmp) == 1 and set(tmp[0].partition(":")[2].split(",")) >= TMPFS_OPTIONS,
            f"{where}: /tmp is a 16 MiB rw,noexec,nosuid tmpfs",
        )
        report.check(get("pids_limit") == 64, f"{where}: pids_limit: 64")
        report.check(str(get("mem_limit")).lower() == "256m", f"{where}: mem_limit: 256m")
        report.check(str(get("cpus")) in ("1", "1.0"), f"{where}: cpus: 1")
        report.check(get("user") == UID_GID, f"{where}: user {UID_GID}")
        limits = get("ulimits") or {}
        report.check(
            limits.get("nproc") == {"soft": ULIMITS["nproc"], "hard": ULIMITS["nproc"]}
            and isinstance(limits.get("nofile"), dict),
            f"{where}: explicit ulimits (nproc 1024, nofile)",
        )
        for forbidden in (
            "privileged",
            "devices",
            "pid",
            "ipc",
            "userns_mode",
            "cgroup_parent",
            "network_mode",
        ):
            report.check(not get(forbidden), f"{where}: no {forbidden}")
        report.check(
            all(v.get("read_only") is True for v in _binds(service))
            and not any(isinstance(v, str) for v in get("volumes") or []),
            f"{where}: every mount read-only",
        )
        report.check(
            all("docker.sock" not in str(v) and "podman.sock" not in str(v) for v in get("volumes") or []),
            f"{where}: no engine socket mounted",
        )
        report.check(
            "front" not in (get("networks") or []) or name == "haproxy", f"{where}: not on the front network"
        )
        report.check(
            bool(get("ports")) == (name == "haproxy"),
            f"{where}: {'the' if name == 'haproxy' else 'no'} published port",
        )
        report.check(
            bool(RESTART_POLICY.match(str(get("restart") or ""))),
            f"{where}: restart: on-failure with at most 10 tries",
        )
        build = get("build")
        if isinstance(build, dict):
            base = _expand_default((build.get("args") or {}).get("BASE_IMAGE", ""))
            report.check(
                bool(DIGEST_PINNED.match(str(base))),
                f"{where}: the build's BASE_IMAGE default is digest-pinned",
            )

    ports = services["haproxy"].get("ports") or []
    published = _expand_default(ports[0]) if len(ports) == 1 else ""
    report.check(
        isinstance(published, str) and published.startswith("127.0.0.1:") and published.endswith(":8080"),
        f"{label}: HAProxy publishes one port, on 127.0.0.1 by default",
    )
    report.check(
        any(
            v.get("target") == "/etc/haproxy/mcp-suite.cfg" and v.get("source") == "./haproxy/haproxy.cfg"
            for v in _binds(services["haproxy"])
        ),
        f"{label}: HAProxy runs the shipped template",
    )
    proxy_env = services["haproxy"].get("environment") or {}
    report.check(
        isinstance(proxy_env, dict) and proxy_env.get("MCPLB_RESOLVERS") == "resolv.conf",
        f"{label}: HAProxy keeps resolving the replicas' names (MCPLB_RESOLVERS: resolv.conf)",
    )
    report.check(
        not set(services["haproxy"].get("depends_on") or []) & set(REPLICAS),
        f"{label}: HAProxy does not depend on the replicas (each can be re-created alone)",
    )
    first = services[REPLICAS[0]]
    report.check(
        all(services[r] == first for r in REPLICAS), f"{label}: the three replicas are configured alike"
    )
    env = first.get("environment") or {}
    report.check(first.get("command") == ["serve-http"], f"{label}: the replicas run serve-http")
    report.check(
        env.get("MCP_HTTP_HOST") == "0.0.0.0" and "MCP_HTTP_AUTH" not in env,  # noqa: S104  # the expected value
        f"{label}: the replicas listen on their interface with bearer tokens (no MCP_HTTP_AUTH)",
    )
    report.check(
        "password" not in str(env.get("MCP_SQL_DSN", "")) and "passfile=" in str(env.get("MCP_SQL_DSN", "")),
        f"{label}: the replicas' DSN holds no password (a passfile)",
    )
    report.check(
        set(first.get("networks") or []) == {"mcp", "egress"},
        f"{label}: the replicas are on mcp and egress only",
    )
    check = first.get("healthcheck") or {}
    report.check(
        isinstance(check, dict) and any("/readyz" in str(part) for part in check.get("test") or []),
        f"{label}: each replica's healthcheck asks /readyz",
    )
    template = (HERE / "haproxy" / "haproxy.cfg").read_text(encoding="utf-8")
    report.check(
        "http-check send meth GET uri /readyz " in template,
        f"{label}: HAProxy's health check asks /readyz (a replica none of whose sources serves leaves)",
    )
    report.check(
        any(v.get("target") == "/safe_data_dir" for v in _binds(first)),
        f"{label}: the data folder is mounted",
    )
    report.check(
        any(v.get("target") == "/run/secrets/userlist" for v in _binds(services["pgbouncer"])),
        f"{label}: PgBouncer's userlist is a mounted file",
    )


# --- Containerfile.stack ---------------------------------------------------------------------------


def check_stack_containerfile(text: str, report: Report) -> None:
    label = "Containerfile.stack"
    global_args, stages = parse_containerfile(text)
    report.check(
        bool(DIGEST_PINNED.match(global_args.get("BASE_IMAGE", ""))),
        f"{label}: ARG BASE_IMAGE defaults to a digest-pinned image",
    )
    report.check(
        {s.name for s in stages} == {"pgbouncer", "haproxy"}, f"{label}: targets pgbouncer and haproxy"
    )
    for stage in stages:
        where = f"{label}: {stage.name}"
        runs = " ".join(stage.all("RUN"))
        report.check(stage.base in ("${BASE_IMAGE}", "$BASE_IMAGE"), f"{where}: FROM the BASE_IMAGE argument")
        report.check("--no-install-recommends" in runs, f"{where}: apt-get install --no-install-recommends")
        report.check("chmod a-s" in runs, f"{where}: setuid/setgid bits cleared")
        report.check(stage.all("USER")[-1:] == [UID_GID], f"{where}: USER {UID_GID}")
        entry = stage.all("ENTRYPOINT")[-1:] or [""]
        report.check(entry[0].startswith("["), f"{where}: ENTRYPOINT in exec form")
        report.check(not stage.all("EXPOSE"), f"{where}: no EXPOSE (compose publishes what it must)")


def run_checks(
    containerfile: Path,
    compose: Path,
    profile: Path,
    run_script: Path,
    compose_http: Path = HERE / "compose.http.yaml",
    containerfile_stack: Path = HERE / "Containerfile.stack",
) -> Report:
    report = Report()
    check_containerfile(containerfile.read_text(encoding="utf-8"), report)
    check_compose(compose.read_text(encoding="utf-8"), report)
    profile_text, run_text = profile.read_text(encoding="utf-8"), run_script.read_text(encoding="utf-8")
    check_profile_script(profile_text, run_text, report)
    check_http_profile_script(profile_text, run_text, report)
    check_http_compose(compose_http.read_text(encoding="utf-8"), report)
    check_stack_containerfile(containerfile_stack.read_text(encoding="utf-8"), report)
    return report


def _lines(report: Report) -> Iterator[str]:
    for ok, what in report.results:
        yield f"{'ok  ' if ok else 'FAIL'} {what}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--containerfile", type=Path, default=HERE / "Containerfile")
    parser.add_argument("--compose", type=Path, default=HERE / "compose.yaml")
    parser.add_argument("--profile", type=Path, default=HERE / "profile.sh")
    parser.add_argument("--run-script", type=Path, default=HERE / "run.sh")
    parser.add_argument("--compose-http", type=Path, default=HERE / "compose.http.yaml")
    parser.add_argument("--containerfile-stack", type=Path, default=HERE / "Containerfile.stack")
    args = parser.parse_args(argv)
    report = run_checks(
        args.containerfile,
        args.compose,
        args.profile,
        args.run_script,
        args.compose_http,
        args.containerfile_stack,
    )
    out = sys.stdout
    for line in _lines(report):
        out.write(line + "\n")
    failed = len(report.failures)
    out.write(f"container-offline: {len(report.results) - failed} passed, {failed} failed\n")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
