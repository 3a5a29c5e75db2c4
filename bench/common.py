"""Shared shape of every benchmark: a figure, its target, and how it compares.

Benchmarks report ratios against a floor measured in the same run where one exists (STYLE habit 10);
absolute targets from the issues are printed beside the figure. Nothing here is asserted by tests.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import select
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "INIT",
    "REPO",
    "SERVER_ARGV",
    "Figure",
    "cold_start_ms",
    "cpu_seconds",
    "median_seconds",
    "npm_ci_once",
    "off_the_cpus_of",
    "peak_of",
    "process_tree",
    "read_lines",
    "rss_mb",
    "rss_mb_of",
    "server_env",
    "spawn",
    "stop",
    "tree_cpu_seconds",
]

REPO = Path(__file__).resolve().parents[1]
SERVER_ARGV = (sys.executable, "-m", "mcp_suite")
# The handshake every benchmark sends first; it is answered by exactly one line.
INIT = (
    b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25",'
    b'"capabilities":{},"clientInfo":{"name":"bench","version":"0"}}}\n'
    b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n'
)


def server_env(**extra: str) -> dict[str, str]:
    """This process's environment without any MCP_* setting, logs at WARNING, plus `extra`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MCP_")}
    env["MCP_LOG_LEVEL"] = "WARNING"
    env.update(extra)
    return env


def spawn(env: dict[str, str], argv: tuple[str, ...] | list[str] = SERVER_ARGV) -> subprocess.Popen[bytes]:
    """The server (or `argv`) as a child over unbuffered pipes; stderr is discarded."""
    return subprocess.Popen(
        list(argv),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
        cwd=REPO,
        bufsize=0,
    )


def read_lines(fd: int, buffer: bytearray, want: int = 1) -> list[bytes]:
    """Block until at least `want` whole lines are buffered; return them all, keep the rest."""
    while buffer.count(b"\n") < want:
        select.select([fd], [], [], 10)
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            raise EOFError("the server closed its output")
        buffer += chunk
    end = buffer.rfind(b"\n") + 1
    lines = bytes(buffer[:end]).splitlines()
    del buffer[:end]
    return lines


@contextlib.contextmanager
def off_the_cpus_of(pid: int) -> Iterator[tuple[set[int], set[int]]]:
    """Run this process (the load generator) only on CPUs that process `pid` is not allowed on.

    The server pins itself to the one CPU it started on (MCP_CPU_AFFINITY=single). A client the
    kernel happens to place on that same CPU takes its time from the server, and a throughput figure
    then measures the two together, by chance. Yields (the server's CPUs, this process's CPUs
    meanwhile): unchanged when the server may use every CPU, both empty where affinity is not
    available. Restored on exit.
    """
    if not hasattr(os, "sched_setaffinity"):
        yield set(), set()
        return
    mine = os.sched_getaffinity(0)
    theirs = os.sched_getaffinity(pid)
    others = mine - theirs
    if not others:
        yield theirs, mine
        return
    os.sched_setaffinity(0, others)
    try:
        yield theirs, others
    finally:
        os.sched_setaffinity(0, mine)


def cold_start_ms(env: dict[str, str], runs: int = 15, argv: tuple[str, ...] = SERVER_ARGV) -> float:
    """Median milliseconds from starting the process to its answer to `initialize`."""
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        proc = spawn(env, argv)
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(INIT)
        read_lines(proc.stdout.fileno(), bytearray())
        samples.append((time.perf_counter() - start) * 1000)
        proc.stdin.close()
        proc.wait(10)
        proc.stdout.close()
    return statistics.median(samples)


