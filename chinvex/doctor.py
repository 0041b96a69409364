"""`chinvex doctor`: find what is wrong with a context's index, and fix what can be fixed.

Each check reports a status (ok / warning / error), how many things it found, a few examples,
and whether `--repair` can fix it. Errors are states that make search wrong or lose content
(a chunk without a vector, a posting without a chunk, a document no source accounts for);
warnings are states a plain `chinvex ingest` settles (a source changed since it was indexed, an
interrupted run). The exit status is 1 while any error remains.

Checks only read: without `--repair` nothing is written and no lock is taken, so a doctor can
run beside an ingest. (FTS5's 'integrity-check' is a write statement that changes nothing; it
holds SQLite's write lock while it runs, so it is skipped while an ingest is writing, and the
checks that compare the two stores report warnings then, since a batch may be half-written.)
`--repair` takes the context's lock, applies the repairs in dependency order (rows, then the
full-text index, then vectors), and runs every check again: what it reports is the state after
the repair, never a promise.
"""

from __future__ import annotations

import os
import re
import sqlite3
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import orjson

from chinvex.errors import ChinvexError, ConfigError
from chinvex.models import ContextConfig
from chinvex.storage import consistency as cons
from chinvex.storage import db

Status = Literal["ok", "warning", "error"]
MAX_EXAMPLES = 5
EMBED_BATCH = 128
STALE_SAMPLE = 24
STALE_COSINE = 0.98
"""The same text embeds to cosine ~1.0 (0.999+ across batch shapes); a changed header drops it
to ~0.9."""
SINGLE_DOCUMENT_ADAPTERS = frozenset({"repo", "notes", "cx_sessions_jsonl", "cx_appserver"})
"""Adapters that turn every source they accept into exactly one document (or raise). The others
may legitimately produce none: an export without conversations, a transcript with no turn yet."""


@dataclass
class Check:
    name: str
    status: Status = "ok"
    count: int = 0
    examples: list[str] = field(default_factory=list)
    repairable: bool = False
    repaired: bool = False
    message: str = ""

    def problem(self, status: Status, items: list[str], message: str, *, repairable: bool,
                count: int | None = None) -> "Check":
        self.status = status
        self.count = len(items) if count is None else count
        self.examples = items[:MAX_EXAMPLES]
        self.message = message
        self.repairable = repairable
        return self

    def as_json(self) -> dict[str, Any]:
        return {"name": self.name, "status": self.status, "count": self.count,
                "examples": self.examples, "repairable": self.repairable,
                "repaired": self.repaired, "message": self.message}


@dataclass
class DoctorReport:
    context: str
    checks: list[Check]
    repair: bool = False
    actions: list[str] = field(default_factory=list)
    """What --repair did, one line each."""

    @property
    def ok(self) -> bool:
        return all(c.status != "error" for c in self.checks)

    def as_json(self) -> dict[str, Any]:
        return {"context": self.context, "checks": [c.as_json() for c in self.checks],
                "ok": self.ok, "repair": self.repair, "actions": self.actions}


# -- entry points ---------------------------------------------------------------------------


def diagnose(name: str, *, repair: bool = False, wait: bool | float = False) -> DoctorReport:
    """Resolve `name` and examine its index. A context.json that does not load is itself the
    finding (nothing else can be checked without its index paths). `wait`: wait for an ingest
    in progress to end (with `repair`, for the context's lock) instead of reporting a batch in
    flight or failing with LOCKED."""
    from chinvex.registry import Registry

    registry = Registry()
    try:
        config = registry.resolve(name)
    except ConfigError as exc:
        check = Check("context_config").problem(
            "error", [exc.message], "context.json does not load; fix it by hand",
            repairable=False)
        return DoctorReport(context=name, checks=[check], repair=repair)
    return Doctor(config).run(repair=repair, wait=wait)


