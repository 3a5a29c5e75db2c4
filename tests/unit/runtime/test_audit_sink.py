"""The stderr sink: bounded in bytes, never blocks its caller, batches lines, counts what it had to
drop, never drops an audit record, and says when a request must not start for want of room."""

from __future__ import annotations

import io
import json
import logging
import threading
import time
import warnings
from collections.abc import Iterator

import pytest
import trio

from mcp_suite.runtime.audit_trail import AuditLog
from mcp_suite.runtime.log_sink import (
    JsonLineHandler,
    StderrSink,
    configure_logging,
    shutdown_logging,
    write_line_now,
)
from mcp_suite.settings import AUDIT_SQL_MAX_CHARS, AUDIT_WRITE_WAIT_S
from mcp_suite.tools.sql.statement_log import log_statement


class BlockedStream(io.StringIO):
    """A stderr whose reader has stopped reading: writes block until released."""

    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()
        self.writes = 0

    def write(self, text: str) -> int:
        self.release.wait(timeout=30)
        self.writes += 1
        return super().write(text)


def test_sink_writes_every_line_in_order() -> None:
    stream = BlockedStream()
    stream.release.set()
    sink = StderrSink(stream, capacity_bytes=1_000)
    for n in range(50):
        sink.write_line(f"line {n}")
    sink.close()
    assert stream.getvalue().splitlines() == [f"line {n}" for n in range(50)]
    assert stream.writes <= 50  # batched, never more writes than lines


def test_a_blocked_stderr_never_blocks_the_writer_and_drops_are_counted() -> None:
    stream = BlockedStream()
    # Log lines fill half the bound: eleven lines of `line NNN\n` (9 bytes).
    sink = StderrSink(stream, capacity_bytes=200)
    for n in range(100, 1_100):  # returns at once although nothing can be written
        sink.write_line(f"line {n}")
    held = sink.statistics()
    # The bound counts the batch in the writer's hands too: eleven lines in all, never more.
    assert held.lines_dropped == 1_000 - 11
    assert (held.lines_waiting, held.bytes_waiting) == (11, 99)
    stream.release.set()
    sink.close()
    lines = stream.getvalue().splitlines()
    notice = json.loads(lines[-1])
    assert notice["level"] == "warning"
    assert notice["msg"].endswith("log line(s) dropped")
    assert len(lines) == 11 + 1
    done = sink.statistics()
    # Every line is written or counted as dropped (a notice is not one of them), none is left waiting.
    written = [line for line in lines if line.startswith("line ")]
    assert (done.lines_waiting, len(written) + done.lines_dropped) == (0, 1_000)


def test_the_bound_is_in_bytes_so_one_long_line_cannot_hold_what_many_short_ones_would() -> None:
    stream = BlockedStream()
    sink = StderrSink(stream, capacity_bytes=1_000)
    sink.write_line("x" * 15_000)  # a 15 kB line: over the bound on its own
    sink.write_line("short")
    held = sink.statistics()
    assert (held.lines_dropped, held.lines_waiting, held.bytes_waiting) == (1, 1, 6)
    stream.release.set()
    sink.close()
    assert stream.getvalue().splitlines()[0] == "short"


def test_a_flood_of_log_lines_leaves_half_the_bound_to_audit_records() -> None:
    stream = BlockedStream()
    sink = StderrSink(stream, capacity_bytes=1_000)
    for n in range(1_000):
        sink.write_line(f"refusal {n:04d} " + "." * 30)
    assert sink.statistics().bytes_waiting <= 500
    assert sink.admit()  # the flood took its half: requests are still admitted
    sink.write_line('{"record":1}', keep=True)
    stream.release.set()
    sink.close()
    assert stream.getvalue().splitlines()[-2] == '{"record":1}'  # before the drop notice


def test_an_audit_record_is_never_dropped_and_a_full_sink_admits_no_new_request() -> None:
    stream = BlockedStream()
    sink = StderrSink(stream, capacity_bytes=1_000)
    assert sink.admit()
    for n in range(100):  # the bound is passed: log lines go, records stay
        sink.write_line(f"log {n:03d} " + "." * 50)
        sink.write_line(f'{{"record":{n}}}', keep=True)
    full = sink.statistics()
    assert full.bytes_waiting > 1_000
    assert full.lines_dropped > 0
    assert not sink.has_room()
    assert (sink.admit(), sink.admit()) == (False, False)
    assert sink.statistics().requests_refused == 2
    stream.release.set()
    sink.close()
    lines = stream.getvalue().splitlines()
    assert [line for line in lines if line.startswith('{"record"')] == [
        f'{{"record":{n}}}' for n in range(100)
    ]
    written_logs = [line for line in lines if line.startswith("log ")]
    assert len(written_logs) + full.lines_dropped == 100
    assert (sink.statistics().bytes_waiting, sink.has_room()) == (0, True)


