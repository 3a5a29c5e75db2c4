"""`sandbox_fs_read` benchmarks (docs/performance.md): 4 KiB reads through the full server, 8 in flight (the
median of three runs of 10,000, each printed), and the server's open descriptors before and after
10,000 reads.

Measured in the same run: the floor, the same fd walk (`fdwalk.read_file` + the UTF-8 decode) called
directly in a loop, without the protocol, the guardrails or the worker thread hop; and the same
server with each read handed to `trio.to_thread.run_sync` instead (`bench.fs_to_thread`), its runs
alternating with the real server's. The real server must read at least as fast.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from bench.common import INIT, Figure, cpu_seconds, off_the_cpus_of, read_lines, server_env, spawn
from mcp_suite.tools.files import fdwalk
from mcp_suite.tools.files.policy import decode_text, split_caller_path

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


def _spawn_to_thread(root: Path) -> subprocess.Popen[bytes]:
    env = server_env(BENCH_FS_ROOT=str(root), MCP_METRICS_ENABLED="false")
    return spawn(env, (sys.executable, "-m", "bench.fs_to_thread"))


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


@dataclass
class _Server:
    proc: subprocess.Popen[bytes]
    rates: list[float] = field(default_factory=list)
    cpu_s: float = 0.0  # over the timed runs
    errors: int = 0
    where: str = ""

    def handshake(self) -> None:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        os.write(self.proc.stdin.fileno(), INIT)
        reply = json.loads(read_lines(self.proc.stdout.fileno(), bytearray())[0])
        assert "result" in reply, reply

    def drive(self, first_id: int, total: int) -> tuple[float, int]:
        """`_drive`, with this client kept off the CPU the server has pinned itself to."""
        with off_the_cpus_of(self.proc.pid) as (server_cpus, client_cpus):
            self.where = f"on CPU {_cpus(server_cpus)}, client on {_cpus(client_cpus)}"
            return _drive(self.proc, first_id, total)

    def timed_run(self, first_id: int) -> None:
        cpu_before = cpu_seconds(self.proc.pid)
        rate, errors = self.drive(first_id, READS_PER_RUN)
        self.cpu_s += cpu_seconds(self.proc.pid) - cpu_before
        self.rates.append(rate)
        self.errors += errors

    def close(self) -> None:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.close()
        self.proc.wait(15)
        self.proc.stdout.close()


def server_figures(root: Path) -> tuple[_Server, _Server, int, int, str]:
    """(the server, the trio.to_thread one, fds before and after 10,000 reads, where it ran)."""
    server = _Server(_spawn(root))
    to_thread = _Server(_spawn_to_thread(root))
    try:
        for each in (server, to_thread):
            each.handshake()  # each has pinned itself by now (before answering)
            each.drive(1, 2_000)  # warm up: worker threads, caches
        fds_before = _open_fds(server.proc.pid)
        _, server.errors = server.drive(10_000, 10_000)
        fds_after = _open_fds(server.proc.pid)
        for run in range(RUNS):
            # Alternating, each server first in turn, so both meet the VM's slow moments alike.
            for each in (server, to_thread) if run % 2 == 0 else (to_thread, server):
                each.timed_run(100_000 * (run + 1))
        return server, to_thread, fds_before, fds_after, f"server {server.where}"
    finally:
        server.close()
        to_thread.close()


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
        server, to_thread, fds_before, fds_after, where = server_figures(root)
        load = os.getloadavg()[0]
    rate = statistics.median(server.rates)
    to_thread_rate = statistics.median(to_thread.rates)
    errors = server.errors + to_thread.errors
    runs = ", ".join(f"{value:,.0f}" for value in server.rates)
    return [
        Figure(
            f"sandbox_fs_read 4 KiB, server, 8 in flight (median of {RUNS})",
            rate,
            "/s",
            ">= the trio.to_thread server",
            rate >= to_thread_rate and errors == 0,
            floor,
            note=f"runs: {runs}; {errors} error responses; {where}; "
            f"1-min load {load:.1f} on {os.cpu_count()} CPUs",
        ),
        Figure(
            f"the same with trio.to_thread.run_sync (median of {RUNS})",
            to_thread_rate,
            "/s",
            floor=floor,
            note=f"runs: {', '.join(f'{value:,.0f}' for value in to_thread.rates)}; "
            f"the server reads {rate / to_thread_rate:.2f} x as fast",
        ),
        Figure("fd walk + decode called directly (the floor)", floor, "/s"),
        Figure(
            "server CPU time per read (all threads)",
            server.cpu_s / (RUNS * READS_PER_RUN) * 1e6,
            "us",
            note=f"trio.to_thread server: {to_thread.cpu_s / (RUNS * READS_PER_RUN) * 1e6:.0f} us",
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
