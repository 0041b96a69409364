"""A text embedded once is reused for every later chunk with the same embedded text (vectors are
found by embed hash, chinvex.storage.writer), and finding them stays bounded however often the
text repeats: a chat export whose conversations repeat one short exchange made every batch fetch
every earlier copy, so each batch's lookup grew with the index. Real export, real ingest, real
hybrid.db and Chroma store."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from helpers import run_cli_in_process
from hostile.generate import _tiny_conversations

CONVERSATIONS = 700
"""Seven titles, one exchange: each embedded text repeats a hundred times, over several batches."""


def test_repeated_texts_are_embedded_once_and_looked_up_a_bounded_number_of_times(tmp_path: Path,
                                                                                chinvex_home: Path):
    from chinvex.storage.writer_rows import REUSE_CANDIDATES, ids_with_hashes as _ids_with_hashes

    chat = tmp_path / "chat"
    chat.mkdir()
    (chat / "conversations.json").write_bytes(_tiny_conversations(CONVERSATIONS))
    assert run_cli_in_process("context", "create", "Tiny", "--chat-root", str(chat)).code == 0
    result = run_cli_in_process("ingest", "--context", "Tiny", "--json")
    assert result.code == 0, result
    assert result.json["chunks"]["written"] == CONVERSATIONS
    distinct_titles = 7
    assert result.json["chunks"]["embedded"] <= distinct_titles  # the rest reused a stored vector

    conn = sqlite3.connect(chinvex_home / "indexes" / "Tiny" / "hybrid.db")
    counts = dict(conn.execute("SELECT embed_hash, COUNT(*) FROM chunks GROUP BY embed_hash"))
    assert max(counts.values()) >= 50, "precondition: texts repeated many times"
    found = _ids_with_hashes(conn, [*counts, "0" * 64])
    assert set(found) == set(counts)  # a hash no chunk has is absent
    for embed_hash, ids in found.items():
        oldest = [row[0] for row in conn.execute(
            "SELECT chunk_id FROM chunks WHERE embed_hash=? ORDER BY rowid", (embed_hash,))]
        assert ids == oldest[:REUSE_CANDIDATES]
    assert {h: len(ids) for h, ids in _ids_with_hashes(conn, list(counts), limit=1).items()} == \
        {h: 1 for h in counts}
    conn.close()