class Doctor:
    def __init__(self, config: ContextConfig):
        self.config = config
        self.sqlite_path = Path(config.index.sqlite_path)
        self._findings = _Findings()

    def run(self, *, repair: bool = False, wait: bool | float = False) -> DoctorReport:
        from chinvex.locking import context_lock

        if not repair:
            if wait:
                _wait_for_writer(self.config, wait)
            return DoctorReport(self.config.name, self._all_checks(readonly=True))
        from chinvex.storage.access import check_writable

        check_writable(self.config, action="doctor --repair")
        unlocked = check_lock(self.config)  # before our own lock note replaces a stale one
        with context_lock(self.config, wait=wait, purpose="doctor --repair"):
            before = [unlocked if c.name == "lock" else c for c in self._all_checks(readonly=False)]
            self._findings.close_store()  # a repair may move the store's files
            actions = self._repair(before)
            after = self._all_checks(readonly=False)
            self._findings.close_store()
        was = {c.name: c for c in before}
        for check in after:
            old = was.get(check.name)
            if old is not None and old.status != "ok" and old.repairable:
                check.repaired = check.status == "ok" or check.count < old.count
                check.repairable = True
        return DoctorReport(self.config.name, after, repair=True, actions=actions)

    # -- running the checks ------------------------------------------------------------------

    def _all_checks(self, *, readonly: bool) -> list[Check]:
        checks = [check_config(self.config)]
        files = check_index_files(self.config)
        checks.append(files)
        if not self.sqlite_path.exists():
            return checks
        try:
            conn = db.connect(self.sqlite_path, readonly=readonly)
        except db.DamagedIndexError as exc:
            self._findings.damaged = True
            checks.append(Check("sqlite_integrity").problem(
                "error", [exc.message.split("; run ", 1)[0]],
                "hybrid.db is damaged: " + _rebuild_advice(self.config), repairable=True))
            return checks
        except ChinvexError as exc:
            checks.append(Check("sqlite_integrity").problem(
                "error", [exc.message], "hybrid.db cannot be opened", repairable=False))
            return checks
        try:
            self._findings = _Findings(ingest_running=_ingest_running(self.config))
            checks += self._index_checks(conn)
        finally:
            conn.close()
        if self._findings.ingest_running:
            for check in checks:
                if check.name in MID_WRITE_CHECKS and check.status == "error":
                    check.status = "warning"
                    check.repairable = False
                    check.message = ("an ingest is writing, so this may be a half-written batch; "
                                     "check again when it ends: " + check.message)
        return checks

    def _index_checks(self, conn: sqlite3.Connection) -> list[Check]:
        f, config, path = self._findings, self.config, self.sqlite_path
        store: list[Any] = [None]

        def embedder() -> Check:
            check, store[0] = check_embedder_and_store(config, conn, f)
            return check

        steps: list[tuple[str, Any]] = [
            ("sqlite_integrity", lambda: check_integrity(conn, f, config)),
            ("foreign_keys", lambda: check_foreign_keys(conn, f)),
            ("fts_index", lambda: check_fts(conn, path, f)),
            ("embedder", embedder),
            ("vectors_missing", lambda: check_vectors(conn, store[0], f)),
            ("vectors_stale", lambda: check_stale_vectors(conn, config, store[0], f)),
            ("fingerprints_without_documents", lambda: check_fingerprints(conn, config, f)),
            ("documents_without_chunks", lambda: check_documents_without_chunks(conn, f)),
            ("origins_without_documents", lambda: check_ledger(conn, f)),
            ("untracked_documents", lambda: check_untracked_documents(conn, config, f)),
            ("failed_sources", lambda: check_failed_sources(conn, config)),
            ("stale_sources", lambda: check_stale_sources(conn, config)),
            ("last_ingest", lambda: check_last_run(conn, config, f)),
            ("lock", lambda: check_lock(config)),
        ]
        checks: list[Check] = []
        for name, step in steps:
            try:
                result = step()
            except sqlite3.DatabaseError as exc:  # a damaged file: report, never a traceback
                damaged = db.failure_kind(exc) == "damaged"
                f.damaged = f.damaged or damaged
                result = Check(name).problem(
                    "error", [f"{type(exc).__name__}: {exc}"],
                    "could not be checked: hybrid.db cannot be read"
                    + (f" ({_rebuild_advice(config)})" if damaged else ""), repairable=damaged)
            checks += result if isinstance(result, list) else [result]
        return checks

    # -- repairing ---------------------------------------------------------------------------

    def _repair(self, before: list[Check]) -> list[str]:
        f = self._findings
        if f.damaged:
            from chinvex.rebuild import rebuild_damaged_index

            return rebuild_damaged_index(self.config)
        if any(c.name == "sqlite_integrity" and c.status == "error" for c in before):
            return ["hybrid.db cannot be opened (see the check): nothing was changed"]
        problems = {c.name for c in before if c.status != "ok" and c.repairable}
        if not problems or not self.sqlite_path.exists():
            return []
        actions: list[str] = []
        conn = db.connect(self.sqlite_path)
        try:
            _repair_rows(conn, self.config, f, problems, actions)
            if "fts_index" in problems:
                conn.execute("INSERT INTO chunks_fts(chunks_fts) VALUES('rebuild')")
                actions.append("rebuilt the full-text index from the chunks table")
            _repair_runs(conn, f, problems, actions)
            if "embedder" in problems and f.store_damaged:
                from chinvex.rebuild import move_aside_damaged_store

                actions.append(move_aside_damaged_store(self.config))
            if problems & {"vectors_missing", "vectors_orphaned", "embedder"} or f.rows_deleted:
                _repair_vectors(conn, self.config, actions)
            if "vectors_stale" in problems and f.stale_docs:
                _reembed_documents(conn, self.config, f.stale_docs, actions)
        finally:
            conn.close()
        return actions


MID_WRITE_CHECKS = frozenset({
    "vectors_missing", "vectors_orphaned", "fingerprints_without_documents",
    "documents_without_chunks", "origins_without_documents", "documents_without_origins",
    "untracked_documents"})
"""Checks that compare states an ingest changes one after the other (Chroma, then SQLite, then
fingerprints): while it runs, a mismatch may be a batch in flight rather than damage."""