def test_a_tool_s_audit_event_is_kept_as_a_record_is_and_a_plain_log_line_is_not() -> None:
    stream = BlockedStream()
    sink = StderrSink(stream, capacity_bytes=400)
    handler = JsonLineHandler(sink)
    sink.write_line("z" * 195)  # the log lines' half of the bound is nearly full
    plain = logging.LogRecord("mcp_suite", logging.INFO, "", 0, "a plain line", None, None)
    event = logging.LogRecord("mcp_suite.audit", logging.INFO, "", 0, "statement", None, None)
    event.json_line = '{"event":"statement"}'
    handler.emit(plain)
    handler.emit(event)
    assert sink.statistics().lines_dropped == 1
    stream.release.set()
    sink.close()
    assert stream.getvalue().splitlines()[1] == '{"event":"statement"}'


async def test_a_stdio_reader_held_back_by_a_full_sink_goes_on_once_stderr_is_read() -> None:
    stream = BlockedStream()
    configure_logging("INFO", stream=stream, buffer_bytes=16_384)
    try:
        audit = AuditLog()
        for n in range(1_000):
            audit.request(request_id=n, method="tools/call", outcome="ok", started=time.perf_counter())
        assert not audit.admit()
        with trio.move_on_after(0.5) as waiting:
            await audit.wait_room()
        assert waiting.cancelled_caught  # stderr is not read: no room, the reader waits
        stream.release.set()
        with trio.fail_after(10):
            await audit.wait_room()
        assert audit.admit()
        assert len(stream.getvalue().splitlines()) == 1_000
    finally:
        shutdown_logging()


@pytest.mark.parametrize(
    ("created", "expected"),
    [
        (0.0, "1970-01-01T00:00:00.000Z"),
        (1.999, "1970-01-01T00:00:01.999Z"),  # milliseconds are cut, not rounded into the next second
        (86_399.75, "1970-01-01T23:59:59.750Z"),
        (86_400.0, "1970-01-02T00:00:00.000Z"),  # across midnight
        (1_700_000_000.5, "2023-11-14T22:13:20.500Z"),
    ],
)
def test_timestamps_are_utc_iso_8601_to_the_millisecond(created: float, expected: str) -> None:
    stream = io.StringIO()
    sink = StderrSink(stream)
    record = logging.LogRecord("mcp_suite", logging.INFO, __file__, 1, "a line", None, None)
    record.created = created
    JsonLineHandler(sink).emit(record)
    sink.close()
    assert json.loads(stream.getvalue())["ts"] == expected


@pytest.fixture
def logging_restored() -> Iterator[None]:
    """`configure_logging` rewires the `mcp_suite` logger: put it back as the other tests expect."""
    ours, root = logging.getLogger("mcp_suite"), logging.getLogger()
    saved = (ours.handlers[:], ours.level, ours.propagate, root.handlers[:], root.level)
    yield
    shutdown_logging()
    logging.captureWarnings(False)
    ours.handlers[:], ours.level, ours.propagate, root.handlers[:], root.level = saved


@pytest.mark.usefixtures("logging_restored")
def test_audit_lines_are_compact_ascii_json_with_an_ascii_excerpt() -> None:
    stream = io.StringIO()
    configure_logging("INFO", stream)
    try:
        AuditLog().request(
            request_id="caf\u00e9",
            method="tools/call",
            outcome="ok",
            started=time.perf_counter(),
            tool="t",
            arguments={"k": "\u2603"},
            incident=None,
        )
    finally:
        shutdown_logging()
    (line,) = stream.getvalue().splitlines()
    assert line.isascii()
    assert ": " not in line
    assert ", " not in line
    event = json.loads(line)
    assert event["id"] == "caf\u00e9"
    assert event["args_excerpt"] == '{"k":"\\u2603"}'
    assert event["ts"].endswith("Z")


@pytest.mark.usefixtures("logging_restored")
def test_libraries_records_and_python_warnings_are_json_lines_too() -> None:
    stream = io.StringIO()
    configure_logging("INFO", stream)
    try:
        logging.getLogger("psycopg.pool").error("error connecting in %r", "mcp-suite-sql")
        logging.getLogger("some.library").info("chatter below WARNING stays out")
        with warnings.catch_warnings():
            warnings.simplefilter("always")
            warnings.warn("a library's deprecation", DeprecationWarning, stacklevel=1)
    finally:
        shutdown_logging()
    events = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert [(e["logger"], e["level"]) for e in events] == [
        ("psycopg.pool", "error"),
        ("py.warnings", "warning"),
    ]
    assert "a library's deprecation" in events[1]["msg"]


