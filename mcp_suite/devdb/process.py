"""Start and stop the harness's server processes (PgBouncer, a standby) the way the cluster does.

`start_service` runs an argv as the cluster's non-root service account when this process is root,
in a session of its own, with the cluster's minimal environment and, when started from the main
thread, the kernel's parent-death signal (so nothing outlives us). `stop_escalating` sends each
signal of a list in turn, waiting a bounded time after each. Development and test harness only.
"""

from __future__ import annotations

import contextlib
import subprocess
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO

from mcp_suite.devdb.cluster import (
    DevDbError,
    _child_env,  # the cluster's own hardening, shared on purpose
    _service_account,
    _set_parent_death_signal,
)

__all__ = ["start_service", "stop_escalating"]


def start_service(
    argv: Sequence[str],
    *,
    cwd: Path,
    output: IO[bytes] | int = subprocess.DEVNULL,
    env: Mapping[str, str] | None = None,
) -> subprocess.Popen[bytes]:
    """`argv` as the service account (when root), stdout and stderr to `output`, stdin closed."""
    uid, gid = _service_account() or (None, None)
    on_main = threading.current_thread() is threading.main_thread()
    try:
        return subprocess.Popen(  # noqa: S603  # the harness's own binaries, fixed argv, no shell
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=output,
            env=dict(env) if env is not None else _child_env(),
            cwd=cwd,
            user=uid,
            group=gid,
            extra_groups=[] if uid is not None else None,
            start_new_session=True,
            preexec_fn=_set_parent_death_signal if on_main else None,  # only calls prctl
        )
    except OSError as exc:
        raise DevDbError(f"could not run {Path(argv[0]).name}: {exc.strerror}") from None


def stop_escalating(proc: subprocess.Popen[bytes], steps: Sequence[tuple[int, float]]) -> None:
    """Send each (signal, seconds to wait) in turn until `proc` has exited."""
    for sig, wait_s in steps:
        if proc.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(sig)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=wait_s)