@dataclass
class _Findings:
    """What the checks found, kept for the repairs (the checks themselves stay pure reports)."""

    ingest_running: bool = False
    fk_rows: list[tuple[str, int]] = field(default_factory=list)
    embedder_ok: bool = True
    chroma_ids: set[str] = field(default_factory=set)
    fingerprints_without_docs: list[str] = field(default_factory=list)
    docs_without_chunks: list[tuple[str, str]] = field(default_factory=list)
    origins_without_docs: list[tuple[str, str]] = field(default_factory=list)
    docs_without_origins: list[tuple[str, str]] = field(default_factory=list)
    untracked_gone: list[str] = field(default_factory=list)
    interrupted_runs: list[str] = field(default_factory=list)
    stale_docs: list[str] = field(default_factory=list)
    rows_deleted: bool = False
    damaged: bool = False
    store_damaged: bool = False
    """The Chroma store's files are not a usable database: repair moves them aside and rebuilds."""
    store: Any = None
    """The VectorStore the checks opened (closed before a repair touches the store's files)."""

    def close_store(self) -> None:
        store, self.store = self.store, None
        if store is not None:
            store.close()


# -- configuration and files ----------------------------------------------------------------


def check_config(config: ContextConfig) -> Check:
    check = Check("context_config")
    problems: list[str] = []
    for key, values in config.includes.entries():
        if not isinstance(values, list):
            problems.append(f"includes.{key}: expected a list of folders")
            continue
        for root in values:
            problem = _folder_problem(str(root))
            if problem:
                problems.append(f"includes.{key}: {root}: {problem}")
    try:
        from chinvex.embedding.factory import make_embedder

        make_embedder(config.embedding)
    except ChinvexError as exc:
        problems.append(f"embedding: {exc.message}")
    if problems:
        return check.problem("error", problems, "context.json names sources or settings that "
                             "cannot be used; ingest reports them as errors (fix context.json, "
                             "or 'chinvex context remove-source')", repairable=False)
    check.message = "valid; every include folder is readable"
    return check


def _folder_problem(path: str) -> str | None:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return "does not exist"
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    import stat

    if not stat.S_ISDIR(st.st_mode):
        return "is not a folder"
    if not os.access(path, os.R_OK | os.X_OK):
        return "permission denied"
    return None


def check_index_files(config: ContextConfig) -> Check:
    check = Check("index_files")
    sqlite_path = Path(config.index.sqlite_path)
    problems: list[str] = []
    if not sqlite_path.exists():
        problems.append(f"{sqlite_path}: does not exist")
    if not config.index.chroma_url:
        chroma = Path(config.index.chroma_dir)
        if chroma.exists() and not chroma.is_dir():
            problems.append(f"{chroma}: is not a folder")
    if problems:
        return check.problem("error", problems, "index files are missing; run 'chinvex ingest' "
                             "to build the index again", repairable=False)
    check.message = str(sqlite_path.parent)
    try:
        kept = sorted(p.name for p in sqlite_path.parent.iterdir()
                      if ".damaged-" in p.name and not p.name.endswith(("-wal", "-shm")))
    except OSError:
        kept = []
    if kept:  # not a problem: what an earlier repair kept, for the user to inspect or delete
        check.message += f" (damaged files kept by an earlier repair: {', '.join(kept)})"
    return check


# -- SQLite ---------------------------------------------------------------------------------


def check_integrity(conn: sqlite3.Connection, f: _Findings,
                    config: ContextConfig | None = None) -> Check:
    check = Check("sqlite_integrity")
    errors = cons.integrity_errors(conn)
    if errors:
        f.damaged = True
        advice = (_rebuild_advice(config) if config is not None
                  else "run 'chinvex doctor --repair' for this context")
        return check.problem("error", errors, f"hybrid.db is damaged: {advice}", repairable=True)
    check.message = "PRAGMA integrity_check: ok"
    return check


def check_foreign_keys(conn: sqlite3.Connection, f: _Findings) -> Check:
    check = Check("foreign_keys")
    violations = cons.foreign_key_violations(conn)
    f.fk_rows = [(table, rowid) for table, rowid, _ in violations]
    if violations:
        items = [f"{table} row {rowid} -> missing {parent}" for table, rowid, parent in violations]
        return check.problem("error", items, "rows refer to documents that do not exist",
                             repairable=True)
    check.message = "no dangling rows"
    return check


def check_fts(conn: sqlite3.Connection, path: Path, f: _Findings) -> Check:
    check = Check("fts_index")
    state = cons.fts_state(conn, path, deep=not f.ingest_running)
    if not state.ok:
        items = []
        if state.error:
            items.append(f"FTS5 integrity-check: {state.error}")
        if state.indexed_rows != state.chunk_rows:
            items.append(f"{state.indexed_rows} rows indexed for {state.chunk_rows} chunks")
        return check.problem("error", items, "the full-text index does not match the chunks "
                             "(stale or missing postings); a rebuild fixes it", repairable=True,
                             count=abs(state.indexed_rows - state.chunk_rows) or 1)
    check.message = f"{state.chunk_rows} chunks indexed" + (
        "" if state.deep else f" (row counts only: {state.shallow_reason or 'the full check waits until the ingest ends'})")
    return check


def _rebuild_advice(config: ContextConfig) -> str:
    return (f"run 'chinvex doctor --context {config.name} --repair': it moves the damaged file "
            "aside (kept, renamed with a timestamp) and rebuilds the index from the sources")


