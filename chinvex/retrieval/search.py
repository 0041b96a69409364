"""Hybrid search over one or several contexts (DESIGN.md §6).

`Searcher` keeps connections, vector stores and embedders warm between queries (the MCP server
holds one for its lifetime). A context whose vectors are missing or whose embedder cannot run
still answers from FTS, and says so in `stats.warnings`: it never pretends to be hybrid.

Searches run while another process ingests. Each context is searched inside one SQLite read
transaction, so FTS hits, scores and result rows all come from one committed state; a vector
hit whose chunk is not in that state (Chroma is written before SQLite) is dropped. The vector
store reloads itself when another process wrote to it (see chinvex/storage/vectors.py), so a
warm searcher sees what a later ingest committed.
"""

from __future__ import annotations

import fnmatch
import os
import re
import sqlite3
import stat
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import orjson

from chinvex.errors import ChinvexError, StorageError
from chinvex.models import ContextConfig, Freshness, Range, Scores, SearchResponse, SearchResult, SearchStats
from chinvex.retrieval.fusion import Candidate, fuse
from chinvex.retrieval.lexical import fts_match_expression, query_terms
from chinvex.storage import db

DEFAULT_FTS_DEPTH = 50
DEFAULT_VECTOR_DEPTH = 50
MAX_K = 200
STORE_RETRY_SECONDS = 5.0
"""A store that could not be opened is tried again after this long (an ingest may create it),
not on every query (opening costs far more than a query)."""
Mode = Literal["hybrid", "fts", "vector"]


class RetrievalError(ChinvexError):
    code = "RETRIEVAL_ERROR"


@dataclass
class SearchRequest:
    query: str
    k: int = 8
    source_types: list[str] | None = None
    path_glob: str | None = None
    since: str | None = None
    until: str | None = None
    explain: bool = False
    mode: Mode = "hybrid"
    fts_depth: int | None = None
    vector_depth: int | None = None
    complete_scores: bool = True
    """Score every candidate of the union on both signals (its true cosine and BM25) instead of
    treating the leg that did not retrieve it as 0."""


def prefetch_vector_store() -> None:
    """Start importing chromadb in the background: its ~1 s of imports overlaps with loading the
    embedder and running the FTS leg in a cold process."""

    def _import() -> None:
        try:
            import chromadb  # noqa: F401
        except Exception:
            pass

    threading.Thread(target=_import, name="chinvex-prefetch-chroma", daemon=True).start()


@dataclass
class _ContextHandle:
    config: ContextConfig
    conn: sqlite3.Connection
    lock: threading.Lock = field(default_factory=threading.Lock)
    store: Any = None
    store_checked: bool = False
    store_error: str | None = None
    store_checked_at: float = 0.0

    def close(self) -> None:
        store, self.store, self.store_checked = self.store, None, False
        if store is not None:
            try:
                store.close()
            except Exception:
                pass
        try:
            self.conn.close()
        except sqlite3.Error:
            pass


@dataclass
class _Hit:
    context: str
    chunk_id: str
    fts: float | None = None
    vector: float | None = None
    vector_rank: int | None = None


