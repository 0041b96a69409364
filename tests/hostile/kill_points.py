"""Kill points: SIGKILL a real `chinvex ingest` at exact points of its work and require that the
next plain ingest converges on exactly what an uninterrupted run gives (issue 16).

A `Scenario` builds a corpus, ingests it (the baseline), keeps a copy of the index folder, then
changes the sources (edits, deletions, additions, a conversation dropped from an export) and
optionally deletes the Chroma store too (`lose_store`: the run must heal it). The reference is
one uninterrupted ingest from the baseline. The same run under `hostile.ingest_tracer` lists
every write point it passes: each (event, n-th occurrence) is a distinct kill point.

For each point (`Scenario.run_point`): the index folder is restored to the baseline, the traced
CLI SIGKILLs itself at that point, and then
1. SQLite must be sound (integrity, foreign keys, FTS5's own check);
2. `chinvex doctor` must find no error (an interrupted run is warnings: "the next ingest
   settles it"), the issue's "doctor right after a kill" — none beyond those it found before
   the run (the lost store of `lose_store`);
3. one plain ingest must complete and leave exactly the reference index: the same chunk rows,
   documents, origin ledger, fingerprints and stored turns; Chroma holding exactly the chunk ids,
   each with the reference's vector (cosine >= 0.999) and metadata; FTS indexing every chunk;
4. doctor must then find nothing at all.

Shared by tests/ingest/test_fault_injection.py (a sample of points) and bench/fault_injection.py (every
point, 100 and more).
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from hostile import corpus as corpus_mod

TESTS_DIR = Path(__file__).resolve().parent.parent
CONTEXT = "Kill"
BATCH = 4
"""Chunks per writer batch in the traced runs: a small change is written in many batches, each
with its own journal entry, Chroma upsert, SQLite transaction, Chroma delete and fingerprints."""


@dataclass(frozen=True)
class Point:
    event: str
    nth: int

    def __str__(self) -> str:
        return f"{self.event}:{self.nth}"


@dataclass
class PointResult:
    point: Point
    killed: bool
    doctor_after_kill: list[str] = field(default_factory=list)
    """Errors `doctor` reported right after the kill (must be none)."""
    problems: list[str] = field(default_factory=list)
    """How the settled index differs from the reference (must be none)."""
    seconds: float = 0.0
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def converged(self) -> bool:
        return self.killed and not self.problems and not self.doctor_after_kill


def phase_of(event: str) -> str:
    """The phase of an ingest a trace event belongs to (for reporting the spread of points)."""
    name = event.split(":", 1)[0]
    return {
        "ready": "start-up", "settle_vector_journal": "settling the last run",
        "mark_pending": "parse", "_consume": "parse", "record": "parse (ledger)",
        "_embed": "embed", "journal_upserts": "journal", "upsert": "chroma upsert",
        "_insert_chunk": "sqlite transaction", "_adjust_coverage": "sqlite transaction",
        "ids_for_docs": "after sqlite commit", "delete": "chroma delete / fingerprint delete",
        "write": "fingerprints", "detach": "source removal",
        "reconcile_vectors": "vector reconciliation", "all_ids": "vector reconciliation",
    }.get(name, name)


class Scenario:
    def __init__(self, base: Path, *, seed: int = 16, lose_store: bool = False,
                 modules: int = 4, notes: int = 4):
        self.base = base
        self.home = base / "home"
        self.seed = seed
        self.lose_store = lose_store
        self.env = dict(os.environ, CHINVEX_HOME=str(self.home), ANONYMIZED_TELEMETRY="False",
                        PYTHONPATH=str(TESTS_DIR) + os.pathsep + os.environ.get("PYTHONPATH", ""))
        os.environ["CHINVEX_HOME"] = str(self.home)
        self.corpus = corpus_mod.build(base / "corpus", seed=seed, modules=modules, notes=notes,
                                       sections=2)
        from chinvex.context.registry import Registry

        Registry().create(CONTEXT, includes=self.corpus.roots())
        self.config = Registry().resolve(CONTEXT)
        self.index_dir = Path(self.config.index.sqlite_path).parent
        summary = self._ingest()
        assert summary.status == "completed", summary.errors
        self.snapshot = base / "baseline-index"
        shutil.copytree(self.index_dir, self.snapshot)
        corpus_mod.mutate(self.corpus, random.Random(seed), 1)
        corpus_mod.mutate(self.corpus, random.Random(seed + 1), 2)
        self.restore()
        summary = self._ingest()
        assert summary.status == "completed", summary.errors
        self.reference = index_state(self.config)
        self.trace = base / "trace.log"
        self.restore()
        # What doctor says before the run (a lost store is an error already): a kill may leave
        # the index in the middle of settling that, but must add no error of its own.
        self.errors_before = {line.split(":", 1)[0] for line in doctor_errors(CONTEXT)}
        traced = self._traced(None)
        assert traced.returncode == 0, traced.stderr
        self.points = _points(self.trace.read_text().splitlines())

    # -- running ----------------------------------------------------------------------------

    def restore(self) -> None:
        """The index folder as the baseline left it (and the store deleted, for `lose_store`)."""
        shutil.rmtree(self.index_dir, ignore_errors=True)
        shutil.copytree(self.snapshot, self.index_dir)
        if self.lose_store:
            shutil.rmtree(self.config.index.chroma_dir)

    def _ingest(self):
        from chinvex.ingest.pipeline import IngestOptions, run_ingest

        return run_ingest(self.config, IngestOptions())

    def _traced(self, point: Point | None) -> subprocess.CompletedProcess:
        self.trace.write_text("")
        own = [str(self.trace), str(BATCH)] + ([str(point)] if point else [])
        return subprocess.run([sys.executable, "-m", "hostile.ingest_tracer", *own, "--", "ingest",
                               "--context", CONTEXT, "--json"], env=self.env, cwd=TESTS_DIR,
                              capture_output=True, text=True, timeout=600)

    def run_point(self, point: Point, *, final_doctor: bool = True) -> PointResult:
        """Kill at `point`, check, settle, compare. `final_doctor`: also run doctor on the
        settled index (the comparison with the reference already covers what it checks)."""
        started = time.monotonic()
        os.environ["CHINVEX_HOME"] = str(self.home)  # a test's fixture may have changed it
        self.restore()
        killed = self._traced(point)
        result = PointResult(point, killed=killed.returncode == -signal.SIGKILL)
        result.timings["killed run"] = time.monotonic() - started
        if not result.killed:
            result.problems.append(f"not killed at {point}: exit {killed.returncode} "
                                   f"{killed.stderr.strip()[-300:]}")
            return result
        mark = time.monotonic()
        result.problems += sqlite_problems(Path(self.config.index.sqlite_path))
        # A lost store is the embedder check's error; partly rebuilt, the vectors_missing one.
        known = self.errors_before | ({"vectors_missing"} if "embedder" in self.errors_before else set())
        result.doctor_after_kill = [e for e in doctor_errors(CONTEXT)
                                    if e.split(":", 1)[0] not in known]
        result.timings["doctor"] = time.monotonic() - mark
        mark = time.monotonic()
        summary = self._ingest()
        result.timings["settle"] = time.monotonic() - mark
        if summary.status != "completed":
            result.problems.append(f"the ingest after the kill ended {summary.status}: "
                                   f"{[e.message for e in summary.errors][:2]}")
        mark = time.monotonic()
        result.problems += compare(index_state(self.config), self.reference)
        result.timings["compare"] = time.monotonic() - mark
        if final_doctor:
            result.problems += [f"doctor after the settling ingest: {p}"
                                for p in doctor_errors(CONTEXT, warnings=True)]
        result.seconds = time.monotonic() - started
        return result


def _points(lines: list[str]) -> list[Point]:
    seen: Counter[str] = Counter()
    points: list[Point] = []
    for event in lines:
        seen[event] += 1
        points.append(Point(event, seen[event]))
    return points


def spread(points: list[Point], n: int, seed: int = 0) -> list[Point]:
    """`n` points covering as many phases of the run as possible (one point of each phase
    first, phases in the order the run reaches them, the point drawn at random within its
    phase), then the rest evenly over the trace; all of them when there are no more than `n`."""
    if len(points) <= n:
        return list(points)
    rng = random.Random(seed)
    by_phase: dict[str, list[Point]] = {}
    for point in points:
        by_phase.setdefault(phase_of(point.event), []).append(point)
    chosen: dict[Point, None] = {}
    for phase in by_phase:  # insertion order: the order the run reaches them
        if len(chosen) < n:
            chosen[rng.choice(by_phase[phase])] = None
    step = len(points) / max(1, n - len(chosen))
    i = 0.0
    while len(chosen) < n and i < len(points):
        chosen.setdefault(points[int(i)], None)
        i += step
    for point in points:
        if len(chosen) >= n:
            break
        chosen.setdefault(point, None)
    return sorted(chosen, key=points.index)


# -- what an index is made of ---------------------------------------------------------------


def index_state(config) -> dict:
    """Everything a converged index is made of, minus timestamps and the collection name."""
    from chinvex.storage import db
    from chinvex.storage.vectors import VectorStore

    conn = db.connect(Path(config.index.sqlite_path))
    try:
        state = {
            "chunks": set(conn.execute(
                "SELECT chunk_id, doc_id, chunk_index, text, search_text, embed_hash, char_start, "
                "char_end, line_start, line_end, metadata_json FROM chunks").fetchall()),
            "docs": set(conn.execute(
                "SELECT doc_id, source_type, source_uri, title, origin_uri, content_hash, "
                "metadata_json FROM documents").fetchall()),
            "fingerprints": set(conn.execute(
                "SELECT source_uri, doc_id, last_status, size_bytes, content_sha256, adapter, "
                "parser_version, chunker_version FROM source_fingerprints").fetchall()),
            "origins": set(conn.execute(
                "SELECT doc_id, origin_uri, precedence_json FROM doc_origins").fetchall()),
            "turns": set(conn.execute(
                "SELECT doc_id, turn_index, turn_json FROM conversation_turns").fetchall()),
            "journals": tuple(conn.execute("SELECT (SELECT COUNT(*) FROM vector_journal), "
                                           "(SELECT COUNT(*) FROM pending_sources)").fetchone()),
            "fts_rows": conn.execute("SELECT COUNT(*) FROM chunks_fts_docsize").fetchone()[0],
        }
        store = VectorStore.open(config, conn, create=False)
        assert store is not None
        try:
            ids = sorted(store.all_ids())
            vectors = store.embeddings(ids)
            metadata = store._read(lambda c: dict(zip(*(lambda g: (g["ids"], g["metadatas"]))(
                c.get(ids=ids, include=["metadatas"]))))) if ids else {}
        finally:
            store.close()
    finally:
        conn.close()
    state["vectors"] = {cid: (list(vectors[cid]), metadata.get(cid)) for cid in ids}
    return state


def compare(got: dict, want: dict) -> list[str]:
    """Each way `got` differs from `want`, one line each."""
    problems: list[str] = []
    for key in ("chunks", "docs", "fingerprints", "origins", "turns"):
        extra, missing = got[key] - want[key], want[key] - got[key]
        if extra or missing:
            problems.append(f"{key}: {len(extra)} extra, {len(missing)} missing (e.g. "
                            f"{sorted(map(str, extra))[:1]} / {sorted(map(str, missing))[:1]})")
    if got["journals"] != (0, 0):
        problems.append(f"journals not empty after a completed run: {got['journals']}")
    chunk_ids = {row[0] for row in got["chunks"]}
    if set(got["vectors"]) != chunk_ids:
        problems.append(f"chroma ids != chunk ids: {len(set(got['vectors']) - chunk_ids)} extra, "
                        f"{len(chunk_ids - set(got['vectors']))} missing")
    if got["fts_rows"] != len(chunk_ids):
        problems.append(f"FTS indexes {got['fts_rows']} rows for {len(chunk_ids)} chunks")
    problems.extend(vector_problems(want["vectors"], got["vectors"]))
    return problems


def vector_problems(want: dict, got: dict) -> list[str]:
    """What differs between two stores' vectors of the same chunk ids ({id: (vector, metadata)}):
    metadata, or a vector that is another text's (cosine below 0.999)."""
    import numpy as np

    problems = []
    for cid, (vector, meta) in want.items():
        if cid not in got:
            continue
        mine, my_meta = got[cid]
        if my_meta != meta:
            problems.append(f"vector metadata of {cid}: {my_meta} != {meta}")
        cosine = float(np.dot(vector, mine) / (np.linalg.norm(vector) * np.linalg.norm(mine)))
        if cosine < 0.999:
            problems.append(f"chunk {cid} carries another text's vector (cosine {cosine:.3f})")
    return problems