def _wait_for_writer(config: ContextConfig, wait: bool | float) -> None:
    """Wait until no process holds the context's lock (an ingest ends), without keeping it:
    checking takes no lock, so an ingest may start again right after."""
    from chinvex.locking import context_lock

    try:
        with context_lock(config, wait=wait, purpose="doctor --wait"):
            pass
    except OSError:  # a read-only index folder: no ingest can be writing it
        return


# -- embedder and vectors -------------------------------------------------------------------


def check_embedder_and_store(config: ContextConfig, conn: sqlite3.Connection,
                             f: _Findings) -> tuple[Check, Any]:
    check = Check("embedder")
    stored = db.get_meta(conn, "embedder")
    try:
        from chinvex.embedding.factory import make_embedder

        configured = make_embedder(config.embedding).name
    except ChinvexError:
        configured = None  # reported by context_config
    store = None
    store_error = None
    from chinvex.storage.vectors import (DAMAGE_MARKERS, DamagedStoreError, MissingStoreError,
                                         ReadOnlyStoreError, VectorStore)

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
            if isinstance(exc, DamagedStoreError) or any(m in text.lower() for m in DAMAGE_MARKERS):
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


def check_vectors(conn: sqlite3.Connection, store: Any, f: _Findings) -> list[Check]:
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
                        f: _Findings) -> Check:
    """A sample of chunks is embedded again and compared with the stored vectors: a vector that
    no longer describes its chunk's text (kept after the text it was embedded from changed) is
    invisible damage, found by nothing else. Sampled because embedding costs ~50 ms a chunk."""
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


# -- fingerprints, documents and their origins ----------------------------------------------


def check_fingerprints(conn: sqlite3.Connection, config: ContextConfig, f: _Findings) -> Check:
    """A fingerprint says "indexed, unchanged": if its documents are not there, the next ingest
    would skip the source forever."""
    check = Check("fingerprints_without_documents")
    documents = {r[0] for r in conn.execute("SELECT doc_id FROM documents")}
    # Documents removed with `chinvex rm` are missing on purpose: their tombstones keep them out.
    removed = {r[0]: r[1] for r in conn.execute("SELECT doc_id, origin_uri FROM tombstones")}
    documents |= set(removed)
    removed_origins = set(removed.values())
    ledger: dict[str, set[str]] = defaultdict(set)
    for doc_id, origin in conn.execute("SELECT doc_id, origin_uri FROM doc_origins"):
        ledger[origin].add(doc_id)
    for doc_id, origin in conn.execute("SELECT doc_id, origin_uri FROM documents"):
        ledger[origin].add(doc_id)
    bad: list[str] = []
    for uri, doc_id, adapter in conn.execute(
            "SELECT source_uri, doc_id, adapter FROM source_fingerprints "
            "WHERE context_name=? AND last_status='ok'", (config.name,)):
        if doc_id and doc_id not in documents:
            bad.append(uri)
        elif not doc_id and not ledger.get(uri) and adapter in SINGLE_DOCUMENT_ADAPTERS \
                and uri not in removed_origins:
            bad.append(uri)
    # A source being removed (or rewritten) is journaled as pending before its documents go and
    # until its fingerprint does: a run killed in between left it, and the next ingest finishes.
    pending = {r[0] for r in conn.execute("SELECT source_uri FROM pending_sources")}
    interrupted = [uri for uri in bad if uri in pending]
    bad = [uri for uri in bad if uri not in pending]
    f.fingerprints_without_docs = bad
    if not bad and interrupted:
        return check.problem("warning", interrupted, "sources an interrupted ingest was removing "
                             "or rewriting; the next 'chinvex ingest' finishes them",
                             repairable=False)
    if bad:
        return check.problem("error", bad, "sources recorded as indexed whose documents are "
                             "missing; repair clears their fingerprints so the next ingest "
                             "reads them again", repairable=True)
    check.message = "every indexed source has its documents"
    return check


def _blank_conversation(conn: sqlite3.Connection, doc_id: str, metadata: dict[str, Any]) -> bool:
    if metadata.get("turn_count") == 0:
        return True
    for (turn_json,) in conn.execute(
            "SELECT turn_json FROM conversation_turns WHERE doc_id=?", (doc_id,)):
        turn = orjson.loads(turn_json)
        if str(turn.get("text") or "").strip() or (turn.get("tool") or {}).get("input"):
            return False
    return True


def _blank_file(path: str, limit: int = 8 * 1024 * 1024) -> bool:
    """True when the file holds nothing but whitespace: such a document has no chunk."""
    try:
        if os.path.getsize(path) > limit:
            return False
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError:
        return False
    return not data.decode("utf-8", "replace").replace("\ufeff", "").strip()


def check_documents_without_chunks(conn: sqlite3.Connection, f: _Findings) -> Check:
    check = Check("documents_without_chunks")
    bad: list[tuple[str, str]] = []
    for doc_id, origin, metadata_json in conn.execute(
            "SELECT d.doc_id, d.origin_uri, d.metadata_json FROM documents d "
            "WHERE NOT EXISTS (SELECT 1 FROM chunks c WHERE c.doc_id = d.doc_id)"):
        metadata = orjson.loads(metadata_json or "{}")
        metadata = metadata if isinstance(metadata, dict) else {}
        if metadata.get("doc_type") == "conversation":
            if _blank_conversation(conn, doc_id, metadata):
                continue
        elif _is_path(origin):
            path = origin.split("#", 1)[0]
            if not os.path.exists(path) or _blank_file(path):
                continue  # gone (stale_sources says so) or nothing but whitespace
        bad.append((doc_id, origin))
    f.docs_without_chunks = bad
    if bad:
        return check.problem("error", [f"{d} ({o})" for d, o in bad],
                             "documents with content but no chunk (unsearchable); repair makes "
                             "the next ingest write them again", repairable=True)
    check.message = "every non-empty document has chunks"
    return check


