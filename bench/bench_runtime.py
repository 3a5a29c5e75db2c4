"""Runtime benchmarks (docs/performance.md): cold start, ping round trips with 32 in flight, idle RSS.

Floors measured in the same run: the bare interpreter's start-up, and a line-echo process driven by
the same client loop (the cost of pipes and the client itself).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time

from bench.common import INIT, Figure, cold_start_ms, read_lines, rss_mb, server_env, spawn

ECHO_FLOOR = (
    "import sys\n"
    "r, w = sys.stdin.buffer, sys.stdout.buffer\n"
    "for line in r:\n"
    "    w.write(line)\n"
    "    w.flush()\n"
)


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
    return figures