def sqlite_problems(db_path: Path) -> list[str]:
    """Right after a kill: the file opens, is intact, and its FTS index matches its chunks."""
    if not db_path.exists():
        return []
    conn = sqlite3.connect(db_path, isolation_level=None, timeout=30)
    try:
        problems = []
        if conn.execute("PRAGMA integrity_check").fetchone()[0] != "ok":
            problems.append("integrity_check failed after the kill")
        if conn.execute("PRAGMA foreign_key_check").fetchall():
            problems.append("dangling rows after the kill")
        if conn.execute("SELECT 1 FROM sqlite_master WHERE name='chunks_fts'").fetchone():
            try:
                conn.execute("INSERT INTO chunks_fts(chunks_fts, rank) VALUES('integrity-check', 1)")
            except sqlite3.DatabaseError as exc:
                problems.append(f"FTS integrity-check after the kill: {exc}")
        return problems
    finally:
        conn.close()


def doctor_errors(context: str, *, warnings: bool = False) -> list[str]:
    """What `chinvex doctor` reports as errors (and warnings too, when asked)."""
    from chinvex.doctor import diagnose

    report = diagnose(context)
    bad = {"error", "warning"} if warnings else {"error"}
    return [f"{c.name}: {c.status}: {c.message} {c.examples[:2]}" for c in report.checks
            if c.status in bad]
