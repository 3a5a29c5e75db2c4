"""`sandbox_fs_read` benchmarks (docs/performance.md): 4 KiB reads through the full server, 8 in flight (the
median of three runs of 10,000, each printed), and the server's open descriptors before and after
10,000 reads.

Floor measured in the same run: the same fd walk (`fdwalk.read_file` + the UTF-8 decode) called
directly in a loop, without the protocol, the guardrails or the worker thread hop.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from bench.common import INIT, Figure, cpu_seconds, off_the_cpus_of, read_lines, server_env, spawn
from mcp_suite.tools.sandbox_fs_read import fdwalk
from mcp_suite.tools.sandbox_fs_read.policy import decode_text, split_caller_path

FILE = "data/report-4k.txt"
IN_FLIGHT = 8
# The rate is the median of this many back-to-back runs (a moment when the VM is slow costs one run,
# not the figure); all are printed beside it.
RUNS = 3
READS_PER_RUN = 10_000


def _make_root(base: Path) -> Path:
    root = base / "root"
    (root / "data").mkdir(parents=True)
    line = "The quick brown fox jumps over the lazy dog, 0123456789.\n"  # 57 bytes
    text = (line * 72)[:4095] + "\n"
    (root / FILE).write_text(text)
    assert (root / FILE).stat().st_size == 4096
    return root


def _spawn(root: Path) -> subprocess.Popen[bytes]:
    return spawn(server_env(MCP_SAFE_DATA_DIR=str(root), MCP_METRICS_ENABLED="false"))


def _call(request_id: int) -> bytes:
    return (
        b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"sandbox_fs_read",'
        b'"arguments":{"relative_path":"%s","max_bytes":65536}}}\n' % (request_id, FILE.encode())
    )


def _drive(proc: subprocess.Popen[bytes], first_id: int, total: int) -> tuple[float, int]:
    """`total` reads with IN_FLIGHT outstanding; returns (calls per second, error responses)."""
    assert proc.stdin is not None and proc.stdout is not None
    in_fd, out_fd = proc.stdin.fileno(), proc.stdout.fileno()
    buffer = bytearray()
    next_id, last_id = first_id, first_id + total
    errors = received = 0
    start = time.perf_counter()
    batch = b"".join(_call(i) for i in range(next_id, min(next_id + IN_FLIGHT, last_id)))
    next_id += IN_FLIGHT
    os.write(in_fd, batch)
    while received < total:
        lines = read_lines(out_fd, buffer)
        received += len(lines)
        errors += sum(b'"isError":false' not in line for line in lines)
        refill = [_call(i) for i in range(next_id, min(next_id + len(lines), last_id))]
        next_id += len(refill)
        if refill:
            os.write(in_fd, b"".join(refill))
    return total / (time.perf_counter() - start), errors


def _open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def server_figures(root: Path) -> tuple[list[float], int, int, int, float, str]:
    """(reads/s of each run, error responses, fds before and after 10,000 reads, CPU s per read,
    where the server and the client ran)."""
    proc = _spawn(root)
    assert proc.stdin is not None and proc.stdout is not None
    try:
        os.write(proc.stdin.fileno(), INIT)
        reply = json.loads(read_lines(proc.stdout.fileno(), bytearray())[0])
        assert "result" in reply, reply
        # The server has pinned itself by now (before answering): keep this client off its CPU.
        with off_the_cpus_of(proc.pid) as (server_cpus, client_cpus):
            _drive(proc, 1, 2_000)  # warm up: worker threads, caches
            fds_before = _open_fds(proc.pid)
            _, leak_errors = _drive(proc, 10_000, 10_000)
            fds_after = _open_fds(proc.pid)
            cpu_before = cpu_seconds(proc.pid)
            rates: list[float] = []
            errors = leak_errors
            for run in range(RUNS):
                rate, run_errors = _drive(proc, 100_000 * (run + 1), READS_PER_RUN)
                rates.append(rate)
                errors += run_errors
            cpu_per_call = (cpu_seconds(proc.pid) - cpu_before) / (RUNS * READS_PER_RUN)
        where = f"server on CPU {_cpus(server_cpus)}, client on {_cpus(client_cpus)}"
        return rates, errors, fds_before, fds_after, cpu_per_call, where
    finally:
        proc.stdin.close()
        proc.wait(15)
        proc.stdout.close()


def _cpus(cpus: set[int]) -> str:
    return ",".join(str(cpu) for cpu in sorted(cpus)) or "any"


def floor_rate(root: Path, total: int = 50_000) -> float:
    with fdwalk.open_root(root) as opened:
        start = time.perf_counter()
        for _ in range(total):
            found = fdwalk.read_file(opened, split_caller_path(FILE), 65_536, allow_hard_links=False)
            decode_text(found.data, truncated=found.truncated)
        return total / (time.perf_counter() - start)


def run() -> list[Figure]:
    with tempfile.TemporaryDirectory() as scratch:
        root = _make_root(Path(scratch))
        floor = floor_rate(root)
        rates, errors, fds_before, fds_after, cpu_per_call, where = server_figures(root)
        load = os.getloadavg()[0]
    rate = statistics.median(rates)
    runs = ", ".join(f"{value:,.0f}" for value in rates)
    return [
        Figure(
            f"sandbox_fs_read 4 KiB, server, 8 in flight (median of {RUNS})",
            rate,
            "/s",
            ">= 3,000 /s",
            rate >= 3_000 and errors == 0,
            floor,
            note=f"runs: {runs}; {errors} error responses; {where}; "
            f"1-min load {load:.1f} on {os.cpu_count()} CPUs",
        ),
        Figure("fd walk + decode called directly (the floor)", floor, "/s"),
        Figure(
            "server CPU time per read (all threads)",
            cpu_per_call * 1e6,
            "us",
            note="3,000 /s needs <= 333 us of one core",
        ),
        Figure(
            "server open fds: growth over 10,000 reads",
            fds_after - fds_before,
            "fds",
            "== 0",
            fds_after == fds_before,
            note=f"{fds_before} before, {fds_after} after",
        ),
    ]
