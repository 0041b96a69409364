"""Checks of the embedder and the vector store: the recorded embedder, every chunk's vector,
and a sample of vectors re-embedded to find stale ones."""

from __future__ import annotations

import sqlite3
from typing import Any

from chinvex.doctor.findings import Findings
from chinvex.doctor.report import Check
from chinvex.errors import ChinvexError
from chinvex.models import ContextConfig
from chinvex.storage import consistency as cons
from chinvex.storage import db


STALE_SAMPLE = 24
STALE_COSINE = 0.98
"""The same text embeds to cosine ~1.0 (0.999+ across batch shapes); a changed header drops it
to ~0.9."""


def check_embedder_and_store(config: ContextConfig, conn: sqlite3.Connection,
                             f: Findings) -> tuple[Check, Any]:
    check = Check("embedder")
    stored = db.get_meta(conn, "embedder")
    try:
        from chinvex.embedding.factory import make_embedder

        configured = make_embedder(config.embedding).name
    except ChinvexError:
        configured = None  # reported by context_config
    store = None
    store_error = None
    from chinvex.storage.vector_errors import (DamagedStoreError, MissingStoreError, ReadOnlyStoreError,
                                               is_damage)
    from chinvex.storage.vectors import VectorStore

    try:
        if db.get_meta(conn, "chroma_collection") is not None:
            store = VectorStore.open(config, conn, create=False)
            f.store = store
    except ReadOnlyStoreError as exc:
        # Not damage: Chroma cannot open a store it may not write. Search answers from the
        # full-text index meanwhile (and says so).
        f.embedder_ok = False
        check.problem("warning", [exc.message], "the Chroma store is read-only, so its vectors "
                      "were not checked (search answers from the full-text index until it is "
                      "writable)", repairable=False)
        return check, None
    except MissingStoreError as exc:
        f.embedder_ok = False
        total = cons.chunk_count(conn)
        return check.problem("error", [exc.message], f"the vector store is missing: none of the "
                             f"{total} chunks has a vector (repair, or a plain 'chinvex ingest', "
                             "embeds them again from hybrid.db)", repairable=True), None
    except DamagedStoreError as exc:
        f.embedder_ok = False
        f.store_damaged = True
        return check.problem("error", [exc.message], "the Chroma store is damaged; repair moves "
                             "it aside (kept) and rebuilds it from hybrid.db", repairable=True), None
    except ChinvexError as exc:
        store_error = exc.message
    problems: list[str] = []
    if stored and configured and stored != configured:
        problems.append(f"vectors come from {stored}, the context is configured for {configured}")
    if store is not None:
        try:
            f.chroma_ids = store.all_ids()
        except Exception as exc:  # a damaged collection: say so instead of failing
            text = getattr(exc, "message", None) or f"{type(exc).__name__}: {exc}"
            if isinstance(exc, DamagedStoreError) or is_damage(text):
                f.embedder_ok = False
                f.store_damaged = True
                return check.problem("error", [f"cannot list vectors ({text})"], "the Chroma store "
                                     "is damaged; repair moves it aside (kept) and rebuilds it "
                                     "from hybrid.db", repairable=True), None
            store_error = f"cannot list vectors ({text})"
    dimension = db.get_meta(conn, "embedding_dimension")
    if store is not None and f.chroma_ids and not store_error:
        try:
            actual = cons.collection_dimension(store, min(f.chroma_ids))
        except Exception:  # an id written by a running ingest after this client loaded
            actual = None
        if dimension and actual is not None and int(dimension) != actual:
            problems.append(f"meta says {dimension} dimensions, the stored vectors have {actual}")
    f.embedder_ok = not problems and not store_error
    if store_error:
        problems.append(f"vector store: {store_error}")
    if problems:
        return check.problem("error", problems, "vectors of another model (or an unreachable "
                             "store) cannot be repaired here: run 'chinvex ingest --context "
                             f"{config.name} --full' to embed everything again",
                             repairable=False), None
    check.message = stored or "no vectors yet"
    return check, store