def check_ledger(conn: sqlite3.Connection, f: _Findings) -> list[Check]:
    """doc_origins and documents describe the same set: every (document, writing source) pair is
    in the ledger, and every ledger entry names an existing document."""
    orphan_check, missing_check = Check("origins_without_documents"), Check("documents_without_origins")
    orphans = [(d, o) for d, o in conn.execute(
        "SELECT o.doc_id, o.origin_uri FROM doc_origins o "
        "WHERE NOT EXISTS (SELECT 1 FROM documents d WHERE d.doc_id = o.doc_id) "
        "AND NOT EXISTS (SELECT 1 FROM tombstones t WHERE t.doc_id = o.doc_id)")]
    # A source records its ledger entries before it writes its documents, and is journaled as
    # pending before either: entries of a pending source are an interrupted run's, which the
    # next ingest settles (it reads the source again, or removes what it wrote).
    pending = {r[0] for r in conn.execute("SELECT source_uri FROM pending_sources")}
    interrupted = [(d, o) for d, o in orphans if o in pending]
    orphans = [(d, o) for d, o in orphans if o not in pending]
    missing = [(d, o) for d, o in conn.execute(
        "SELECT d.doc_id, d.origin_uri FROM documents d WHERE d.origin_uri NOT LIKE 'memory://%' "
        "AND NOT EXISTS (SELECT 1 FROM doc_origins o WHERE o.doc_id = d.doc_id "
        "AND o.origin_uri = d.origin_uri)")]
    # Removing a source drops its ledger entries before its documents (both after it is
    # journaled as pending): a run killed in between left documents of a pending source.
    removing = [(d, o) for d, o in missing if o in pending]
    missing = [(d, o) for d, o in missing if o not in pending]
    f.origins_without_docs, f.docs_without_origins = orphans, missing
    if orphans:
        orphan_check.problem("error", [f"{d} <- {o}" for d, o in orphans],
                             "sources are recorded as producing documents that are not indexed "
                             "(a stale entry can keep another source's copy out of the index); "
                             "repair drops them and has those sources read again",
                             repairable=True)
    elif interrupted:
        orphan_check.problem("warning", [f"{d} <- {o}" for d, o in interrupted],
                             "origin entries of sources an interrupted ingest was writing; the "
                             "next 'chinvex ingest' reads those sources again and settles them",
                             repairable=False)
    else:
        orphan_check.message = "every origin entry names an indexed document"
    if missing:
        missing_check.problem("error", [f"{d} <- {o}" for d, o in missing],
                              "documents whose writing source is not in the origin ledger; "
                              "repair records it", repairable=True)
    elif removing:
        missing_check.problem("warning", [f"{d} <- {o}" for d, o in removing],
                              "documents of sources an interrupted ingest was removing; the next "
                              "'chinvex ingest' finishes removing them", repairable=False)
    else:
        missing_check.message = "every document's source is in the origin ledger"
    return [orphan_check, missing_check]


def check_untracked_documents(conn: sqlite3.Connection, config: ContextConfig,
                              f: _Findings) -> Check:
    """Documents written by a source that has no fingerprint: an ingest died between writing
    them and recording the source. If the source still exists the next ingest reads it again;
    if it is gone, nothing would ever remove them (they would be found by search forever)."""
    check = Check("untracked_documents")
    known = {r[0] for r in conn.execute(
        "SELECT source_uri FROM source_fingerprints WHERE context_name=?", (config.name,))}
    origins = {r[0] for r in conn.execute(
        "SELECT DISTINCT origin_uri FROM documents UNION SELECT DISTINCT origin_uri FROM doc_origins")}
    untracked = sorted(o for o in origins - known if not o.startswith(cons.MEMORY_PREFIX))
    journaled = {r[0] for r in conn.execute("SELECT source_uri FROM pending_sources")}
    # Gone and journaled as pending: an interrupted run wrote them, and the next ingest removes
    # them (it settles every pending source); gone without a journal entry, nothing would.
    gone = [o for o in untracked if _is_path(o) and not os.path.lexists(o.split("#", 1)[0])
            and o not in journaled]
    pending = [o for o in untracked if o not in gone]
    f.untracked_gone = gone
    if gone:
        return check.problem("error", gone + pending, f"{len(gone)} sources are gone but their "
                             "documents were never recorded as indexed, so ingest would never "
                             "remove them; repair removes them", repairable=True)
    if pending:
        return check.problem("warning", pending, "sources written by an interrupted ingest; "
                             "the next 'chinvex ingest' reads them again", repairable=False)
    check.message = "every document comes from a recorded source"
    return check


# -- sources and runs -----------------------------------------------------------------------