class Searcher:
    def __init__(self) -> None:
        self._handles: dict[str, _ContextHandle] = {}
        self._embedders: dict[str, Any] = {}
        self._lock = threading.Lock()

    # -- warm resources ---------------------------------------------------------------------

    def handle(self, config: ContextConfig) -> _ContextHandle:
        with self._lock:
            h = self._handles.get(config.name)
            if h is not None and h.config.index == config.index:
                h.config = config
                return h
            if h is not None:  # the context was moved or re-pointed: let go of the old index
                with h.lock:
                    h.close()
            try:
                conn = db.connect(Path(config.index.sqlite_path))
            except StorageError as exc:
                raise RetrievalError(exc.message) from None
            h = _ContextHandle(config=config, conn=conn)
            self._handles[config.name] = h
            return h

    def embedder(self, config: ContextConfig):
        from chinvex.embedding.factory import make_embedder

        key = orjson.dumps(config.embedding.model_dump(mode="json") if config.embedding else None).decode()
        with self._lock:
            if key not in self._embedders:
                self._embedders[key] = make_embedder(config.embedding)
            return self._embedders[key]

    def _store(self, h: _ContextHandle):
        """The context's vector store, opened once and kept (it reloads itself when another
        process writes to it). A failed open is retried after STORE_RETRY_SECONDS."""
        if h.store is None and h.store_checked and time.monotonic() - h.store_checked_at >= STORE_RETRY_SECONDS:
            h.store_checked = False
        if not h.store_checked:
            from chinvex.storage.vectors import VectorStore

            try:
                h.store = VectorStore.open(h.config, h.conn, create=False)
                if h.store is None:
                    h.store_error = "no vectors yet (run 'chinvex ingest')"
            except ChinvexError as exc:
                h.store, h.store_error = None, exc.message
            h.store_checked = True
            h.store_checked_at = time.monotonic()
        return h.store

    def close(self) -> None:
        with self._lock:
            for h in self._handles.values():
                with h.lock:
                    h.close()
            self._handles.clear()

    # -- search -----------------------------------------------------------------------------

    def search(self, configs: Sequence[ContextConfig], req: SearchRequest) -> SearchResponse:
        started = time.perf_counter()
        if not 1 <= req.k <= MAX_K:
            from chinvex.errors import UsageError

            raise UsageError(f"--k must be between 1 and {MAX_K} (got {req.k})")
        warnings: list[str] = []
        hits: list[_Hit] = []
        meta: dict[tuple[str, str], dict[str, Any]] = {}
        modes: set[str] = set()
        weights: dict[str, dict[str, float]] = {}
        query_vectors: dict[str, Any] = {}
        for config in configs:
            h = self.handle(config)
            weights[config.name] = config.effective_weights()
            with h.lock, _read_snapshot(h.conn):
                ctx_hits, ctx_modes = self._search_context(h, req, warnings, query_vectors)
                rows = _rows(h.conn, [hit.chunk_id for hit in ctx_hits])
            for hit in ctx_hits:
                row = rows.get(hit.chunk_id)
                # No row: a vector whose chunk is not committed in this SQLite state (an ingest
                # writes Chroma first) or was deleted since; only committed chunks are results.
                if row is None or not _passes_filters(row, req):
                    continue
                hits.append(hit)
                meta[(config.name, hit.chunk_id)] = row
            modes |= ctx_modes

        candidates = [
            Candidate(
                key=f"{hit.context}\x00{hit.chunk_id}", chunk_id=hit.chunk_id,
                source_type=meta[(hit.context, hit.chunk_id)]["source_type"],
                updated_at=meta[(hit.context, hit.chunk_id)]["updated_at"],
                fts=hit.fts, vector=hit.vector, weight_table=hit.context,
            )
            for hit in hits
        ]
        by_key = {f"{hit.context}\x00{hit.chunk_id}": hit for hit in hits}
        fused = fuse(candidates, weights)[: req.k]
        terms = query_terms(req.query) if req.explain else []
        results: list[SearchResult] = []
        for position, item in enumerate(fused, start=1):
            hit = by_key[item.candidate.key]
            row = meta[(hit.context, hit.chunk_id)]
            scores = Scores(fts=hit.fts, vector=hit.vector, fts_norm=round(item.fts_norm, 6),
                            vector_norm=round(item.vector_norm, 6), blended=round(item.blended, 6),
                            weight=item.weight, rank=round(item.rank_score, 6))
            results.append(SearchResult(
                rank=position, chunk_id=hit.chunk_id, doc_id=row["doc_id"], context=hit.context,
                source_type=row["source_type"], source_uri=row["source_uri"], title=row["title"],
                text=row["text"],
                range=Range(char_start=row["char_start"], char_end=row["char_end"],
                            line_start=row["line_start"], line_end=row["line_end"]),
                updated_at=row["updated_at"], scores=scores, metadata=row["metadata"],
                freshness=_freshness(row),
                explain=_explain(hit, item, row, terms) if req.explain else None,
            ))
        if len(modes) == 1:
            mode = modes.pop()
        elif not modes:
            mode = "none"
        else:
            mode = "hybrid" if "hybrid" in modes else sorted(modes)[0]
        stats = SearchStats(
            took_ms=round((time.perf_counter() - started) * 1000, 2), candidates=len(candidates),
            fts_candidates=sum(1 for h in hits if h.fts is not None),
            vector_candidates=sum(1 for h in hits if h.vector is not None),
            mode=mode,  # type: ignore[arg-type]
            warnings=list(dict.fromkeys(warnings)),
        )
        return SearchResponse(query=req.query, contexts=[c.name for c in configs], k=req.k,
                              results=results, stats=stats)

    def _search_context(self, h: _ContextHandle, req: SearchRequest, warnings: list[str],
                        query_vectors: dict[str, Any]) -> tuple[list[_Hit], set[str]]:
        config = h.config
        retrieval = config.retrieval
        fts_depth = req.fts_depth or (retrieval.fts_depth if retrieval and retrieval.fts_depth else DEFAULT_FTS_DEPTH)
        vec_depth = req.vector_depth or (retrieval.vector_depth if retrieval and retrieval.vector_depth else DEFAULT_VECTOR_DEPTH)
        filtered = bool(req.path_glob or req.since or req.until)
        hits: dict[str, _Hit] = {}
        legs: set[str] = set()

        if req.mode in ("hybrid", "vector"):
            vec = self._vector_leg(h, req, warnings, query_vectors, vec_depth * (4 if filtered else 1))
            if vec is not None:
                legs.add("vector")
                for rank, (cid, sim) in enumerate(vec, start=1):
                    hits[cid] = _Hit(config.name, cid, vector=sim, vector_rank=rank)
        if req.mode in ("hybrid", "fts") or (req.mode == "vector" and "vector" not in legs):
            legs.add("fts")
            for cid, score in _fts_leg(h.conn, req, fts_depth * (4 if filtered else 1)):
                hit = hits.setdefault(cid, _Hit(config.name, cid))
                hit.fts = score
        if req.complete_scores and legs == {"fts", "vector"}:
            try:
                self._complete(h, req, hits, query_vectors)
            except StorageError as exc:
                # The vectors cannot be read consistently: answer from FTS alone rather than
                # mixing complete and incomplete scores.
                warnings.append(f"{config.name}: vector search failed ({exc.message}); results are FTS only")
                legs.discard("vector")
                hits = {cid: hit for cid, hit in hits.items() if hit.fts is not None}
                for hit in hits.values():
                    hit.vector = hit.vector_rank = None
        mode = "hybrid" if legs == {"fts", "vector"} else ("fts" if "fts" in legs else "vector")
        return list(hits.values()), {mode}

    def _complete(self, h: _ContextHandle, req: SearchRequest, hits: dict[str, _Hit],
                  query_vectors: dict[str, Any]) -> None:
        """Give each candidate both signals: BM25 for vector-only hits that do match the query's
        terms (just below the FTS cut), cosine for lexical-only hits (from their stored vector)."""
        missing_fts = [cid for cid, hit in hits.items() if hit.fts is None]
        if missing_fts:
            for cid, score in _fts_scores_for(h.conn, req, missing_fts):
                hits[cid].fts = score
        missing_vec = [cid for cid, hit in hits.items() if hit.vector is None]
        store = h.store
        embedder_name = db.get_meta(h.conn, "embedder")
        query = query_vectors.get(embedder_name or "")
        if missing_vec and store is not None and query is not None:
            import numpy as np

            stored = store.embeddings(missing_vec)
            if stored:
                ids = list(stored)
                matrix = np.asarray([stored[i] for i in ids], dtype=np.float32)
                sims = matrix @ np.asarray(query, dtype=np.float32)
                for cid, sim in zip(ids, sims.tolist()):
                    hits[cid].vector = float(sim)

    def _vector_leg(self, h: _ContextHandle, req: SearchRequest, warnings: list[str],
                    query_vectors: dict[str, Any], depth: int) -> list[tuple[str, float]] | None:
        name = h.config.name
        stored = db.get_meta(h.conn, "embedder")
        try:
            embedder = self.embedder(h.config)
        except ChinvexError as exc:
            warnings.append(f"{name}: vector search unavailable ({exc.message}); results are FTS only")
            return None
        if stored is None:
            warnings.append(f"{name}: no vectors yet (run 'chinvex ingest'); results are FTS only")
            return None
        if stored != embedder.name:
            warnings.append(
                f"{name}: index vectors come from {stored} but the context is configured for "
                f"{embedder.name}; results are FTS only (run 'chinvex ingest --full')")
            return None
        store = self._store(h)
        if store is None:
            warnings.append(f"{name}: vector store unavailable ({h.store_error}); results are FTS only")
            return None
        try:
            if embedder.name not in query_vectors:
                query_vectors[embedder.name] = embedder.embed_query(req.query)
            vector = query_vectors[embedder.name]
            found = store.query(vector, depth, source_types=req.source_types)
        except ChinvexError as exc:
            warnings.append(f"{name}: vector search failed ({exc.message}); results are FTS only")
            return None
        except Exception as exc:
            warnings.append(f"{name}: vector search failed ({type(exc).__name__}: {exc}); results are FTS only")
            return None
        if found:
            return found
        # Nothing found: an empty store beside indexed chunks is damage, not an answer. (Only
        # counted here: COUNT(*) scans the table, too slow for every query at 100k chunks.)
        chunks = h.conn.execute("SELECT COUNT(*) FROM chunks").fetchone()[0]
        try:
            empty = bool(chunks) and store.count() == 0
        except ChinvexError as exc:
            warnings.append(f"{name}: vector search failed ({exc.message}); results are FTS only")
            return None
        if empty:
            warnings.append(f"{name}: the vector store is empty although {chunks} chunks are indexed "
                            "(run 'chinvex doctor --repair'); results are FTS only")
            return None
        return found


