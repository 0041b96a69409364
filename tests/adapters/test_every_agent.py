"""Every agent a developer uses, found on its own: a fake home laid out as each tool leaves it,
holding the real samples of tests/fixtures/samples, then

    chinvex context create X --sessions auto --chat-root <claude.ai export> --chat-root <ChatGPT export>
        --repo <repository with Aider and SpecStory histories>
    chinvex ingest

exits 0, `sessions detect` names every agent present and no other, and `chinvex export` holds each
agent's sessions as conversations with user and assistant turns and times. A file that is no
session (a Codex token-usage log, a truncated Gemini session) is skipped with one line."""

from __future__ import annotations

import json
import shutil
import subprocess
import zipfile
from collections import defaultdict
from pathlib import Path

import pytest

from helpers import FIXTURES, assert_no_traceback, run_cli_in_process

S = FIXTURES
CODE_USER = Path(".config/Code/User")
GEMINI = S / "gemini_cli/entireio-cli/tmp/7e8989f71805c3147f6be9b7a71de2a156f8face69f9380beeeb8a777414f21c/chats"
QWEN = S / "qwen_code/hockeyscrapper/projects/c--users-user-se-toolkit-lab-8/chats"
PI = S / "pi/pi-mono/agent/sessions/--Users-user-workspaces-pi-mono--"
STORES: dict[str, list[tuple[Path, Path]]] = {
    # agent -> [(sample file or folder, where the tool keeps it under the home folder)]; the
    # smaller samples, to keep the real embedder's work short
    "claude_code": [(S / "claude-code/codemie-code/projects/-tmp-private", Path(".claude/projects/-tmp-private"))],
    "codex": [(next((S / "codex-rollout/generated-0.169.0/legacy/sessions").rglob("*.jsonl")).parent,
               Path(".codex/sessions/2026/11/22"))],
    "gemini": [(GEMINI / "session-2026-01-10T02-08-faff42ab.json",
                Path(".gemini/tmp/7e8989f7/chats/session-2026-01-10T02-08-faff42ab.json")),
               (S / "gemini_cli/vibecodingtracker/tmp/discordbot", Path(".gemini/tmp/discordbot"))],
    "qwen": [(QWEN / "6af11f56-0827-497c-b897-6069305c5126.jsonl",
              Path(".qwen/projects/c--users-user-se-toolkit-lab-8/chats/6af11f56-0827-497c-b897-6069305c5126.jsonl"))],
    "copilot_cli": [(S / "copilot_cli/vibecodingtracker/session-state", Path(".copilot/session-state"))],
    "copilot_chat": [(S / "vscode_copilot/git-ai/chatSessions", CODE_USER / "workspaceStorage/0f1e2d3c/chatSessions")],
    "cline": [(S / "cline/cline-sdk-cline-repo/data/sessions", Path(".cline/data/sessions"))],
    "roo": [(S / "cline/roo-jsboige-test-leaf-a1/tasks",
             CODE_USER / "globalStorage/rooveterinaryinc.roo-cline/tasks")],
    "opencode": [(S / "opencode/jwp23-dotfiles/storage-1.0.107/storage", Path(".local/share/opencode/storage"))],
    "pi": [(PI / "2025-12-09T00-53-29-825Z_ffae836b-9420-4060-ac13-7745215f90ff.jsonl",
            Path(".pi/agent/sessions/--Users-user-workspaces-pi-mono--/2025-12-09T00-53-29-825Z_ffae836b-9420-4060-ac13-7745215f90ff.jsonl"))],
    "openclaw": [(S / "openclaw/charbi-agent/agents/main/sessions", Path(".openclaw/agents/main/sessions"))],
    "kimi": [(S / "kimi/agent-sessions/kimi-code/sessions", Path(".kimi-code/sessions"))],
    "cursor": [(S / "cursor/microgptjs/chat-logs/02-readme-and-deployment.txt",
                Path(".cursor/projects/Users-user-microgptJS/agent-transcripts/02-readme-and-deployment.txt"))],
}
DETECTED = {"roo": "roo", "openclaw": "openclaw"}
CLAUDE_AI = [{"uuid": "7c1f0b8e-1111-4a4e-9a63-1f2f0c7e9a10", "name": "Vacuum", "created_at": "2024-03-05T17:30:00Z",
              "updated_at": "2024-03-05T17:31:00Z", "account": {"uuid": "a"}, "chat_messages": [
                  {"uuid": "h1", "sender": "human", "text": "Why does autovacuum skip my table?",
                   "created_at": "2024-03-05T17:30:00Z", "attachments": [], "files": []},
                  {"uuid": "a1", "sender": "assistant", "text": "Lower its scale factor.",
                   "created_at": "2024-03-05T17:30:09Z", "attachments": [], "files": []}]}]
"""No real claude.ai export is public (tests/adapters/test_claude_ai.py says more)."""


