"""CPU affinity (MCP_CPU_AFFINITY): `single` pins the whole server to one CPU, `off` leaves it be."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.support.client import REPO, server_env
from tests.support.markers import needs_two_cpus

PROGRAM = """
import os
from mcp_suite.runtime.affinity import pin_to_current_cpu
before = os.sched_getaffinity(0)
cpu = pin_to_current_cpu()
print(len(before), cpu, sorted(os.sched_getaffinity(0)))
"""


@needs_two_cpus
def test_pinning_restricts_the_process_to_the_cpu_it_runs_on() -> None:
    out = subprocess.run(
        [sys.executable, "-c", PROGRAM], capture_output=True, check=True, text=True, cwd=REPO
    ).stdout.split(maxsplit=2)
    allowed, cpu, after = int(out[0]), int(out[1]), out[2].strip()
    assert allowed >= 2
    assert after == f"[{cpu}]"


def _server_affinity(setting: str) -> int:
    """How many CPUs a process configured with `MCP_CPU_AFFINITY=setting` may run on."""
    program = (
        "import os, sys\n"
        "from mcp_suite.settings import load_settings\n"
        "from mcp_suite.runtime.affinity import pin_to_current_cpu\n"
        "s = load_settings()\n"
        "if s.cpu_affinity == 'single':\n"
        "    pin_to_current_cpu()\n"
        "print(len(os.sched_getaffinity(0)))\n"
    )
    env = server_env({"MCP_CPU_AFFINITY": setting})
    return int(
        subprocess.run([sys.executable, "-c", program], capture_output=True, check=True, env=env).stdout
    )


@needs_two_cpus
def test_off_leaves_scheduling_to_the_kernel() -> None:
    assert _server_affinity("off") == len(os.sched_getaffinity(0))
    assert _server_affinity("single") == 1


def test_the_real_server_runs_pinned_by_default() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "mcp_suite"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=server_env(),
        cwd=REPO,
    )
    try:
        assert proc.stdin is not None
        assert proc.stdout is not None
        proc.stdin.write(b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n')
        proc.stdin.flush()
        assert proc.stdout.readline() == b'{"jsonrpc":"2.0","id":1,"result":{}}\n'
        expected = 1 if len(os.sched_getaffinity(0)) >= 2 else len(os.sched_getaffinity(0))
        assert len(os.sched_getaffinity(proc.pid)) == expected
    finally:
        proc.communicate(timeout=30)


def test_a_process_already_on_one_cpu_is_left_as_it_is() -> None:
    program = (
        "import os\n"
        "from mcp_suite.runtime.affinity import pin_to_current_cpu\n"
        "cpu = min(os.sched_getaffinity(0))\n"
        "os.sched_setaffinity(0, {cpu})\n"
        "print(pin_to_current_cpu(), sorted(os.sched_getaffinity(0)) == [cpu])\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, check=True, text=True, cwd=REPO
    ).stdout
    assert out == "None True\n"


# The kernel's refusals, played in a child process by replacing the public `os` functions there:
# the server must start unpinned, never fail.
REFUSALS = """
import os, sys
from mcp_suite.runtime.affinity import pin_to_current_cpu

def refuse(*args):
    raise PermissionError("refused by the kernel")

if sys.argv[1] == "get":
    os.sched_getaffinity = refuse
elif sys.argv[1] == "set":
    os.sched_setaffinity = refuse
else:
    del os.sched_setaffinity
print(pin_to_current_cpu())
"""


@needs_two_cpus
@pytest.mark.parametrize("refusal", ["get", "set", "absent"])
def test_a_kernel_that_refuses_or_lacks_affinity_leaves_the_process_unpinned(refusal: str) -> None:
    out = subprocess.run(
        [sys.executable, "-c", REFUSALS, refusal], capture_output=True, check=True, text=True, cwd=REPO
    ).stdout
    assert out == "None\n"