@pytest.mark.usefixtures("logging_restored")
def test_a_statement_is_audited_with_its_text_up_to_the_bound_rows_duration_and_outcome() -> None:
    stream = io.StringIO()
    configure_logging("INFO", stream)
    long_sql = "SELECT " + ", ".join(f"{n} AS c{n}" for n in range(2_000))
    try:
        log_statement(tool="read_only_sql", sql="SELECT 1", outcome="ok", started=time.perf_counter(), rows=1)
        log_statement(
            tool="read_only_sql",
            sql=long_sql,
            outcome="query-violation",
            started=time.perf_counter(),
            rows=None,
        )
    finally:
        shutdown_logging()
    short, cut = (json.loads(line) for line in stream.getvalue().splitlines())
    assert (short["event"], short["logger"], short["level"]) == ("statement", "mcp_suite.audit", "info")
    assert (short["sql"], short["rows"], short["outcome"]) == ("SELECT 1", 1, "ok")
    assert short["duration_ms"] >= 0
    assert "sql_truncated" not in short
    assert cut["sql"] == long_sql[:AUDIT_SQL_MAX_CHARS]
    assert cut["sql_truncated"] is True
    assert cut["sql_chars"] == len(long_sql)
    assert (cut["rows"], cut["outcome"]) == (None, "query-violation")


def test_a_line_written_before_logging_runs_is_one_json_object_with_its_fields(
    capsys: pytest.CaptureFixture[str],
) -> None:
    write_line_now("critical", "refusing to start: a reason", exit_status=78)
    (line,) = capsys.readouterr().err.splitlines()
    event = json.loads(line)
    assert (event["level"], event["logger"], event["exit_status"]) == ("critical", "mcp_suite", 78)
    assert event["msg"] == "refusing to start: a reason"


def test_a_waiter_is_called_back_once_its_line_and_every_earlier_one_are_written() -> None:
    stream = BlockedStream()
    sink = StderrSink(stream, capacity_bytes=1_000)
    tickets = [sink.write_line(f"line {n}") for n in range(3)]
    assert tickets == [1, 2, 3]
    called = threading.Event()
    seen: list[str] = []

    def told() -> None:
        seen.append(stream.getvalue())
        called.set()

    sink.when_written(tickets[1], told)
    assert not called.wait(0.2)  # the stream is blocked: nothing is out, nobody is told
    stream.release.set()
    assert called.wait(5)
    assert seen[0].splitlines()[:2] == ["line 0", "line 1"]
    late: list[int] = []
    sink.when_written(tickets[0], lambda: late.append(1))  # already out: called at once
    assert late == [1]
    sink.close()


async def test_an_http_answer_waits_for_its_audit_record_but_not_for_a_stderr_nobody_reads() -> None:
    stream = BlockedStream()
    configure_logging("INFO", stream=stream)
    try:
        audit = AuditLog()
        ticket = audit.request(request_id=1, method="tools/list", outcome="ok", started=time.perf_counter())
        assert ticket is not None
        started = trio.current_time()
        with trio.fail_after(AUDIT_WRITE_WAIT_S + 1):
            await audit.wait_written(ticket)  # the stream is blocked: gives up after the bound
        assert trio.current_time() - started >= AUDIT_WRITE_WAIT_S
        assert stream.writes == 0
        stream.release.set()
        second = audit.request(request_id=2, method="tools/list", outcome="ok", started=time.perf_counter())
        with trio.fail_after(5):
            await audit.wait_written(second)
        assert [json.loads(line)["id"] for line in stream.getvalue().splitlines()] == [1, 2]
    finally:
        shutdown_logging()


@pytest.mark.parametrize(
    ("request_id", "logged", "cut"),
    [
        ("x" * 100_000, "x" * 64, True),
        (10**500, "1" + "0" * 63, True),
        ("x" * 64, "x" * 64, False),
        (7, 7, False),
        (None, None, False),
    ],
)
def test_a_request_s_id_is_the_client_s_choice_and_a_long_one_is_cut_in_its_record(
    request_id: object, logged: object, cut: bool
) -> None:
    stream = io.StringIO()
    configure_logging("INFO", stream=stream)
    try:
        AuditLog().request(request_id=request_id, method="ping", outcome="ok", started=time.perf_counter())
    finally:
        shutdown_logging()
    (line,) = stream.getvalue().splitlines()
    record = json.loads(line)
    assert (record["id"], record.get("id_truncated", False)) == (logged, cut)
    assert len(line) < 1_000
