"""Runtime benchmarks (docs/performance.md): cold start, ping round trips with 32 in flight, idle RSS,
and what each tool family adds to a cold start (docs/performance.md, "Start-up").

Floors measured in the same run: the bare interpreter's start-up, and a line-echo process driven by
the same client loop (the cost of pipes and the client itself).
"""

from __future__ import annotations

import functools
import os
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from bench.common import INIT, REPO, Figure, cold_start_ms, read_lines, rss_mb, server_env, spawn

ECHO_FLOOR = (
    "import sys\n"
    "r, w = sys.stdin.buffer, sys.stdout.buffer\n"
    "for line in r:\n"
    "    w.write(line)\n"
    "    w.flush()\n"
)


# Each family enabled alone (the SQL family needs a database: its imports are measured below, its
# cold start with the role audit is bench_sql's).
FAMILIES: tuple[tuple[str, dict[str, str]], ...] = (
    ("no tools", {"MCP_METRICS_ENABLED": "false"}),
    ("metrics", {}),
    ("files", {"MCP_METRICS_ENABLED": "false", "MCP_SAFE_DATA_DIR": str(REPO / "examples" / "safe_data")}),
)
# What the registry's deferred import loads when the SQL family is enabled.
SQL_FAMILY = "mcp_suite.tools.sql.opener"


def interpreter_floor_ms(runs: int = 15) -> float:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


def _pings(n: int, in_flight: int) -> list[bytes]:
    return [b'{"jsonrpc":"2.0","id":%d,"method":"ping"}\n' % i for i in range(1, n + 1)] + [b""] * in_flight


def round_trips_per_second(proc: subprocess.Popen[bytes], total: int, in_flight: int) -> float:
    assert proc.stdin is not None and proc.stdout is not None
    frames = _pings(total, in_flight)
    out_fd = proc.stdout.fileno()
    in_fd = proc.stdin.fileno()
    buffer = bytearray()
    start = time.perf_counter()
    os.write(in_fd, b"".join(frames[:in_flight]))
    sent = in_flight
    received = 0
    while received < total:
        got = len(read_lines(out_fd, buffer))
        received += got
        batch = b"".join(frames[sent : sent + got])
        sent += got
        if batch:
            os.write(in_fd, batch)
    return total / (time.perf_counter() - start)


def ping_throughput(total: int = 30_000, in_flight: int = 32) -> tuple[float, float]:
    server = spawn(server_env())
    assert server.stdin is not None and server.stdout is not None
    server.stdin.write(INIT)
    read_lines(server.stdout.fileno(), bytearray())
    round_trips_per_second(server, 2_000, in_flight)  # warm up
    rate = round_trips_per_second(server, total, in_flight)
    server.stdin.close()
    server.wait(10)
    server.stdout.close()

    floor = spawn(server_env(), (sys.executable, "-c", ECHO_FLOOR))
    floor_rate = round_trips_per_second(floor, total, in_flight)
    assert floor.stdin is not None and floor.stdout is not None
    floor.stdin.close()
    floor.wait(10)
    floor.stdout.close()
    return rate, floor_rate


def idle_rss_mb() -> float:
    server = spawn(server_env())
    assert server.stdin is not None and server.stdout is not None
    server.stdin.write(INIT)
    buffer = bytearray()
    read_lines(server.stdout.fileno(), buffer)
    # One tools/list: the models and schemas (loaded after the handshake) count as idle memory.
    server.stdin.write(b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}\n')
    read_lines(server.stdout.fileno(), buffer)
    time.sleep(1.0)
    rss = rss_mb(server.pid)
    server.stdin.close()
    server.wait(10)
    server.stdout.close()
    return rss


def _child_cpu_ms(run: Callable[[], object]) -> float:
    """The CPU (user and system) of the one child process `run` starts and waits for: unlike its
    wall-clock time, hardly moved by other work on the machine."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    run()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)) * 1000


def _cpu_to_initialize_ms(env: dict[str, str]) -> float:
    """The server's CPU (user and system, every thread) when its `initialize` answer arrives: the
    warm-up that starts after the answer is left out. It stops on EOF."""
    proc = spawn(env)
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(INIT)
    read_lines(proc.stdout.fileno(), bytearray())
    # Each thread's run time in ns (schedstat), where /proc/<pid>/stat counts 10 ms clock ticks.
    tasks = Path(f"/proc/{proc.pid}/task").iterdir()
    cpu = sum(int((task / "schedstat").read_text().split()[0]) for task in tasks) / 1e6
    proc.stdin.close()
    proc.wait(10)
    proc.stdout.close()
    return cpu


def family_starts(rounds: int = 15) -> list[Figure]:
    """The server's CPU to its `initialize` answer with each family alone, and the CPU a fresh
    process spends importing the SQL family beyond the registry, each against the bare
    interpreter's (the floor). The configurations take turns in each round, so a
    machine's changing load falls on all of them alike."""
    argv = {
        "floor": [sys.executable, "-c", "pass"],
        "registry": [sys.executable, "-c", "import mcp_suite.tools.registry"],
        "sql": [sys.executable, "-c", f"import mcp_suite.tools.registry, {SQL_FAMILY}"],
    }
    samples: dict[str, list[float]] = {name: [] for name in (*argv, *(name for name, _ in FAMILIES))}
    for _ in range(rounds):
        for name, extra in FAMILIES:
            samples[name].append(_cpu_to_initialize_ms(server_env(**extra)))
        for name, command in argv.items():
            run = functools.partial(subprocess.run, command, check=True, env=server_env(), cwd=REPO)
            samples[name].append(_child_cpu_ms(run))
    median = {name: statistics.median(ms) for name, ms in samples.items()}
    floor = median["floor"]
    figures = [
        Figure(f"CPU to the initialize answer, {name} (median of {rounds})", median[name], "ms", floor=floor)
        for name, _ in FAMILIES
    ]
    figures.append(
        Figure(
            f"CPU of importing the SQL family beyond the registry (median of {rounds})",
            median["sql"] - median["registry"],
            "ms",
            floor=floor,
            note=f"registry alone {median['registry']:.1f} ms",
        )
    )
    return figures


def run() -> list[Figure]:
    figures = []
    floor = interpreter_floor_ms()
    cold = cold_start_ms(server_env())
    figures.append(
        Figure(
            "cold start to initialize response (median of 15)", cold, "ms", "<= 250 ms", cold <= 250, floor
        )
    )
    rate, floor_rate = ping_throughput()
    figures.append(
        Figure("ping round trips, 32 in flight", rate, "/s", ">= 10,000 /s", rate >= 10_000, floor_rate)
    )
    rss = idle_rss_mb()
    figures.append(Figure("idle RSS after initialize", rss, "MB", "<= 40 MB", rss <= 40))
    figures.extend(family_starts())
    return figures
