"""Run the demo's server processes (PostgreSQL; the test harness's PgBouncer and standby too) and stop them.

`start_service` runs an argv as the non-root service account `mcp-devdb` when this process is root,
in a session of its own, with a minimal environment and, when started from the main thread, the
kernel's parent-death signal (so nothing outlives us). `stop_escalating` sends each signal of a
list in turn, waiting a bounded time after each. Never imported by the server itself.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import pwd
import shutil
import signal
import subprocess
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Final

__all__ = [
    "SERVICE_USER",
    "DevDbError",
    "child_env",
    "run_service",
    "service_account",
    "start_service",
    "stop_escalating",
]

SERVICE_USER: Final = "mcp-devdb"  # the non-root account the servers run as when we are root
_PR_SET_PDEATHSIG: Final = 1


class DevDbError(Exception):
    """The throwaway cluster (or a server beside it) could not be created, started or used."""


def service_account() -> tuple[int, int] | None:
    """(uid, gid) to run the server as, or None when we are not root (run as ourselves).

    PostgreSQL refuses to run as root; the account is created (system user, no login shell, no
    home) if missing.
    """
    if os.geteuid() != 0:
        return None
    try:
        entry = pwd.getpwnam(SERVICE_USER)
    except KeyError:
        useradd = shutil.which("useradd", path="/usr/sbin:/sbin:/usr/bin:/bin") or "useradd"
        subprocess.run(  # noqa: S603  # fixed argv, no shell; the name is a constant
            [
                useradd,
                "--system",
                "--user-group",
                "--no-create-home",
                "--home-dir",
                "/nonexistent",
                "--shell",
                "/usr/sbin/nologin",
                SERVICE_USER,
            ],
            check=False,
            capture_output=True,
        )
        try:
            entry = pwd.getpwnam(SERVICE_USER)
        except KeyError:
            raise DevDbError(f"could not create the system user {SERVICE_USER!r}") from None
    return entry.pw_uid, entry.pw_gid


def child_env() -> dict[str, str]:
    # A server gets a minimal environment: none of our MCP_* settings, DSNs or PG* variables.
    return {"PATH": "/usr/bin:/bin", "LC_ALL": "C", "LANG": "C", "TZ": "UTC"}


def _set_parent_death_signal() -> None:  # runs in the forked child, before exec
    # If the thread that started the server dies (process exit, even SIGKILL), the kernel sends
    # SIGINT (PostgreSQL's fast shutdown). Never leave a server running behind us.
    with contextlib.suppress(Exception):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGINT, 0, 0, 0)


def start_service(
    argv: Sequence[str],
    *,
    cwd: Path,
    output: IO[bytes] | int = subprocess.DEVNULL,
    env: Mapping[str, str] | None = None,
) -> subprocess.Popen[bytes]:
    """`argv` as the service account (when root), stdout and stderr to `output`, stdin closed."""
    uid, gid = service_account() or (None, None)
    # The parent-death signal ties the server to the thread that starts it: only set it from the
    # main thread (a worker thread may end long before the process).
    on_main = threading.current_thread() is threading.main_thread()
    try:
        return subprocess.Popen(  # noqa: S603  # the harness's own binaries, fixed argv, no shell
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=output,
            env=dict(env) if env is not None else child_env(),
            cwd=cwd,
            user=uid,
            group=gid,
            extra_groups=[] if uid is not None else None,
            start_new_session=True,
            preexec_fn=_set_parent_death_signal if on_main else None,  # only calls prctl
        )
    except OSError as exc:
        raise DevDbError(f"could not run {Path(argv[0]).name}: {exc.strerror}") from None


def run_service(
    argv: Sequence[str], *, cwd: Path, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[bytes]:
    """`argv` run to its end as `start_service` runs it, its stdout and stderr captured."""
    proc = start_service(argv, cwd=cwd, output=subprocess.PIPE, env=env)
    out, err = proc.communicate()
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def stop_escalating(proc: subprocess.Popen[bytes], steps: Sequence[tuple[int, float]]) -> None:
    """Send each (signal, seconds to wait) in turn until `proc` has exited."""
    for sig, wait_s in steps:
        if proc.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(sig)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=wait_s)
