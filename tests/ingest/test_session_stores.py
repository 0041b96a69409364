"""Agents' session stores as sources: `chinvex sessions detect`, `--sessions auto|KIND=PATH`
resolved at each ingest, and the watcher following the stores found."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from chinvex.ingest.session_stores import detect, resolve
from chinvex.ingest.watch import may_be_source, source_roots
from helpers import FIXTURES, assert_no_traceback, run_cli_in_process

CLAUDE_SESSION = (FIXTURES / "claude-code/codemie-code/projects/-tmp-private"
                  / "4c2ddfdc-b619-4525-8d03-1950fb1b0257.jsonl")
ROLLOUT = next((FIXTURES / "codex-rollout/generated-0.169.0/legacy/sessions").rglob("*.jsonl"))


def _home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    project = home / ".claude" / "projects" / "-tmp-private"
    project.mkdir(parents=True)
    shutil.copy(CLAUDE_SESSION, project)
    (project / "notes.txt").write_text("not a session")
    return home


def test_detect_names_each_store_present_and_no_other(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    home = _home(tmp_path)
    (home / ".codex").mkdir()  # a Codex home without sessions is not a store holding any
    env = {"HOME": str(home)}
    assert [(s.agent, s.sessions) for s in detect(home, env)] == [("claude_code", 1)]
    rollouts = home / ".codex" / "sessions" / "2026" / "11" / "22"
    rollouts.mkdir(parents=True)
    shutil.copy(ROLLOUT, rollouts)
    found = {s.agent: s for s in detect(home, env)}
    assert set(found) == {"claude_code", "codex"} and found["codex"].path == str(home / ".codex")
    assert found["claude_code"].newest is not None
    # A tool's own override is honoured: CODEX_HOME elsewhere.
    other = tmp_path / "codex-elsewhere"
    shutil.copytree(home / ".codex", other)
    shutil.rmtree(home / ".codex")
    assert {s.path for s in detect(home, {**env, "CODEX_HOME": str(other)}) if s.agent == "codex"} == {str(other)}
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("CODEX_HOME", str(other))
    out = run_cli_in_process("sessions", "detect", "--json")
    assert out.code == 0 and out.json["agents"] == ["claude_code", "codex"]


def test_auto_is_resolved_at_every_ingest(tmp_path: Path, chinvex_home: Path, monkeypatch: pytest.MonkeyPatch):
    home = _home(tmp_path)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CODEX_HOME", raising=False)
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    assert run_cli_in_process("context", "create", "Mine", "--sessions", "auto").code == 0
    first = run_cli_in_process("ingest", "--context", "Mine", "--json")
    assert_no_traceback(first)
    assert first.code == 0 and first.json["sources"]["indexed"] == 1, first
    # Codex installed since: the next run picks its sessions up without any change to the context.
    rollouts = home / ".codex" / "sessions" / "2026" / "11" / "22"
    rollouts.mkdir(parents=True)
    shutil.copy(ROLLOUT, rollouts)
    second = run_cli_in_process("ingest", "--context", "Mine", "--json")
    assert second.code == 0 and second.json["sources"]["indexed"] == 1 and second.json["sources"]["unchanged"] == 1


def test_kind_path_entries_and_their_mistakes(tmp_path: Path, chinvex_home: Path):
    home = _home(tmp_path)
    store = home / ".claude" / "projects"
    made = run_cli_in_process("context", "create", "K", "--sessions", f"claude_code={store}", "--json")
    assert made.code == 0 and made.json["context"]["includes"]["sessions"] == [f"claude_code={store}"]
    assert resolve([f"claude_code={store}"]) == [("claude_code", str(store))]
    for bad, words in (("gemni=/x", "unknown agent 'gemni'"), ("claude_code", "give 'auto' or KIND=PATH"),
                       (f"claude_code={tmp_path / 'nope'}", "does not exist")):
        result = run_cli_in_process("context", "add-source", "K", "--sessions", bad)
        assert result.code == 2 and words in result.stderr and len(result.stderr.strip().splitlines()) == 1, result
    ingest = run_cli_in_process("ingest", "--context", "K", "--json")
    assert ingest.code == 0 and ingest.json["sources"]["indexed"] == 1
    # The non-session file beside the transcript is passed over, not an error.
    assert ingest.json["errors"] == []


def test_watch_follows_the_stores_found(tmp_path: Path, chinvex_home: Path, monkeypatch: pytest.MonkeyPatch):
    home = _home(tmp_path)
    monkeypatch.setenv("HOME", str(home))
    run_cli_in_process("context", "create", "W", "--sessions", "auto")
    from chinvex.context.registry import Registry

    roots = source_roots(Registry().resolve("W"))
    assert roots == [((home / ".claude" / "projects").resolve(), "sessions:claude_code")]
    assert may_be_source(home / ".claude/projects/p/s.jsonl", "sessions:claude_code")
    assert not may_be_source(home / ".claude/projects/p/x.db", "sessions:claude_code")
    assert may_be_source(home / ".local/share/opencode/opencode.db-wal", "sessions:opencode")
    assert not may_be_source(home / ".local/share/opencode/opencode.db-shm", "sessions:opencode")
