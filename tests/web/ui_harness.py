"""The `chinvex ui` test harness: a small real context (notes, a file of code, Codex sessions, a
ChatGPT export), a real `chinvex ui` process serving it (`running_ui`, `serving_ui`), and what
the pages link to. Shared by the tests/web test modules.
"""

from __future__ import annotations

import json
import os
import re
import select
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
from helpers import CHINVEX_BIN, FIXTURES, run_cli

PATCH_THREAD = "0195aaaa-bbbb-7ccc-8ddd-eeeeffff0001"
LONG_THREAD = "0195aaaa-bbbb-7ccc-8ddd-eeeeffff0002"
LONG_EXCHANGES = 130
"""260 turns: three pages of the conversation viewer."""
CLAUDE_SESSION = "4c2ddfdc-b619-4525-8d03-1950fb1b0257"
"""A real Claude Code transcript with an Edit call (tests/fixtures/samples/PROVENANCE.md)."""
HOSTILE = '<script>alert("planted")</script>'


def _rollout(thread: str, items: list[dict], day: str = "2026-03-01") -> str:
    lines = [{"timestamp": f"{day}T10:00:00.000Z", "type": "session_meta",
              "payload": {"id": thread, "timestamp": f"{day}T10:00:00.000Z", "cwd": "/home/dev/shop",
                          "originator": "codex_cli_rs", "cli_version": "0.104.0", "source": "cli",
                          "model_provider": "openai"}}]
    for n, payload in enumerate(items, start=1):
        lines.append({"timestamp": f"{day}T10:{n // 60:02d}:{n % 60:02d}.000Z", "type": "response_item",
                      "payload": payload})
    return "\n".join(json.dumps(line) for line in lines) + "\n"


def _message(role: str, text: str) -> dict:
    kind = "input_text" if role == "user" else "output_text"
    return {"type": "message", "role": role, "content": [{"type": kind, "text": text}]}


def make_corpus(root: Path) -> dict[str, Path]:
    """Notes (one with planted markup), a code file, two Codex sessions (one with a shell call
    and a patch, one of 260 turns), a Claude Code session and a ChatGPT export."""
    notes, repo, codex, chat = root / "notes", root / "repo", root / "codex" / "sessions", root / "chat"
    claude = root / "claude"
    for folder in (notes, repo, codex / "2026" / "03" / "01", chat, claude):
        folder.mkdir(parents=True)
    (notes / "retry.md").write_text(
        "# Webhook retries\n\nThe webhook dispatcher retries failed deliveries with exponential backoff.\n"
        "The first retry waits 2 seconds; each later retry doubles the wait, up to 10 minutes.\n\n"
        "## Idempotency\n\nEvery delivery carries an idempotency key so receivers can drop duplicates.\n")
    (notes / "hostile.md").write_text(f"# Hostile note\n\nThis zanzibar note holds {HOSTILE} and <b>bold</b> "
                                      "markup that must be shown as text.\n")
    (notes / "stale-me.md").write_text("# Stale me\n\nA note the tests change after ingesting it.\n")
    (repo / "backoff.py").write_text(
        '"""Backoff schedule for webhook retries."""\n\n\n'
        "def backoff_seconds(attempt: int) -> float:\n"
        '    """Seconds to wait before retry number `attempt` (1-based)."""\n'
        "    return min(2.0 * 2 ** (attempt - 1), 600.0)\n")
    patch = ("*** Begin Patch\n*** Update File: dispatcher.py\n@@\n-RETRY_CAP_SECONDS = 600\n"
             '+RETRY_CAP_SECONDS = int(os.environ.get("RETRY_CAP_SECONDS", "600"))\n*** End Patch\n')
    day = codex / "2026" / "03" / "01"
    (day / f"rollout-2026-03-01T10-00-00-{PATCH_THREAD}.jsonl").write_text(_rollout(PATCH_THREAD, [
        _message("user", "Make the webhook retry cap configurable in the dispatcher."),
        _message("assistant", "I will read the dispatcher first."),
        {"type": "function_call", "name": "exec_command", "call_id": "call_a",
         "arguments": json.dumps({"cmd": "grep -n RETRY_CAP dispatcher.py"})},
        {"type": "function_call_output", "call_id": "call_a", "output": "Process exited with code 0\nOutput:\n12:RETRY_CAP_SECONDS = 600\n"},
        {"type": "custom_tool_call", "name": "apply_patch", "call_id": "call_b", "input": patch},
        {"type": "custom_tool_call_output", "call_id": "call_b", "output": "Success. Updated the following files:\nM dispatcher.py\n"},
        _message("assistant", "The retry cap now comes from the RETRY_CAP_SECONDS environment variable."),
    ]))
    long_items = []
    for n in range(1, LONG_EXCHANGES + 1):
        long_items.append(_message("user", f"Question {n}: what is the status of migration step {n}?"))
        long_items.append(_message("assistant", f"Migration step {n} is done; the quokka{n} table was copied."))
    (day / f"rollout-2026-03-01T11-00-00-{LONG_THREAD}.jsonl").write_text(_rollout(LONG_THREAD, long_items))
    shutil.copy(FIXTURES / "chatgpt-export" / "chatlore" / "conversations.json", chat / "conversations.json")
    shutil.copy(FIXTURES / "claude-code" / "codemie-code" / "projects" / "-tmp-private" / f"{CLAUDE_SESSION}.jsonl", claude)
    return {"notes": notes, "repo": repo, "codex": codex, "chat": chat, "claude": claude}


