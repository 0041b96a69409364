"""A quick check that an embedded store's vectors can be read and searched, for an ingest about
to use a store whose files may have been damaged (a kill while Chroma saved them, bytes written
over them from outside): a count or an id listing is answered from `chroma.sqlite3` alone, so
only reading stored vectors and searching with them shows whether the vector segment is sound.

A few chunks spread over the index are read back and each is searched with its own vector: the
nearest neighbour of a stored vector is itself (or an identical one), at cosine similarity 1.
Files that load but hold garbage (seen: random bytes in `length.bin`) return vectors whose
search finds nothing alike, for every chunk. A sound store can miss one: the graph search is
approximate, and where many chunks share one text (and so one vector) their copies fill each
other's neighbour lists, which can leave another chunk unreachable. Taking that one miss for
damage re-embedded the whole index on every ingest of a context with many identical chunks. So
on a store whose files are as chinvex last left them the probe is lenient: damage is most sampled
vectors missing themselves. On a store whose files changed behind chinvex's back (a kill while
Chroma saved them, bytes written over them) it is strict: one miss is damage, since damage to the
graph's upper levels (`length.bin`) can leave some chunks reachable.
"""

from __future__ import annotations

import math
import sqlite3
from typing import Any

from chinvex.errors import StorageError
from chinvex.storage.vector_errors import is_segment_damage

PROBE_SAMPLE = 5
"""Chunks read back and searched with; spread evenly over the chunk table."""
MIN_SELF_SIMILARITY = 0.98
"""A stored vector's best match scores 1.0 up to float rounding; garbage scores far lower."""


def sample_chunk_ids(conn: sqlite3.Connection, n: int = PROBE_SAMPLE) -> list[str]:
    """Up to `n` chunk ids at evenly spaced positions of the chunk table."""
    total = int(conn.execute("SELECT COUNT(*) FROM chunks").fetchone()[0])
    if total == 0:
        return []
    offsets = sorted({(total - 1) * i // max(1, n - 1) for i in range(n)})
    found: list[str] = []
    for offset in offsets:
        row = conn.execute("SELECT chunk_id FROM chunks ORDER BY rowid LIMIT 1 OFFSET ?",
                           (offset,)).fetchone()
        if row is not None:
            found.append(str(row[0]))
    return found


def unreadable_vectors(store: Any, conn: sqlite3.Connection, *, strict: bool = True) -> str | None:
    """Why the store's vectors cannot be used (Chroma's own words, or what the searches gave
    back), or None when the sampled vectors read back as numbers and find themselves: every one
    of them when `strict`, else most of them. Chunks with no vector in the store are not this
    check's business (the reconciliation embeds them)."""
    ids = sample_chunk_ids(conn)
    if not ids:
        return None
    misses: list[str] = []
    searched = 0
    try:
        vectors = store.embeddings(ids)
        for chunk_id, vector in vectors.items():
            if vector is None or not all(math.isfinite(float(x)) for x in vector):
                return f"the stored vector of chunk {chunk_id} is not a vector of numbers"
            best = max((score for _, score in store.query(vector, 3)), default=None)
            searched += 1
            if best is None or not best >= MIN_SELF_SIMILARITY:
                shown = "nothing" if best is None else f"similarity {best:.2f}"
                misses.append(f"chunk {chunk_id} found {shown}")
    except StorageError as exc:
        if is_segment_damage(exc.message):
            return exc.message
        raise
    if not misses or (not strict and len(misses) * 2 <= searched):
        return None
    return (f"searches with {len(misses)} of {searched} stored vectors did not find them "
            f"({'; '.join(misses)})")
