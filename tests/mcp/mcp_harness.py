"""The MCP test harness: a world of three contexts (payflow, infra, global) built through the CLI,
and a stdio session of `chinvex mcp` driven through the official `mcp` SDK's client."""

from __future__ import annotations

import json
import sqlite3
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import psutil
from helpers import CHINVEX_BIN, assert_no_traceback, run_cli_in_process
from mcp import Client, StdioServerParameters


@dataclass
class World:
    home: Path
    repo: Path
    other: Path
    outside: Path

    def env(self, **extra: str) -> dict[str, str]:
        # Every tool (the default list holds only the core four; test_default_tool_list checks it).
        return {"CHINVEX_HOME": str(self.home), "ANONYMIZED_TELEMETRY": "False", "CHINVEX_MCP_TOOLS": "all",
                **extra}

    def db(self, context: str) -> sqlite3.Connection:
        conn = sqlite3.connect(self.home / "indexes" / context / "hybrid.db")
        conn.row_factory = sqlite3.Row
        return conn


def _cli(world: World, *args: str):
    """A set-up command, run in this process (conftest.run_cli_in_process)."""
    result = run_cli_in_process(*args, env=world.env(CHINVEX_CONTEXT=""))
    assert_no_traceback(result)
    assert result.code == 0, result
    return result


def build_world(tmp_path_factory) -> World:
    """payflow (a small repo), infra (a runbook) and an empty global context, ingested."""
    base = tmp_path_factory.mktemp("mcp_world")
    repo, other, outside = base / "payflow", base / "infra", base / "elsewhere"
    (repo / "src").mkdir(parents=True)
    other.mkdir()
    outside.mkdir()
    (repo / "src" / "retry.py").write_text(textwrap.dedent('''\
        """Retry helpers for the webhook delivery service."""

        import random
        import time


        def backoff_delay(attempt: int, base: float = 0.5, cap: float = 30.0) -> float:
            """Exponential backoff with full jitter, so recovering merchants are not stampeded."""
            return random.uniform(0, min(cap, base * 2 ** attempt))


        def deliver_with_retry(send, payload, attempts: int = 5):
            """Send a webhook payload, retrying transient failures with exponential backoff."""
            for attempt in range(attempts):
                try:
                    return send(payload)
                except ConnectionError:
                    time.sleep(backoff_delay(attempt))
            raise RuntimeError("webhook delivery failed after retries")
        '''), encoding="utf-8")
    (repo / "README.md").write_text(textwrap.dedent("""\
        # Payflow

        Payflow processes card payments and delivers webhooks to merchants.

        ## Idempotency

        Every payment request carries an idempotency key; a repeated key returns the stored
        response instead of charging the card twice.

        ## Settlement

        Settlement batches close at midnight UTC and are reconciled against the acquirer report.
        """), encoding="utf-8")
    (other / "cluster.md").write_text(textwrap.dedent("""\
        # Cluster runbook

        The kubernetes cluster autoscaler adds nodes when pods stay pending for two minutes.
        Drain a node with kubectl drain before rebooting it.
        """), encoding="utf-8")
    world = World(home=base / "home", repo=repo, other=other, outside=outside)
    _cli(world, "context", "create", "payflow", "--repo", str(repo), "--alias", "pf")
    _cli(world, "context", "create", "infra", "--repo", str(other))
    _cli(world, "context", "create", "global")
    _cli(world, "ingest", "--context", "payflow")
    _cli(world, "ingest", "--context", "infra")
    return world


def run_session(world: World, body, *, args: tuple[str, ...] = ("mcp", "--context", "payflow"),
                env: dict[str, str] | None = None, cwd: Path | None = None) -> Any:
    async def main():
        params = StdioServerParameters(command=str(CHINVEX_BIN), args=list(args), env=world.env(**(env or {})),
                                       cwd=str(cwd or world.repo))
        async with Client(params, mode="legacy", read_timeout_seconds=180) as client:
            return await body(client)

    return anyio.run(main)


async def call(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, (tool, result.content[0].text if result.content else result)
    assert json.loads(result.content[0].text) == result.structured_content
    return result.structured_content


async def call_error(client: Client, tool: str, code: str, **arguments: Any) -> str:
    result = await client.call_tool(tool, arguments)
    assert result.is_error, (tool, arguments, result)
    payload = result.structured_content
    assert payload["ok"] is False and payload["error"]["code"] == code, (tool, payload)
    assert json.loads(result.content[0].text) == payload
    return payload["error"]["message"]


def server_pid() -> int:
    children = [p for p in psutil.Process().children(recursive=True)
                if "mcp" in " ".join(p.cmdline())]
    assert len(children) == 1, children
    return children[0].pid


def maps(pid: int) -> str:
    return Path(f"/proc/{pid}/maps").read_text()