def _is_path(uri: str) -> bool:
    return uri.startswith("/") or bool(re.match(r"^[A-Za-z]:[\\/]", uri))


def check_failed_sources(conn: sqlite3.Connection, config: ContextConfig) -> Check:
    check = Check("failed_sources")
    rows = conn.execute(
        "SELECT source_uri, last_error FROM source_fingerprints WHERE context_name=? "
        "AND last_status='error' ORDER BY source_uri", (config.name,)).fetchall()
    if rows:
        items = [str(err or uri).splitlines()[0][:300] for uri, err in rows]
        return check.problem("warning", items, "sources that could not be ingested last time "
                             "(retried on every ingest; what they had indexed before is kept)",
                             repairable=False)
    check.message = "no source failed"
    return check


def check_stale_sources(conn: sqlite3.Connection, config: ContextConfig) -> Check:
    """Fingerprinted files that changed, vanished or became unreadable since they were indexed."""
    from chinvex.ingest.fingerprints import Fingerprint

    check = Check("stale_sources")
    found: dict[str, list[str]] = defaultdict(list)
    rows = conn.execute("SELECT * FROM source_fingerprints WHERE context_name=?", (config.name,))
    for row in rows:
        fp = Fingerprint.from_row(row)
        if not _is_path(fp.source_uri):
            continue  # app-server threads: their freshness is the thread's updatedAt
        path = fp.source_uri.split("#", 1)[0]
        try:
            st = os.stat(path)
        except (FileNotFoundError, NotADirectoryError):
            found["deleted"].append(fp.source_uri)
            continue
        except OSError:
            found["unreadable"].append(fp.source_uri)
            continue
        if not os.access(path, os.R_OK):
            found["unreadable"].append(fp.source_uri)
        elif fp.size_bytes is not None and st.st_size != fp.size_bytes:
            found["modified"].append(fp.source_uri)
        elif fp.mtime_ns is not None and st.st_mtime_ns != fp.mtime_ns:
            found["modified"].append(fp.source_uri)
        elif fp.mtime_ns is None and fp.mtime_unix is not None and int(st.st_mtime) != fp.mtime_unix:
            found["modified"].append(fp.source_uri)
    if found:
        items = [f"{reason}: {uri}" for reason in sorted(found) for uri in found[reason]]
        summary = ", ".join(f"{len(v)} {k}" for k, v in sorted(found.items()))
        return check.problem("warning", items, f"{summary} since the last ingest; run "
                             "'chinvex ingest' to bring the index up to date", repairable=False)
    check.message = "every indexed file is as it was indexed"
    return check


def _holder(config: ContextConfig) -> tuple[str | None, int | None]:
    from chinvex.locking import lock_path

    info = lock_path(config).with_suffix(".holder")
    try:
        text = info.read_text(encoding="utf-8").strip()
    except OSError:
        return None, None
    match = re.search(r"\(pid (\d+)\)", text)
    return text, int(match.group(1)) if match else None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a killed child its parent has not reaped yet is a zombie: not running
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as handle:
            return handle.read().rsplit(")", 1)[-1].split()[0] != "Z"
    except OSError:
        return True


def _ingest_running(config: ContextConfig) -> bool:
    text, pid = _holder(config)
    return (text is not None and text.startswith("ingest") and pid is not None
            and pid != os.getpid() and _alive(pid))


def check_last_run(conn: sqlite3.Connection, config: ContextConfig, f: _Findings) -> Check:
    check = Check("last_ingest")
    running = _ingest_running(config)
    f.interrupted_runs = [] if running else [r[0] for r in conn.execute(
        "SELECT run_id FROM ingest_runs WHERE status='running' AND context_name=?", (config.name,))]
    row = conn.execute(
        "SELECT run_id, started_at, finished_at, status, stats_json FROM ingest_runs "
        "WHERE context_name=? ORDER BY started_at DESC LIMIT 1", (config.name,)).fetchone()
    if row is None:
        return check.problem("warning", [], "never ingested: run 'chinvex ingest'",
                             repairable=False)
    run_id, started, _, status, stats_json = row
    if status == "running" and running:
        check.message = f"an ingest is running (started {started})"
        return check
    if status in ("running", "interrupted"):
        return check.problem("warning", [f"{run_id} started {started}"], "the last ingest was "
                             "interrupted; its finished sources are kept and the next 'chinvex "
                             "ingest' completes the rest", repairable=bool(f.interrupted_runs))
    if status == "failed":
        stats = orjson.loads(stats_json) if stats_json else {}
        errors = [e.get("message", "") for e in (stats.get("errors") or [])][-1:]
        return check.problem("warning", errors or [run_id], "the last ingest failed; see the "
                             "message, then run 'chinvex ingest' again", repairable=False)
    if status == "completed_with_errors":
        stats = orjson.loads(stats_json) if stats_json else {}
        errors = [e.get("message", "") for e in (stats.get("errors") or [])]
        return check.problem("warning", errors, f"the last ingest ({started}) completed with "
                             f"{len(errors)} source errors", repairable=False)
    check.message = f"{status} at {row[2] or started}"
    return check


