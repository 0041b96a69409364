"""Recognising Cursor files; the CLI's chat store and broken or locked databases."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path
import pytest
from chinvex.models.sources import SourceError, UnrecognisedSource
from chinvex_adapters.kit import sqlite as kit_sqlite
from helpers import FIXTURES
from cursor_support import (
    ADAPTER,
    JSONL_SESSION,
    README_LOG,
    TWEETS_LOG,
    _cli_store,
    _ide_db,
    _jsonl,
    one,
    parse,
    tools,
)


def test_recognises_cursor_files_and_no_other_agents(tmp_path: Path):
    assert ADAPTER.recognises(README_LOG) and ADAPTER.recognises(TWEETS_LOG)
    assert ADAPTER.recognises(_jsonl(tmp_path / "s.jsonl", JSONL_SESSION))
    assert ADAPTER.recognises(_cli_store(tmp_path / "chats" / "h" / "a" / "store.db"))
    assert ADAPTER.recognises(_ide_db(tmp_path / "User" / "globalStorage" / "state.vscdb"))
    kinds = sorted(p.name for p in FIXTURES.iterdir() if p.is_dir() and p.name != "cursor")
    assert {"claude-code", "codex-rollout", "aider", "specstory", "chatgpt-export"} <= set(kinds)
    others = [p for kind in kinds for p in sorted((FIXTURES / kind).rglob("*")) if p.is_file()]
    assert len(others) > 20
    assert [p for p in others if ADAPTER.recognises(p)] == []


def test_cli_store_follows_the_latest_root(tmp_path: Path):
    cwd = "/home/u/cli_proj"
    path = _cli_store(tmp_path / "chats" / hashlib.md5(cwd.encode()).hexdigest() / "agent" / "store.db")
    doc, report = one(path)
    assert doc.thread_id == "9b2c7f10-1111-4222-8333-444455556666" and doc.title == "Rename helper"
    assert doc.metadata["model"] == "claude-4-sonnet" and doc.metadata["store"] == "cli_store"
    assert doc.metadata["cwd"] == cwd and doc.metadata["cwd_verified"] is True
    assert doc.created_at.isoformat().startswith("2026-06-12")
    texts = [(t.role, t.text, bool(t.meta.get("thinking"))) for t in doc.turns if t.role != "tool"]
    assert texts == [("user", "rename the helper", False), ("assistant", "The helper lives in util.py.", True),
                     ("assistant", "Renaming it.", False), ("assistant", "Renamed; tests pass.", False)]
    shell = tools(doc, "Shell")[0]
    assert shell.text.endswith("Result:\n3 passed") and shell.meta["tool_use_id"] == "call_2"
    edit = tools(doc, "StrReplace")[0].meta["edits"][0]
    assert edit["abs_path"] == "/home/u/cli_proj/util.py" and edit["new_text"] == "def assist"
    assert "an abandoned branch" not in " ".join(t.text for t in doc.turns)
    assert report.counts["system_messages_skipped"] == 1 and report.counts["context_messages"] == 1
    assert report.state is not None  # never compared by a hash of the main file: its log changes


def test_cli_store_without_a_readable_root_reads_blobs_as_written(tmp_path: Path):
    doc, report = one(_cli_store(tmp_path / "store.db", root=False))
    assert doc.metadata["message_order"] == "written" and report.counts["cli_root_missing"] == 1
    assert [t.text for t in doc.turns if t.role == "user"][:2] == ["an abandoned branch", "rename the helper"]


@pytest.mark.parametrize("meta", ["zz-not-hex", "7b2261", json.dumps([1, 2]).encode().hex()])
def test_cli_store_with_bad_meta_is_one_line(tmp_path: Path, meta: str):
    path = _cli_store(tmp_path / "store.db", meta=meta)
    with pytest.raises(UnrecognisedSource, match=r"store\.db: not a cursor-agent store\.db \(meta") as info:
        parse(path)
    assert "\n" not in str(info.value)


def test_broken_databases_are_one_line(tmp_path: Path):
    good = _cli_store(tmp_path / "good" / "store.db")
    cut = tmp_path / "cut" / "store.db"
    cut.parent.mkdir()
    cut.write_bytes(good.read_bytes()[:1500])
    text = tmp_path / "text" / "store.db"
    text.parent.mkdir()
    text.write_text("not a database")
    other = tmp_path / "other" / "store.db"
    other.parent.mkdir()
    sqlite3.connect(other).execute("CREATE TABLE t(x)").connection.commit()
    for path in (cut, text, other):
        with pytest.raises(SourceError) as info:
            parse(path)
        assert str(info.value).startswith(str(path)) and "\n" not in str(info.value)


def test_a_database_held_open_by_a_writer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    path = _cli_store(tmp_path / "store.db")
    writer = sqlite3.connect(path, isolation_level=None)
    writer.execute("PRAGMA journal_mode=WAL")
    writer.execute("BEGIN IMMEDIATE")
    writer.execute("INSERT INTO blobs VALUES('x', 'y')")
    try:
        doc, _ = one(path)  # a reader is not blocked by a write in progress
        assert doc.title == "Rename helper"
    finally:
        writer.execute("COMMIT")
    writer.execute("PRAGMA locking_mode=EXCLUSIVE")
    writer.execute("BEGIN EXCLUSIVE")
    monkeypatch.setattr(kit_sqlite, "BUSY_TIMEOUT_S", 0.05)
    try:
        with pytest.raises(SourceError, match="locked") as info:
            parse(path)
        assert "\n" not in str(info.value) and not isinstance(info.value, UnrecognisedSource)
    finally:
        writer.execute("COMMIT")
        writer.close()
