"""The server's log lines captured in a string, for the tests that read the audit records.

with captured_log_lines() as stream:   # configure_logging("INFO", stream); then restored
    ...
    records = [json.loads(line) for line in stream.getvalue().splitlines()]
"""

from __future__ import annotations

import contextlib
import io
import logging
from collections.abc import Iterator

from mcp_suite.runtime.log_sink import configure_logging, shutdown_logging

__all__ = ["captured_log_lines"]


@contextlib.contextmanager
def captured_log_lines(level: str = "INFO") -> Iterator[io.StringIO]:
    """Log to a string at `level` (as the server does to stderr); afterwards the sink is shut down
    and the loggers' handlers, levels and propagation are what they were."""
    ours, root = logging.getLogger("mcp_suite"), logging.getLogger()
    saved = (ours.handlers[:], ours.level, ours.propagate, root.handlers[:], root.level)
    stream = io.StringIO()
    configure_logging(level, stream)
    try:
        yield stream
    finally:
        shutdown_logging()
        logging.captureWarnings(False)
        ours.handlers[:], ours.level, ours.propagate, root.handlers[:], root.level = saved