@contextmanager
def _read_snapshot(conn: sqlite3.Connection) -> Iterator[None]:
    """One read transaction (WAL: it never blocks the writer), so every read of a context's
    search sees the same committed state even while an ingest commits batches."""
    if conn.in_transaction:
        yield
        return
    conn.execute("BEGIN")
    try:
        yield
    finally:
        if conn.in_transaction:
            conn.execute("COMMIT")


def _fts_leg(conn: sqlite3.Connection, req: SearchRequest, depth: int) -> list[tuple[str, float]]:
    expression = fts_match_expression(req.query)
    if expression is None:
        return []
    sql = ("SELECT c.chunk_id, bm25(chunks_fts) AS score FROM chunks_fts "
           "JOIN chunks c ON c.rowid = chunks_fts.rowid ")
    params: list[Any] = [expression]
    where = "WHERE chunks_fts MATCH ?"
    if req.source_types:
        sql += "JOIN documents d ON d.doc_id = c.doc_id "
        where += f" AND d.source_type IN ({','.join('?' * len(req.source_types))})"
        params.extend(req.source_types)
    sql += where + " ORDER BY score LIMIT ?"
    params.append(depth)
    try:
        rows = conn.execute(sql, params).fetchall()
    except sqlite3.OperationalError as exc:
        raise RetrievalError(f"full-text search failed: {exc}") from None
    # FTS5's bm25() is negative, more negative = more relevant; flip it so higher is better.
    return [(row[0], -float(row[1])) for row in rows]


