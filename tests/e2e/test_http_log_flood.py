"""An unauthenticated client floods the log of `serve-http` while its stderr is read slowly (a log
shipper that lags, issue 52): the log stays small, and no answered call loses its audit record.
The real process, its real stderr pipe, requests over loopback sockets."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Final

import httpx2

from mcp_suite.protocol.mcp import MODERN_VERSION
from tests.support.client import REPO, server_env
from tests.support.http_server import open_http_server
from tests.support.issuer import free_port

LONG_METHOD: Final = "X" * 15_000
META: Final = {
    "io.modelcontextprotocol/protocolVersion": MODERN_VERSION,
    "io.modelcontextprotocol/clientCapabilities": {},
}
HEADERS: Final = {
    "MCP-Protocol-Version": MODERN_VERSION,
    "Mcp-Method": "tools/call",
    "Mcp-Name": "system_metrics",
}


def call(http: httpx2.Client, url: str, request_id: int) -> httpx2.Response:
    body = {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": "system_metrics", "arguments": {}, "_meta": META},
    }
    return http.post(url, json=body, headers=HEADERS)


def test_a_method_flood_under_a_lagging_stderr_keeps_the_log_small_and_every_answered_call_audited() -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    env = server_env(
        {
            "MCP_HTTP_PORT": str(port),
            "MCP_HTTP_AUTH": "none",
            "MCP_LOG_BUFFER_BYTES": "16384",
            "PYTHONPATH": str(REPO),
        }
    )
    process = subprocess.Popen(
        [sys.executable, "-X", "dev", "-m", "mcp_suite", "serve-http"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
        cwd=REPO,
    )
    assert process.stderr is not None
    lines: list[bytes] = []
    try:
        while True:  # read until it serves, then stop reading: the pipe fills, then the sink
            line = process.stderr.readline()
            assert line, "the server did not start"
            lines.append(line)
            if b"serving over HTTP" in line:
                break
        with httpx2.Client(timeout=30) as http, ThreadPoolExecutor(8) as pool:
            for _ in range(600):  # about 100 kB of refusals: more than the pipe and the sink hold
                refused = http.request(LONG_METHOD, url)
                assert refused.status_code == 405
            # stderr is not read. The refusals' log lines took their half of the sink: calls are
            # still served (their records wait in the other half) until records fill it; then a
            # call is refused, saying why, rather than served unaudited.
            served: list[int] = []
            behind: list[httpx2.Response] = []
            ids = iter(range(1, 10_000))
            while not behind:
                assert len(served) < 1_000, "the sink never filled"
                batch = [next(ids) for _ in range(8)]
                for request_id, answer in zip(
                    batch, pool.map(lambda n: call(http, url, n), batch), strict=True
                ):
                    if answer.status_code == 200:
                        served.append(request_id)
                    else:
                        behind.append(answer)
            for answer in behind:
                assert answer.status_code == 503, answer.content
                assert answer.json()["error"]["data"]["code"] == "MCP_AUDIT_BEHIND"
                assert answer.headers["retry-after"] == "1"
            reader = threading.Thread(target=lambda: lines.extend(process.stderr or ()), daemon=True)
            reader.start()  # the shipper catches up: calls are served again
            deadline = time.monotonic() + 30
            again = 0
            while again < 5:
                assert time.monotonic() < deadline, "the calls were never served again"
                request_id = next(ids)
                answer = call(http, url, request_id)
                if answer.status_code == 200:
                    served.append(request_id)
                    again += 1
                else:
                    assert answer.json()["error"]["data"]["code"] == "MCP_AUDIT_BEHIND"
                    time.sleep(0.05)
    finally:
        process.send_signal(signal.SIGTERM)
        status = process.wait(15)
        if status != os.EX_OK:
            process.stderr.close()
    assert status == os.EX_OK
    reader.join(10)
    process.stderr.close()
    records: list[dict[str, Any]] = [json.loads(line) for line in lines if line.startswith(b"{")]
    audited = {r["id"] for r in records if r.get("event") == "request" and r.get("outcome") == "ok"}
    assert served
    assert set(served) <= audited  # every call answered 200 has its record
    # No line carries the method: its length only; and no line is long.
    assert not [line for line in lines if b"XXXXXXXX" in line]
    assert max(len(line) for line in lines) < 2_000
    assert any("an unknown method (15000 characters)" in r.get("msg", "") for r in records)
    assert any(r.get("msg", "").endswith("log line(s) dropped") for r in records)


def test_a_request_id_of_a_whole_frame_is_cut_in_its_audit_record() -> None:
    long_id = "i" * 500_000
    body = {"jsonrpc": "2.0", "id": long_id, "method": "tools/list", "params": {"_meta": META}}
    headers = {"MCP-Protocol-Version": MODERN_VERSION, "Mcp-Method": "tools/list"}
    with open_http_server(None, {}) as server:
        answer = httpx2.post(server.url, json=body, headers=headers, timeout=30)
        assert answer.status_code == 200
        assert answer.json()["id"] == long_id  # the answer carries it whole: the client's own
        (record,) = server.audit(1)
        lines = server.errlog
        lines.seek(0)
        longest = max(len(line) for line in lines.read().splitlines())
    assert (record["id"], record["id_truncated"]) == ("i" * 64, True)
    assert longest < 2_000