@dataclass(frozen=True, slots=True)
class Figure:
    name: str
    value: float
    unit: str
    target: str = ""  # e.g. "<= 250 ms"
    ok: bool | None = None  # None: informational
    floor: float | None = None  # the same work measured without the server, same run
    note: str = ""

    def line(self) -> str:
        verdict = {True: "PASS", False: "MISS", None: "    "}[self.ok]
        ratio = ""
        if self.floor:
            ratio = f"  (x{self.value / self.floor:.2f} of floor {self.floor:,.3f} {self.unit})"
        target = f"  target {self.target}" if self.target else ""
        note = f"  [{self.note}]" if self.note else ""
        return f"{verdict}  {self.name:<58} {self.value:>12,.3f} {self.unit}{target}{ratio}{note}"


def median_seconds(fn: Callable[[], object], runs: int) -> float:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def cpu_seconds(pid: int) -> float:
    """User + system CPU time process `pid` has used (load-independent, unlike calls per second)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mb(pid: int) -> float:
    """Resident memory of process `pid` now, in MB; 0.0 once it has gone."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0.0
    return next((int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:")), 0) / 1024


def process_tree(pid: int) -> list[int]:
    """Process `pid` and every live descendant of it."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue  # gone meanwhile
            children.setdefault(parent, []).append(int(entry.name))
    tree, todo = [], [pid]
    while todo:
        tree.append(todo.pop())
        todo += children.get(tree[-1], [])
    return tree


def tree_cpu_seconds(pid: int) -> float:
    """User + system CPU time of `pid`'s process tree, with the children it has already reaped."""
    total = 0.0
    for member in process_tree(pid):
        with contextlib.suppress(OSError):
            fields = Path(f"/proc/{member}/stat").read_text().rsplit(")", 1)[1].split()
            total += sum(int(f) for f in fields[11:15]) / os.sysconf("SC_CLK_TCK")
    return total


def rss_mb_of(pids: Iterable[int]) -> float:
    """Resident memory of the processes `pids` now, in MB (a process tree: `process_tree`, which
    reads all of /proc and is too slow to call while sampling)."""
    return sum(rss_mb(pid) for pid in pids)


@contextlib.contextmanager
def peak_of(measure: Callable[[], float], every: float = 0.02) -> Iterator[list[float]]:
    """Samples `measure()` every `every` seconds while the block runs; the list's maximum is the peak."""
    peak = [measure()]
    stop = threading.Event()

    def sample() -> None:
        while not stop.wait(every):
            peak.append(measure())

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        yield peak
    finally:
        stop.set()
        sampler.join()


def npm_ci_once(
    source: Path, name: str, files: tuple[str, ...] = ("package.json", "package-lock.json")
) -> Path:
    """The npm lock in `source` installed (`npm ci`) into `.venv/npm/<name>-<digest of the lock>`,
    once per lock; returns that directory. Without npm it fails saying what to install."""
    digest = hashlib.sha256(b"".join((source / f).read_bytes() for f in files)).hexdigest()[:16]
    home = REPO / ".venv" / "npm" / f"{name}-{digest}"
    if (home / "node_modules").is_dir():
        return home
    npm = shutil.which("npm")
    if npm is None:
        raise RuntimeError(
            f"{name} needs Node.js and npm (`make system-packages`; Debian: apt-get install nodejs npm)"
        )
    home.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=home.parent) as staging:
        for f in files:
            shutil.copy(source / f, Path(staging) / f)
        sys.stderr.write(f"installing {source.relative_to(REPO)} with npm ci (first use)\n")
        env = {**os.environ, "npm_config_update_notifier": "false"}
        cmd = [npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"]
        subprocess.run(cmd, cwd=staging, check=True, timeout=1_800, env=env)
        # A finished install appears at once (another run may have finished first: keep that one).
        with contextlib.suppress(OSError):
            Path(staging).rename(home)
    if not (home / "node_modules").is_dir():
        raise RuntimeError(f"npm ci of {source} left no node_modules in {home}")
    return home


def stop(proc: subprocess.Popen[bytes]) -> None:
    """End a server started by `spawn` the way a client does (its input closed), killed after 10 s."""
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.close()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    proc.stdout.close()