def check_lock(config: ContextConfig) -> Check:
    check = Check("lock")
    text, pid = _holder(config)
    if text is None:
        check.message = "not held"
        return check
    if pid == os.getpid():
        check.message = "held by this repair until it ends"
        return check
    if pid is not None and _alive(pid):
        check.message = f"held by {text}"
        return check
    return check.problem("warning", [text], "a lock note left by a process that no longer runs "
                         "(the lock itself is free); repair removes the note", repairable=True)


# -- repairs --------------------------------------------------------------------------------


def _repair_rows(conn: sqlite3.Connection, config: ContextConfig, f: _Findings,
                 problems: set[str], actions: list[str]) -> None:
    """All row repairs in one transaction: either the ledger, fingerprints and documents agree
    afterwards, or nothing changed."""
    forget: set[str] = set()  # fingerprints to clear: those sources are read again
    rewrite: set[str] = set()  # documents whose stored content hash is cleared: written again
    conn.execute("BEGIN IMMEDIATE")
    try:
        if "foreign_keys" in problems and f.fk_rows:
            for table, rowid in f.fk_rows:
                conn.execute(f'DELETE FROM "{table}" WHERE rowid=?', (rowid,))
            f.rows_deleted = True
            actions.append(f"deleted {len(f.fk_rows)} rows that referred to missing documents")
        if "untracked_documents" in problems and f.untracked_gone:
            gone = set(f.untracked_gone)
            conn.executemany("DELETE FROM doc_origins WHERE origin_uri=?", [(o,) for o in gone])
            removed = 0
            for origin in sorted(gone):
                for (doc_id,) in conn.execute(
                        "SELECT doc_id FROM documents WHERE origin_uri=?", (origin,)).fetchall():
                    others = [r[0] for r in conn.execute(
                        "SELECT origin_uri FROM doc_origins WHERE doc_id=?", (doc_id,))]
                    if others:  # another source still has it: that one writes it next time
                        forget.update(others)
                        rewrite.add(doc_id)
                    else:
                        conn.execute("DELETE FROM documents WHERE doc_id=?", (doc_id,))
                        removed += 1
            f.rows_deleted = True
            actions.append(f"removed {removed} documents of {len(gone)} vanished sources that "
                           "no ingest had recorded")
        if "origins_without_documents" in problems and f.origins_without_docs:
            for doc_id, origin in f.origins_without_docs:
                conn.execute("DELETE FROM doc_origins WHERE doc_id=? AND origin_uri=?",
                             (doc_id, origin))
                forget.add(origin)
            actions.append(f"dropped {len(f.origins_without_docs)} origin entries of missing "
                           "documents")
        if "documents_without_origins" in problems and f.docs_without_origins:
            conn.executemany(
                "INSERT OR IGNORE INTO doc_origins(doc_id, origin_uri, precedence_json) "
                "VALUES(?,?,'[]')", f.docs_without_origins)
            actions.append(f"recorded the source of {len(f.docs_without_origins)} documents "
                           "in the origin ledger")
        if "fingerprints_without_documents" in problems:
            forget.update(f.fingerprints_without_docs)
        if "documents_without_chunks" in problems:
            for doc_id, origin in f.docs_without_chunks:
                forget.add(origin)
                rewrite.add(doc_id)
        if rewrite:
            conn.executemany("UPDATE documents SET content_hash=NULL WHERE doc_id=?",
                             [(d,) for d in rewrite])
        cleared = 0
        for uri in sorted(forget):
            cleared += conn.execute(
                "DELETE FROM source_fingerprints WHERE context_name=? AND source_uri=?",
                (config.name, uri)).rowcount
        if cleared:
            actions.append(f"cleared {cleared} source fingerprints: the next 'chinvex ingest' "
                           "reads those sources again")
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def _repair_runs(conn: sqlite3.Connection, f: _Findings, problems: set[str],
                 actions: list[str]) -> None:
    if "last_ingest" in problems and f.interrupted_runs:
        conn.executemany("UPDATE ingest_runs SET status='interrupted' WHERE run_id=? "
                         "AND status='running'", [(r,) for r in f.interrupted_runs])
        actions.append(f"marked {len(f.interrupted_runs)} unfinished ingest runs as interrupted")


def _repair_vectors(conn: sqlite3.Connection, config: ContextConfig, actions: list[str]) -> None:
    """Compare both stores afresh (row repairs may have removed chunks), delete vectors of no
    chunk, embed chunks without a vector from their exact stored embed text."""
    from chinvex.embedding.factory import make_embedder
    from chinvex.storage.vectors import VectorStore

    embedder = make_embedder(config.embedding)
    stored = db.get_meta(conn, "embedder")
    if stored is not None and stored != embedder.name:
        actions.append("vectors not repaired: the embedder changed (run 'chinvex ingest --full')")
        return
    store = VectorStore.open(config, conn, create=True)
    assert store is not None
    try:
        _repair_store(conn, config, store, embedder, stored, actions)
    finally:
        store.close()


