"""A document produced by several sources: the best copy is indexed, and the document only
leaves the index when no source produces it any more (ChatGPT re-exports are the common case)."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from helpers import run_cli, run_cli_in_process, write_marked_chatgpt_export


def _docs(home: Path) -> dict[str, str]:
    with sqlite3.connect(home / "indexes" / "Chats" / "hybrid.db") as conn:
        return dict(conn.execute("SELECT doc_id, origin_uri FROM documents"))


def _marker_hits(marker: str) -> int:
    found = run_cli("search", "--context", "Chats", marker, "--json", "--mode", "fts").json
    return sum(1 for r in found["results"] if marker in r["text"])


def test_newest_export_wins_and_nothing_is_lost(chinvex_home: Path, tmp_path: Path):
    root = tmp_path / "chats"
    old, new = root / "2025" / "conversations.json", root / "2026" / "conversations.json"
    write_marked_chatgpt_export(old, "oldcopymarker", 1_700_000_000.0)
    write_marked_chatgpt_export(new, "newcopymarker", 1_800_000_000.0)
    assert run_cli_in_process("context", "create", "Chats", "--chat-root", str(root)).code == 0
    first = run_cli_in_process("ingest", "--context", "Chats", "--json")
    assert first.code == 0, first
    docs = _docs(chinvex_home)
    assert len(docs) == 2 and set(docs.values()) == {str(new)}
    assert _marker_hits("newcopymarker") >= 1 and _marker_hits("oldcopymarker") == 0

    # Touching and changing the older export does not let it overwrite the newer copy.
    write_marked_chatgpt_export(old, "oldcopymarker", 1_700_000_001.0)
    os.utime(old, None)
    assert run_cli_in_process("ingest", "--context", "Chats").code == 0
    assert set(_docs(chinvex_home).values()) == {str(new)}

    # Deleting the older export keeps the conversations (the newer export still has them).
    old.unlink()
    assert run_cli_in_process("ingest", "--context", "Chats").code == 0
    assert set(_docs(chinvex_home).values()) == {str(new)}
    assert _marker_hits("newcopymarker") >= 1

    # Bring the old one back, then delete the newer: the old copy is rewritten in the same run.
    write_marked_chatgpt_export(old, "oldcopymarker", 1_700_000_000.0)
    assert run_cli_in_process("ingest", "--context", "Chats").code == 0
    new.unlink()
    summary = run_cli_in_process("ingest", "--context", "Chats", "--json").json
    assert summary["sources"]["reasons"].get("origin_changed") == 1
    assert set(_docs(chinvex_home).values()) == {str(old)}
    assert _marker_hits("oldcopymarker") >= 1 and _marker_hits("newcopymarker") == 0

    # And when no source has them any more, they leave the index.
    old.unlink()
    assert run_cli_in_process("ingest", "--context", "Chats").code == 0
    assert _docs(chinvex_home) == {}