def _present() -> dict[str, list[tuple[Path, Path]]]:
    from chinvex_adapters.discovery import kinds

    assert set(STORES) <= set(kinds()), set(STORES) - set(kinds())  # every agent has its adapter
    return STORES


def _lay_out(home: Path, stores: dict[str, list[tuple[Path, Path]]]) -> None:
    for pairs in stores.values():
        for src, rel in pairs:
            dest = home / rel
            if src.is_dir():
                shutil.copytree(src, dest, dirs_exist_ok=True)
            else:
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy(src, dest)
    if "copilot_chat" in stores:
        (home / CODE_USER / "workspaceStorage/0f1e2d3c/workspace.json").write_text(
            json.dumps({"folder": "file:///home/user/git-ai"}))


def _repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    shutil.copytree(S / "specstory/getspecstory/specstory-cli", repo)
    aider = next((S / "aider/lemon-squeezer/runs").glob("*wifi-stats*/aider.chat.history.md"))
    shutil.copy(aider, repo / ".aider.chat.history.md")
    (repo / "main.go").write_text("package main\n\nfunc main() {}\n")
    (repo / ".gitignore").write_text(".aider*\n")
    subprocess.run(["git", "-C", str(repo), "init", "-q"], check=True)
    return repo


def _chat_roots(tmp_path: Path) -> tuple[Path, Path]:
    claude = tmp_path / "claude-export" / "data-2026-05-02-batch-0000.zip"
    claude.parent.mkdir()
    with zipfile.ZipFile(claude, "w") as archive:
        archive.writestr("conversations.json", json.dumps(CLAUDE_AI))
        archive.writestr("users.json", json.dumps([{"uuid": "a", "full_name": "A", "email_address": "a@example.com"}]))
    chatgpt = tmp_path / "chatgpt-export"
    chatgpt.mkdir()
    shutil.copy(S / "chatgpt-export/chatlore/conversations.json", chatgpt)
    return claude, chatgpt


def test_every_agent_is_found_read_and_exported(tmp_path: Path, chinvex_home: Path,
                                                 monkeypatch: pytest.MonkeyPatch):
    home = tmp_path / "home"
    stores = _present()
    _lay_out(home, stores)
    # Files that are no sessions sit beside them: one skip line each, never a failed run.
    (home / ".codex/sessions/2026/11/22/usage.jsonl").write_text(
        '{"timestamp": "2026-11-22T00:00:00Z", "type": "event_msg", "payload": {"type": "token_count", "info": null}}\n')
    for var in ("CODEX_HOME", "CLAUDE_CONFIG_DIR", "XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME",
                "GEMINI_CLI_HOME", "COPILOT_HOME", "QWEN_HOME", "QWEN_RUNTIME_DIR", "PI_CODING_AGENT_DIR",
                "OPENCLAW_STATE_DIR", "KIMI_CODE_HOME", "KIMI_SHARE_DIR", "CURSOR_CONFIG_DIR", "GOOSE_PATH_ROOT",
                "CLINE_DIR", "CLINE_DATA_DIR", "APPDATA", "LOCALAPPDATA"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("CHINVEX_CODEX_BIN", "")  # the rollout files, not a server, for this test

    detected = run_cli_in_process("sessions", "detect", "--json")
    assert detected.code == 0, detected
    found = set(detected.json["agents"])
    expected = {DETECTED.get(agent, agent) for agent in stores}
    assert found == expected, (found, expected)

    claude, chatgpt = _chat_roots(tmp_path)
    repo = _repo(tmp_path)
    made = run_cli_in_process("context", "create", "X", "--sessions", "auto", "--chat-root", str(claude),
                              "--chat-root", str(chatgpt), "--repo", str(repo))
    assert made.code == 0, made
    ingest = run_cli_in_process("ingest", "--context", "X", "--json")
    assert_no_traceback(ingest)
    assert ingest.code == 0 and ingest.json["errors"] == [], ingest
    assert any(e["source_uri"].endswith("usage.jsonl") for e in ingest.json["unrecognised"])

    out = tmp_path / "export.jsonl"
    exported = run_cli_in_process("export", "--context", "X", "--out", str(out))
    assert exported.code == 0, exported
    roles: dict[str, set[str]] = defaultdict(set)
    timed: dict[str, bool] = defaultdict(bool)
    for line in out.read_text().splitlines():
        record = json.loads(line)
        if record["kind"] != "document" or record["metadata"].get("doc_type") != "conversation":
            continue
        agent = record["metadata"]["source"]
        for turn in record.get("turns") or []:
            roles[agent].add(turn["role"])
            timed[agent] = timed[agent] or bool(turn.get("ts"))
    wanted = {"claude_code", "cx_sessions_jsonl", "claude_ai", "chatgpt_export", "aider", "specstory",
              *(a for a in stores if a not in ("claude_code", "codex"))}
    missing = {a for a in wanted if not {"user", "assistant"} <= roles.get(a, set())}
    assert not missing, (missing, dict(roles))
    untimed = {a for a in wanted if not timed[a]}
    assert not untimed, untimed
