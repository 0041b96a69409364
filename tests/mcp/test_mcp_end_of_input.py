"""`chinvex mcp` as a client that writes and leaves sees it, in a real subprocess: a request that
arrives just before the end of input is answered before the server exits (every line is
answered), and a --context naming no context is one warning line on stderr while the server
keeps serving (clients start it before the context may exist)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from helpers import CHINVEX_BIN, indexed_notes

INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "test", "version": "1.0"}}}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def _run(args: list[str], messages: list[dict[str, Any]], home: Path, cwd: Path,
         env: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    """Write every message at once, close stdin, and wait for the server to exit."""
    payload = b"".join(json.dumps(m).encode() + b"\n" for m in messages)
    return subprocess.run([str(CHINVEX_BIN), *args], input=payload, capture_output=True, cwd=cwd, timeout=300,
                          env={**os.environ, "CHINVEX_HOME": str(home), "ANONYMIZED_TELEMETRY": "False",
                               **(env or {})})


def _replies(done: subprocess.CompletedProcess[bytes]) -> dict[Any, dict[str, Any]]:
    return {reply["id"]: reply for reply in map(json.loads, done.stdout.splitlines())}


def test_a_tool_call_just_before_end_of_input_is_answered(tmp_path: Path, chinvex_home: Path):
    """The call needs the embedder (not warmed: CHINVEX_MCP_WARM=0), so it is still running when
    the end of input arrives; the server must not exit before writing its reply."""
    indexed_notes(tmp_path / "notes", "eof", {"retry.md": "# Retries\n\nWebhooks retry with backoff.\n"})
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "chinvex_search", "arguments": {"query": "webhook retry", "k": 1}}}
    done = _run(["mcp", "--context", "eof"], [INIT, INITIALIZED, call], chinvex_home, tmp_path,
                env={"CHINVEX_MCP_WARM": "0"})
    assert done.returncode == 0, done.stderr.decode()
    replies = _replies(done)
    assert set(replies) == {1, 2}, done.stdout.decode() + done.stderr.decode()
    result = replies[2]["result"]
    assert result["isError"] is False and "retry.md" in result["content"][0]["text"]
    assert b"Traceback" not in done.stderr and b"warning" not in done.stderr


def test_an_unknown_context_is_one_warning_line_and_the_server_still_answers(tmp_path: Path, chinvex_home: Path):
    done = _run(["mcp", "--context", "nope"], [INIT], chinvex_home, tmp_path)
    assert done.returncode == 0
    assert _replies(done)[1]["result"]["serverInfo"]["name"] == "chinvex"
    lines = done.stderr.decode().strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("chinvex mcp: warning: context 'nope' (given by --context) does not exist")


def test_an_unknown_context_from_the_environment_is_named_too(tmp_path: Path, chinvex_home: Path):
    done = _run(["mcp"], [], chinvex_home, tmp_path, env={"CHINVEX_CONTEXT": "gone"})
    assert done.returncode == 0 and done.stdout == b""
    assert "context 'gone' (given by CHINVEX_CONTEXT) does not exist" in done.stderr.decode()


def test_a_context_that_exists_gives_no_warning(tmp_path: Path, chinvex_home: Path):
    indexed_notes(tmp_path / "notes", "here", {"a.md": "# A\n\ntext\n"})
    done = _run(["mcp", "--context", "here"], [INIT], chinvex_home, tmp_path, env={"CHINVEX_MCP_WARM": "0"})
    assert done.returncode == 0 and done.stderr == b"", done.stderr.decode()