def _fts_scores_for(conn: sqlite3.Connection, req: SearchRequest,
                    chunk_ids: list[str]) -> list[tuple[str, float]]:
    expression = fts_match_expression(req.query)
    if expression is None or not chunk_ids:
        return []
    marks = ",".join("?" * len(chunk_ids))
    try:
        rows = conn.execute(
            "SELECT c.chunk_id, bm25(chunks_fts) FROM chunks_fts JOIN chunks c "
            f"ON c.rowid = chunks_fts.rowid WHERE chunks_fts MATCH ? AND c.chunk_id IN ({marks})",
            [expression, *chunk_ids],
        ).fetchall()
    except sqlite3.OperationalError as exc:
        raise RetrievalError(f"full-text search failed: {exc}") from None
    return [(row[0], -float(row[1])) for row in rows]


def _rows(conn: sqlite3.Connection, chunk_ids: list[str]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for start in range(0, len(chunk_ids), 500):
        part = chunk_ids[start:start + 500]
        marks = ",".join("?" * len(part))
        for row in conn.execute(
            f"""SELECT c.chunk_id, c.doc_id, c.chunk_index, c.text, c.search_text, c.char_start,
                       c.char_end, c.line_start, c.line_end, c.metadata_json, d.source_type,
                       d.source_uri, d.title, d.updated_at, d.created_at, d.indexed_at,
                       d.origin_uri, f.size_bytes, f.mtime_unix, f.state_json
                FROM chunks c JOIN documents d ON d.doc_id = c.doc_id
                LEFT JOIN source_fingerprints f ON f.source_uri = d.origin_uri
                WHERE c.chunk_id IN ({marks})""",
            part,
        ):
            item = dict(row)
            item["metadata"] = orjson.loads(item.pop("metadata_json") or "{}")
            out[item["chunk_id"]] = item
    return out


def _passes_filters(row: dict[str, Any], req: SearchRequest) -> bool:
    if req.source_types and row["source_type"] not in req.source_types:
        return False
    if req.path_glob:
        uri = row["source_uri"]
        rel = (row["metadata"].get("path") or "") if isinstance(row["metadata"], dict) else ""
        if not (fnmatch.fnmatch(uri, req.path_glob) or fnmatch.fnmatch(rel, req.path_glob)
                or fnmatch.fnmatch(uri, "*/" + req.path_glob.lstrip("/"))):
            return False
    stamp = row["updated_at"] or row["created_at"]
    if req.since and (stamp is None or stamp < req.since):
        return False
    if req.until and (stamp is None or stamp > req.until):
        return False
    return True


def _freshness(row: dict[str, Any]) -> Freshness:
    """Cheap stat check of the result's source, so agents never present deleted code as current."""
    origin = row["origin_uri"] or ""
    indexed_at = row["indexed_at"]
    if not origin.startswith("/") and not re.match(r"^[A-Za-z]:[\\/]", origin):
        return Freshness(indexed_at=indexed_at)
    path = origin.split("#", 1)[0]
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        # NotADirectoryError: a folder on the way to the file is now something else (a file),
        # so the file itself is gone, which is not the same as being there but unreadable.
        return Freshness(indexed_at=indexed_at, stale=True, reason="deleted")
    except OSError:
        return Freshness(indexed_at=indexed_at, stale=True, reason="unreadable")
    if stat.S_ISDIR(st.st_mode):
        # The indexed file was replaced by a folder of the same name: the file is gone.
        return Freshness(indexed_at=indexed_at, stale=True, reason="deleted")
    if row["size_bytes"] is not None and st.st_size != row["size_bytes"]:
        return Freshness(indexed_at=indexed_at, stale=True, reason="modified")
    state = orjson.loads(row["state_json"]) if row.get("state_json") else {}
    mtime_ns = state.get("_mtime_ns") if isinstance(state, dict) else None
    if mtime_ns is not None and st.st_mtime_ns != mtime_ns:
        return Freshness(indexed_at=indexed_at, stale=True, reason="modified")
    if mtime_ns is None and row["mtime_unix"] is not None and int(st.st_mtime) != row["mtime_unix"]:
        return Freshness(indexed_at=indexed_at, stale=True, reason="modified")
    return Freshness(indexed_at=indexed_at)


def _explain(hit: _Hit, item: Any, row: dict[str, Any], terms: list[str]) -> dict[str, Any]:
    haystack = (row.get("search_text") or row["text"]).lower()
    matched = [t for t in terms if re.search(r"(?<!\w)" + re.escape(t), haystack)]
    reasons = []
    if hit.fts is not None:
        reasons.append(f"matched terms: {', '.join(matched) or '(stemmed forms)'}")
    if hit.vector is not None:
        reasons.append(f"vector neighbour #{hit.vector_rank} (cosine {hit.vector:.3f})")
    return {
        "fts": {"raw_bm25": hit.fts, "normalized": item.fts_norm, "weight": 0.6,
                "matched_terms": matched},
        "vector": {"raw_cosine": hit.vector, "normalized": item.vector_norm, "weight": 0.4,
                   "neighbour_rank": hit.vector_rank},
        "blended": item.blended,
        "source_weight": item.weight,
        "rank": item.rank_score,
        "formula": "rank = (0.6 * fts_norm + 0.4 * vector_norm) * source_weight",
        "why": "; ".join(reasons) or "no signal",
    }
