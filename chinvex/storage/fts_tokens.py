"""How hybrid.db's FTS5 index tokenises text, asked of SQLite itself.

`stems_of` runs texts through the `chunks_fts` tokenizer on an in-memory table, so callers agree
with the index about what a word is without a second, hand-written stemmer. `document_frequencies`
reads how many chunks hold each stem through a temporary `fts5vocab` table (temp: it never
writes to the database file).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

TOKENIZER = "porter unicode61 remove_diacritics 2"
"""The tokenizer of `chunks_fts` (see the schema's migrations)."""

BATCH = 500
"""Stems per vocabulary lookup."""


def token_table() -> sqlite3.Connection:
    """An in-memory connection holding an FTS5 table `t` with the index's tokenizer and its
    per-instance vocabulary `v`. One per thread: a connection is not shared across threads."""
    conn = sqlite3.connect(":memory:")
    conn.execute(f"CREATE VIRTUAL TABLE t USING fts5(x, tokenize='{TOKENIZER}')")
    conn.execute("CREATE VIRTUAL TABLE temp.v USING fts5vocab(main, t, instance)")
    return conn


def stems_of(table: sqlite3.Connection, texts: Sequence[str]) -> list[set[str]]:
    """The stems of each text, in order, through a `token_table` (emptied first)."""
    table.execute("DELETE FROM t")
    table.executemany("INSERT INTO t(rowid, x) VALUES (?, ?)", list(enumerate(texts, start=1)))
    found: list[set[str]] = [set() for _ in texts]
    for term, row in table.execute("SELECT term, doc FROM v"):
        found[row - 1].add(term)
    return found


def document_frequencies(conn: sqlite3.Connection, stems: Sequence[str]) -> dict[str, int]:
    """How many chunks of `chunks_fts` hold each stem (0 for one the index has never seen)."""
    conn.execute(
        "CREATE VIRTUAL TABLE IF NOT EXISTS temp.chinvex_answer_vocab "
        "USING fts5vocab(main, chunks_fts, row)"
    )
    df: dict[str, int] = {}
    for start in range(0, len(stems), BATCH):
        batch = list(stems[start:start + BATCH])
        found = dict(conn.execute(
            f"SELECT term, doc FROM temp.chinvex_answer_vocab WHERE term IN ({','.join('?' * len(batch))})",
            batch,
        ).fetchall())
        for stem in batch:
            df[stem] = int(found.get(stem, 0))
    return df