def check_vectors(conn: sqlite3.Connection, store: Any, f: Findings) -> list[Check]:
    missing_check, orphan_check = Check("vectors_missing"), Check("vectors_orphaned")
    if not f.embedder_ok:
        note = "not checked: see the embedder check"
        missing_check.message = orphan_check.message = note
        return [missing_check, orphan_check]
    in_sqlite = cons.chunk_ids(conn)
    in_chroma = f.chroma_ids
    missing = sorted(in_sqlite - in_chroma)
    orphans = sorted(in_chroma - in_sqlite)
    if missing:
        missing_check.problem("error", missing, f"{len(missing)} chunks have no vector: vector "
                              "search cannot find them (repair embeds them again)",
                              repairable=True)
    else:
        missing_check.message = f"{len(in_sqlite)} chunks, each with its vector"
    if orphans:
        journaled = cons.journaled_vector_ids(conn) & set(orphans)
        if len(journaled) == len(orphans):
            # Upserted by a batch whose SQLite transaction never committed (a killed run): the
            # write journal names them, and the next ingest deletes them before anything else.
            orphan_check.problem("warning", orphans, f"{len(orphans)} vectors of an interrupted "
                                 "ingest's last batch, recorded in its write journal; the next "
                                 "'chinvex ingest' deletes them (so does repair)", repairable=True)
        else:
            note = (f" ({len(journaled)} of them recorded by the interrupted write, which the "
                    "next 'chinvex ingest' deletes too)" if journaled else "")
            orphan_check.problem("error", orphans, f"{len(orphans)} vectors belong to no chunk "
                                 f"(leftovers of an interrupted write; repair deletes them){note}",
                                 repairable=True)
    else:
        orphan_check.message = "every vector belongs to a chunk"
    return [missing_check, orphan_check]


def check_stale_vectors(conn: sqlite3.Connection, config: ContextConfig, store: Any,
                        f: Findings) -> Check:
    """A sample of chunks is embedded again and compared with the stored vectors: a vector that
    no longer describes its chunk's text (kept after the text it was embedded from changed) is
    invisible damage, found by nothing else. Sampled because embedding every chunk again would cost as much as the ingest did."""
    import random

    check = Check("vectors_stale")
    if not f.embedder_ok or store is None or f.ingest_running:
        check.message = "not checked" + (": an ingest is writing" if f.ingest_running else "")
        return check
    ids = sorted(cons.chunk_ids(conn) & f.chroma_ids)
    if not ids:
        check.message = "no vectors to compare"
        return check
    sample = random.Random(len(ids)).sample(ids, min(STALE_SAMPLE, len(ids)))
    try:
        from chinvex.embedding.factory import make_embedder

        rows = [r for r in cons.iter_chunk_rows(conn, sample) if cons.embed_text_of(r) is not None]
        stored = store.embeddings([r["chunk_id"] for r in rows])
        rows = [r for r in rows if r["chunk_id"] in stored]
        fresh = make_embedder(config.embedding).embed_documents([cons.embed_text_of(r) for r in rows])
    except Exception as exc:  # e.g. an Ollama server that is not running
        check.message = f"not checked: cannot embed ({type(exc).__name__}: {exc})"
        return check
    import numpy as np

    stale: list[tuple[str, str]] = []
    for row, vector in zip(rows, fresh):
        old = np.asarray(stored[row["chunk_id"]], dtype=np.float32)
        cosine = float(np.dot(old, vector) / max(float(np.linalg.norm(old) * np.linalg.norm(vector)), 1e-12))
        if cosine < STALE_COSINE:
            stale.append((row["chunk_id"], row["doc_id"]))
    f.stale_docs = sorted({doc for _, doc in stale})
    if stale:
        return check.problem("error", [cid for cid, _ in stale],
                             f"{len(stale)} of {len(rows)} sampled vectors do not match their "
                             "chunk's text (embedded before the text changed); repair embeds the "
                             "chunks of their documents again; run doctor again afterwards, as "
                             "the check is a sample", repairable=True)
    check.message = f"{len(rows)} sampled vectors match their chunks"
    return check