@dataclass
class UiRun:
    base: str
    token: str
    home: Path
    env: dict[str, str]
    corpus: dict[str, Path]
    proc: subprocess.Popen
    log: Path
    """The server's stderr."""

    @property
    def url(self) -> str:
        return f"{self.base}/?token={self.token}"

    @property
    def port(self) -> int:
        return int(self.base.rsplit(":", 1)[1])

    def client(self, *, authenticated: bool = True) -> httpx.Client:
        client = httpx.Client(base_url=self.base, follow_redirects=False, timeout=60)
        if authenticated:
            client.cookies.set(f"chinvex_ui_{self.port}", self.token)
        return client

    def config(self):
        from chinvex.context.registry import load_config_file

        return load_config_file(self.home / "contexts" / "web" / "context.json")


def _add_memory(run_home: Path) -> str:
    """One knowledge item, as `recall_add` stores it, with planted markup in its content."""
    from chinvex.context.registry import load_config_file
    from chinvex.memory.items import insert_memory, make_memory
    from chinvex.storage import db

    config = load_config_file(run_home / "contexts" / "web" / "context.json")
    conn = db.connect(Path(config.index.sqlite_path))
    try:
        item = make_memory("decision", "Cap webhook retries", f"Retries stop after 10 minutes. {HOSTILE}",
                           scope="project", tags=["webhooks"], metadata={})
        insert_memory(conn, item)
    finally:
        conn.close()
    return item.item_id


def first_line(proc: subprocess.Popen, timeout: float) -> str:
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], timeout)
    if not ready:
        raise AssertionError(f"chinvex ui printed nothing in {timeout} s")
    return proc.stdout.readline()


@contextmanager
def running_ui(base_dir: Path) -> Iterator[UiRun]:
    """A context "web" over `make_corpus`, ingested, with one memory, served by `chinvex ui
    --port 0 --no-open` until the block ends."""
    corpus = make_corpus(base_dir / "corpus")
    home = base_dir / "home"
    env = {"CHINVEX_HOME": str(home), "ANONYMIZED_TELEMETRY": "False"}
    created = run_cli("context", "create", "web", "--note-root", str(corpus["notes"]), "--repo", str(corpus["repo"]),
                      "--codex-sessions", str(corpus["codex"]), "--chat-root", str(corpus["chat"]),
                      "--claude-sessions", str(corpus["claude"]), env=env)
    assert created.code == 0, created
    config_file = home / "contexts" / "web" / "context.json"
    data = json.loads(config_file.read_text())
    data["codex_appserver"] = {"mode": "off"}  # the rollout files only: no codex binary needed
    config_file.write_text(json.dumps(data))
    ingested = run_cli("ingest", "--context", "web", "--json", env=env)
    assert ingested.json["sources"]["indexed"] >= 7, ingested
    _add_memory(home)
    with serving_ui("web", home, base_dir / "ui-stderr.log", corpus) as run:
        yield run


@contextmanager
def serving_ui(context: str, home: Path, log: Path, corpus: dict[str, Path] | None = None) -> Iterator[UiRun]:
    """`chinvex ui --context CONTEXT --port 0 --no-open` over the contexts of `home`, until the
    block ends; its stderr goes to `log`."""
    env = {"CHINVEX_HOME": str(home), "ANONYMIZED_TELEMETRY": "False"}
    full_env = {k: v for k, v in os.environ.items() if k not in ("CHINVEX_CONTEXT",)}
    full_env.update(env)
    # A file, not a pipe nobody reads, which could fill and block.
    with open(log, "w") as stderr:
        proc = subprocess.Popen([str(CHINVEX_BIN), "ui", "--context", context, "--port", "0", "--no-open"],
                                stdout=subprocess.PIPE, stderr=stderr, text=True, env=full_env)
    try:
        line = first_line(proc, 60)
        match = re.search(r"(http://127\.0\.0\.1:\d+)/\?token=([\w-]+)", line)
        assert match, f"no URL in {line!r}; stderr: {log.read_text()[-2000:]}"
        yield UiRun(base=match.group(1), token=match.group(2), home=home, env=env, corpus=corpus or {}, proc=proc,
                    log=log)
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


def page_links(html: str, css_class: str) -> list[str]:
    return [h.replace("&amp;", "&") for h in re.findall(rf'<a class="{css_class}" href="([^"]+)"', html)]