def _repair_store(conn: sqlite3.Connection, config: ContextConfig, store: Any, embedder: Any,
                  stored: str | None, actions: list[str]) -> None:
    from chinvex.storage import coverage

    in_sqlite = cons.chunk_ids(conn)
    in_chroma = store.all_ids()
    orphans = sorted(in_chroma - in_sqlite)
    if orphans:
        store.delete(orphans)
        actions.append(f"deleted {len(orphans)} vectors that belonged to no chunk")
    # The write journal's entries for ids without a chunk are settled now (the store holds no
    # vector of such an id any more); entries of owned ids are left to the next ingest.
    conn.execute("DELETE FROM vector_journal WHERE chunk_id NOT IN (SELECT chunk_id FROM chunks)")
    missing = sorted(in_sqlite - in_chroma)
    if not missing:
        coverage.record(conn, coverage.measured(len(in_sqlite), len(in_sqlite), store.identity(conn),
                                                coverage.gate_token(config)))
        return
    unrecoverable: list[str] = []
    pending: list[tuple[str, str, dict[str, str]]] = []
    embedded = 0

    def flush() -> None:
        nonlocal embedded
        if not pending:
            return
        vectors = embedder.embed_documents([p[1] for p in pending])
        store.upsert([p[0] for p in pending], vectors, [p[2] for p in pending])
        embedded += len(pending)
        pending.clear()

    for row in cons.iter_chunk_rows(conn, missing):
        text = cons.embed_text_of(row)
        if text is None:
            unrecoverable.append(row["doc_id"])
            continue
        pending.append((row["chunk_id"], text,
                        {"doc_id": row["doc_id"], "source_type": row["source_type"]}))
        if len(pending) >= EMBED_BATCH:
            flush()
    flush()
    coverage.record(conn, coverage.measured(len(in_sqlite), len(in_sqlite) - len(unrecoverable),
                                            store.identity(conn), coverage.gate_token(config)))
    if embedded:
        if stored is None:
            db.set_meta(conn, "embedder", embedder.name)
        actions.append(f"embedded {embedded} chunks that had no vector")
    if unrecoverable:
        _schedule_rewrite(conn, config, sorted(set(unrecoverable)))
        actions.append(f"{len(unrecoverable)} chunks could not be embedded from what is stored "
                       "(their text does not match its hash); their sources are read again by "
                       "the next 'chinvex ingest'")


def _reembed_documents(conn: sqlite3.Connection, config: ContextConfig, doc_ids: list[str],
                       actions: list[str]) -> None:
    from chinvex.embedding.factory import make_embedder
    from chinvex.storage.vectors import VectorStore

    store = VectorStore.open(config, conn, create=False)
    if store is None:
        return
    ids: list[str] = []
    for start in range(0, len(doc_ids), 500):
        part = doc_ids[start:start + 500]
        ids += [r[0] for r in conn.execute(
            f"SELECT chunk_id FROM chunks WHERE doc_id IN ({','.join('?' * len(part))})", part)]
    embedder = make_embedder(config.embedding)
    rows = [r for r in cons.iter_chunk_rows(conn, ids) if cons.embed_text_of(r) is not None]
    try:
        for start in range(0, len(rows), EMBED_BATCH):
            part = rows[start:start + EMBED_BATCH]
            vectors = embedder.embed_documents([cons.embed_text_of(r) for r in part])
            store.upsert([r["chunk_id"] for r in part], vectors,
                         [{"doc_id": r["doc_id"], "source_type": r["source_type"]} for r in part])
    finally:
        store.close()
    actions.append(f"embedded the {len(rows)} chunks of {len(doc_ids)} documents with stale "
                   "vectors again")


def _schedule_rewrite(conn: sqlite3.Connection, config: ContextConfig, doc_ids: list[str]) -> None:
    """The next ingest re-reads these documents' sources and writes them even if unchanged
    (the writer then embeds every chunk whose vector is missing)."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        for doc_id in doc_ids:
            row = conn.execute("SELECT origin_uri FROM documents WHERE doc_id=?", (doc_id,)).fetchone()
            conn.execute("UPDATE documents SET content_hash=NULL WHERE doc_id=?", (doc_id,))
            if row is not None:
                conn.execute("DELETE FROM source_fingerprints WHERE context_name=? AND source_uri=?",
                             (config.name, row[0]))
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def format_report(report: DoctorReport) -> str:
    """The report for a person: one line per check, examples under problems, dates readable
    (the messages keep ISO timestamps for --json)."""
    from rich.markup import escape

    from chinvex.fmt import dates_in

    marks = {"ok": "[green]ok[/green]   ", "warning": "[yellow]warn[/yellow] ",
             "error": "[red]ERROR[/red]"}
    lines = [f"doctor: context {escape(report.context)}"]
    for c in report.checks:
        note = " (repaired)" if c.repaired else (" (--repair can fix this)"
                                                 if c.repairable and c.status != "ok" and not report.repair
                                                 else "")
        count = f" [{c.count}]" if c.status != "ok" and c.count else ""
        lines.append(f"{marks[c.status]} {escape(c.name)}{count}: {escape(dates_in(c.message))}{escape(note)}")
        if c.status != "ok":
            for example in c.examples:
                lines.append(f"        {escape(dates_in(example))}")
    for action in report.actions:
        lines.append(f"repair: {escape(dates_in(action))}")
    lines.append("no problems found" if report.ok and all(c.status == "ok" for c in report.checks)
                 else ("only warnings" if report.ok else "problems remain"))
    return "\n".join(lines)
