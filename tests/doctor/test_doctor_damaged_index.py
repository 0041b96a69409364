"""`chinvex doctor` on a damaged hybrid.db: it says how to recover and changes nothing; `--repair`
keeps the damaged file and rebuilds the index from the sources, recovering the rows only hybrid.db
held."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from helpers import assert_no_traceback, run_cli, run_cli_in_process


def _checkpoint(path: Path) -> None:
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()


def _add_knowledge_item(index, content: str) -> str:
    """A RECALL knowledge item as `recall_add` stores it: a row only hybrid.db holds, and its
    memory document."""
    from chinvex.embedding.factory import make_embedder
    from chinvex.memory import indexing as RI
    from chinvex.memory import items as R
    from chinvex.storage import db

    item = R.make_memory("decision", "Falconry storage decision", content, scope="project",
                         tags=["falconry"], metadata={})
    conn = db.connect(Path(index.config.index.sqlite_path))
    try:
        R.insert_memory(conn, item)
        prepared, vectors = RI.prepare_memories([item], make_embedder(index.config.embedding))
        store = index.store()
        RI.write_prepared(conn, store, prepared, vectors)
        R.mark_indexed(conn, [item.item_id])
        conn.execute("INSERT INTO flight_recorder(entry_id, session_id, type, content, created_at) "
                     "VALUES('e1', 's1', 'decision', 'kept the hood', '2026-01-01T00:00:00Z')")
    finally:
        conn.close()
    return item.item_id


def test_damaged_database_is_moved_aside_and_rebuilt_from_the_sources(index):
    """Pages of the chunks table overwritten: doctor says how to recover and changes nothing;
    --repair keeps the damaged file (renamed, byte for byte), rebuilds the index from the
    sources, and recovers the rows no source can give back (knowledge items, flight recorder)."""
    path = Path(index.config.index.sqlite_path)
    item_id = _add_knowledge_item(index, "We keep the gyrfalcon ledger in cold storage, xylofalcon.")
    _checkpoint(path)
    with index.conn() as conn:
        root = conn.execute("SELECT rootpage FROM sqlite_master WHERE name='chunks'").fetchone()[0]
    data = bytearray(path.read_bytes())
    page = 4096
    for offset in range((root - 1) * page + 100, root * page, 7):
        data[offset] = (data[offset] + 91) % 256
    path.write_bytes(bytes(data))
    damaged = path.read_bytes()

    checked = run_cli_in_process("doctor", "--context", "Doc", "--json")
    assert_no_traceback(checked)
    assert checked.code == 1
    integrity = {c["name"]: c for c in checked.json["checks"]}["sqlite_integrity"]
    assert integrity["status"] == "error" and integrity["repairable"]
    assert "doctor --context Doc --repair" in integrity["message"]
    assert path.read_bytes() == damaged  # checking never writes

    result = run_cli_in_process("doctor", "--context", "Doc", "--repair", "--json")
    assert_no_traceback(result)
    assert result.code == 0, result
    kept = [p for p in path.parent.iterdir() if p.name.startswith("hybrid.db.damaged-")
            and not p.name.endswith(("-wal", "-shm"))]
    assert len(kept) == 1 and kept[0].read_bytes() == damaged
    actions = "\n".join(result.json["actions"])
    assert f"moved the damaged index {path} to {kept[0]}" in actions
    assert "rebuilt" in actions and "from the sources" in actions
    assert "1 knowledge items rows" in actions and "1 flight recorder rows" in actions, actions
    report, checks = index.doctor()
    assert report.ok and index.bad(checks) == {}, index.problems(checks)
    with index.conn() as conn:
        assert conn.execute("SELECT indexed_at IS NOT NULL FROM knowledge_items WHERE item_id=?",
                            (item_id,)).fetchone()[0] == 1
    for mode in ("fts", "vector"):
        found = run_cli("search", "--context", "Doc", "gyrfalcon ledger cold storage", "--mode", mode, "--json")
        assert any("xylofalcon" in r["text"] for r in found.json["results"]), (mode, found)
    assert run_cli("search", "--context", "Doc", "betamarker", "--json").json["results"]


def test_truncated_database_gets_recovery_guidance(index):
    path = Path(index.config.index.sqlite_path)
    _checkpoint(path)
    with open(path, "r+b") as handle:
        handle.truncate(path.stat().st_size // 2)
    for args in (("doctor",), ("search", "betamarker"), ("ingest",)):
        result = run_cli(*args, "--context", "Doc")
        assert_no_traceback(result)
        assert result.code == 1, (args, result)
        said = result.stdout + result.stderr
        assert "damaged" in said and "--repair" in said and "rebuilds the index from the sources" in said, (args, said)
