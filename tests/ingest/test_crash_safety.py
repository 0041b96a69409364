"""Issue 9, the main acceptance item: `chinvex ingest` killed with SIGKILL at any point leaves
both stores readable, and the next ingest converges on exactly what a clean run gives.

A real `chinvex ingest` subprocess is killed at least 20 times (seeded), the sources are edited,
deleted and added between kills, then one ingest runs to completion and its index is compared
with a clean run's over the same folders in another CHINVEX_HOME: chunk ids, document ids,
chunk rows, the origin ledger and fingerprints are equal; Chroma holds exactly the SQLite chunk
ids with the same vectors; FTS5 passes its integrity check and has no posting for text that
only deleted chunks had; `chinvex doctor` finds nothing.

Kills come in two kinds. Timed kills land anywhere from process start-up to the end of the
work (start-up, migrations and Chroma creation included). Phase kills watch the trace the
ingest writes (tests/hostile/ingest_tracer.py: the real CLI with a line logged at each write
point and a small writer batch, so that a small corpus is written in many batches) and send
SIGKILL from outside a few milliseconds after a chosen event: while parsing, embedding,
upserting into Chroma, inside the SQLite transaction, after its commit, while deleting from
Chroma, while writing fingerprints, or while removing a vanished source.
"""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from helpers import (CHINVEX_BIN, REPO_ROOT, assert_no_traceback, run_cli, run_cli_in_process,
                     write_marked_chatgpt_export)
from hostile import corpus as corpus_mod
from hostile.kill_points import vector_problems

SEED = 20261122
KILLS = 20
"""Kills required; the loop stops at the KILLS-th (each run is a whole ingest start-up)."""
MAX_ATTEMPTS = 60
BATCH = 12
TESTS_DIR = REPO_ROOT / "tests"

PHASES = [
    # (trace event, kill delay range in seconds, phase)
    ("_consume:start", (0.0, 0.02), "parse"),
    ("record:end", (0.0, 0.005), "parse (ledger written)"),
    ("_embed:start", (0.0, 0.3), "embed"),
    ("upsert:start", (0.0, 0.03), "chroma upsert"),
    ("upsert:end", (0.0, 0.002), "between chroma upsert and sqlite"),
    ("_insert_chunk:start", (0.0, 0.002), "sqlite transaction"),
    ("ids_for_docs:start", (0.0, 0.005), "after sqlite commit"),
    ("delete:start", (0.0, 0.02), "chroma delete"),
    ("write:start", (0.0, 0.002), "fingerprint write"),
    ("detach:end", (0.0, 0.005), "source removal"),
]


def _env(home: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["CHINVEX_HOME"] = str(home)
    env["PYTHONPATH"] = str(TESTS_DIR) + os.pathsep + env.get("PYTHONPATH", "")
    env["ANONYMIZED_TELEMETRY"] = "False"
    return env


def _count(trace: Path, event: str) -> int:
    try:
        return trace.read_text().count(event + "\n")
    except FileNotFoundError:
        return 0


def _ingest_and_kill(env: dict[str, str], trace: Path, plan: dict) -> dict:
    trace.write_text("")
    proc = subprocess.Popen(
        [sys.executable, "-m", "hostile.ingest_tracer", str(trace), str(BATCH), "--",
         "ingest", "--context", "Crash", "--json", "--yes"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=TESTS_DIR)
    started = time.monotonic()
    killed_at = None
    while proc.poll() is None:
        now = time.monotonic()
        if plan["kind"] == "timed":
            due = now - started >= plan["delay"]
        else:
            due = _count(trace, plan["event"]) >= plan["nth"]
            if due and plan["delay"]:
                time.sleep(plan["delay"])
        if due:
            events = trace.read_text().splitlines()
            killed_at = events[-1] if events else "start-up"
            proc.send_signal(signal.SIGKILL)
            break
        time.sleep(0.002)
    out, err = proc.communicate(timeout=120)
    killed = proc.returncode == -signal.SIGKILL
    return {"killed": killed, "code": proc.returncode, "at": killed_at if killed else None,
            "duration": time.monotonic() - started, "stdout": out.decode(errors="replace"),
            "stderr": err.decode(errors="replace")}


def _sqlite_sound(db_path: Path) -> None:
    """After every kill: the file opens, is intact, and its FTS index matches its chunks."""
    if not db_path.exists():
        return
    conn = sqlite3.connect(db_path, isolation_level=None, timeout=30)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
        if conn.execute("SELECT 1 FROM sqlite_master WHERE name='chunks_fts'").fetchone():
            conn.execute("INSERT INTO chunks_fts(chunks_fts, rank) VALUES('integrity-check', 1)")
    finally:
        conn.close()


def _state(home: Path, context: str) -> dict:
    """Everything a converged index is made of, minus timestamps and the collection name."""
    import chromadb
    from chromadb.config import Settings

    db_path = home / "indexes" / context / "hybrid.db"
    conn = sqlite3.connect(db_path)
    try:
        chunks = conn.execute(
            "SELECT chunk_id, doc_id, chunk_index, text, search_text, embed_hash, char_start, "
            "char_end, line_start, line_end, metadata_json FROM chunks").fetchall()
        docs = conn.execute(
            "SELECT doc_id, source_type, source_uri, title, origin_uri, content_hash, metadata_json "
            "FROM documents").fetchall()
        fingerprints = conn.execute(
            "SELECT source_uri, doc_id, last_status, size_bytes, content_sha256, adapter "
            "FROM source_fingerprints").fetchall()
        origins = conn.execute("SELECT doc_id, origin_uri, precedence_json FROM doc_origins").fetchall()
        turns = conn.execute("SELECT doc_id, COUNT(*) FROM conversation_turns GROUP BY doc_id").fetchall()
        collection = conn.execute("SELECT value FROM meta WHERE key='chroma_collection'").fetchone()[0]
        fts_rows = conn.execute("SELECT COUNT(*) FROM chunks_fts_docsize").fetchone()[0]
    finally:
        conn.close()
    client = chromadb.PersistentClient(path=str(home / "indexes" / context / "chroma"),
                                       settings=Settings(anonymized_telemetry=False))
    got = client.get_collection(collection).get(include=["embeddings", "metadatas"])
    vectors = {cid: (list(vec), meta) for cid, vec, meta in
               zip(got["ids"], got["embeddings"], got["metadatas"])}
    return {"chunks": chunks, "docs": docs, "fingerprints": fingerprints, "origins": origins,
            "turns": turns, "vectors": vectors, "fts_rows": fts_rows}


def _fts_hits(db_path: Path, term: str) -> list:
    conn = sqlite3.connect(db_path)
    try:
        # No join with chunks: a stale posting of a deleted row would show up here.
        return conn.execute("SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ?",
                            (f'"{term}"',)).fetchall()
    finally:
        conn.close()


def _markers(corpus: corpus_mod.Corpus) -> set[str]:
    import re

    found: set[str] = set()
    for root in (corpus.repo, corpus.notes):
        for path in root.rglob("*"):
            if path.is_file():
                found |= set(re.findall(r"\b(?:code|note|edit|add|addcode)marker\d+\b", path.read_text()))
    return found


def _convergence_problems(home_a: Path, home_b: Path, db_path: Path, gone: set[str],
                          present: set[str]) -> list[str]:
    """Every way the crashed-and-resumed index differs from the clean one, each on one line."""
    problems: list[str] = []
    got, want = _state(home_a, "Crash"), _state(home_b, "Crash")
    chunk_ids = [row[0] for row in got["chunks"]]
    if len(chunk_ids) != len(set(chunk_ids)):
        problems.append("duplicate chunk ids")

    def compare(label: str, mine: list, clean: list) -> None:
        extra, missing = set(mine) - set(clean), set(clean) - set(mine)
        if extra or missing:
            problems.append(f"{label}: {len(extra)} extra, {len(missing)} missing; extra e.g. "
                            f"{sorted(map(str, extra))[:2]}, missing e.g. {sorted(map(str, missing))[:2]}")

    compare("chunk ids", chunk_ids, [row[0] for row in want["chunks"]])
    compare("document ids", [row[0] for row in got["docs"]], [row[0] for row in want["docs"]])
    compare("chunk rows", got["chunks"], want["chunks"])
    compare("document rows", got["docs"], want["docs"])
    compare("origin ledger", got["origins"], want["origins"])
    compare("fingerprints", got["fingerprints"], want["fingerprints"])
    compare("stored turns", got["turns"], want["turns"])
    compare("chroma ids vs sqlite chunk ids", list(got["vectors"]), chunk_ids)
    if got["fts_rows"] != len(chunk_ids):
        problems.append(f"FTS indexes {got['fts_rows']} rows for {len(chunk_ids)} chunks")
    problems.extend(vector_problems(want["vectors"], got["vectors"]))
    if not gone:
        problems.append("the edits deleted nothing, so stale postings were not tested")
    stale = {term: _fts_hits(db_path, term) for term in sorted(gone)}
    if any(stale.values()):
        problems.append(f"stale FTS postings for deleted text: {[t for t, h in stale.items() if h]}")
    for term in sorted(present)[:5]:
        if not _fts_hits(db_path, term):
            problems.append(f"{term} is in the sources but not in the FTS index")
    return problems


def _reported_errors(run: dict) -> str:
    """What an ingest that exited non-zero said: its --json errors, else its stderr's tail."""
    import json

    try:
        errors = json.loads(run["stdout"]).get("errors") or []
        return "; ".join(str(e.get("message", e))[:300] for e in errors[:3]) or "no errors listed"
    except (ValueError, AttributeError):
        return " | ".join(run["stderr"].strip().splitlines()[-3:])[:600]


def _plans(rng: random.Random) -> list[dict]:
    plans: list[dict] = []
    for i in range(MAX_ATTEMPTS):
        if i % 3 == 0:
            plans.append({"kind": "timed", "delay": None})
        else:
            event, (lo, hi), phase = PHASES[rng.randrange(len(PHASES))]
            plans.append({"kind": "event", "event": event, "nth": rng.randint(1, 3),
                          "delay": rng.uniform(lo, hi), "phase": phase})
    return plans


def test_sigkill_at_random_points_converges_to_a_clean_run(tmp_path: Path):
    started = time.monotonic()
    rng = random.Random(SEED)
    corpus = corpus_mod.build(tmp_path / "corpus", seed=SEED)
    home_a, home_b = tmp_path / "home-a", tmp_path / "home-b"
    env_a, env_b = _env(home_a), _env(home_b)
    flags = corpus.cli_flags()
    created = subprocess.run([str(CHINVEX_BIN), "context", "create", "Crash", *flags],
                             env=env_a, capture_output=True, text=True)
    assert created.returncode == 0, created.stderr
    db_path = home_a / "indexes" / "Crash" / "hybrid.db"
    trace = tmp_path / "trace.log"

    ever: set[str] = set(_markers(corpus))
    log: list[dict] = []
    duration_estimate = 8.0
    for attempt, plan in enumerate(_plans(rng)):
        if sum(1 for r in log if r["killed"]) >= KILLS:
            break
        if attempt and rng.random() < 0.6:
            corpus_mod.mutate(corpus, rng, attempt)
            ever |= _markers(corpus)
        if plan["kind"] == "timed":
            plan["delay"] = rng.uniform(0.05, duration_estimate)
            plan["phase"] = "timed"
        result = _ingest_and_kill(env_a, trace, plan)
        result["plan"] = plan
        log.append(result)
        if not result["killed"]:
            assert "Traceback" not in result["stderr"], result["stderr"]
            assert result["code"] in (0, 1), result
            duration_estimate = max(1.0, result["duration"])
        _sqlite_sound(db_path)

    kills = [r for r in log if r["killed"]]
    phases = Counter(r["plan"]["phase"] for r in kills)
    print(f"\n{len(kills)} kills in {len(log)} runs ({time.monotonic() - started:.0f} s): "
          + ", ".join(f"{k} {v}" for k, v in sorted(phases.items())))
    for r in kills:
        print(f"  killed [{r['plan']['phase']}] after {r['duration']:.2f} s; last event {r['at']}")
    # Runs that ended on their own with errors are the usual reason for too few kills (their
    # events never came): say what they reported.
    failed = [f"{r['plan'].get('event', 'timed')}: exit {r['code']} after {r['duration']:.1f} s: "
              f"{_reported_errors(r)}" for r in log if not r["killed"] and r["code"] != 0][:6]
    assert len(kills) >= KILLS, (len(kills), len(log), failed)
    assert len(phases) >= 6, (phases, failed)  # the kills are spread over the phases of a write

    # --yes here and in every killed run: the edits between runs delete sources by the dozen, and
    # this test is about removals interrupted and finished, not about the mass-removal question
    final = run_cli("ingest", "--context", "Crash", "--json", "--yes", env={"CHINVEX_HOME": str(home_a)})
    assert_no_traceback(final)
    # The whole message and the last kills: pytest would cut the result's repr short.
    assert final.code == 0, (final.code, final.stdout[-4000:], final.stderr[-2000:],
                             [(r["plan"]["phase"], r["at"]) for r in kills[-4:]])
    assert subprocess.run([str(CHINVEX_BIN), "context", "create", "Crash", *flags], env=env_b,
                          capture_output=True).returncode == 0
    clean = run_cli_in_process("ingest", "--context", "Crash", "--json", env={"CHINVEX_HOME": str(home_b)})
    assert clean.code == 0, clean
    problems = _convergence_problems(home_a, home_b, db_path, ever - _markers(corpus), _markers(corpus))
    doctor = run_cli("doctor", "--context", "Crash", "--json", env={"CHINVEX_HOME": str(home_a)})
    assert_no_traceback(doctor)
    for check in doctor.json["checks"]:
        if check["status"] != "ok":
            problems.append(f"doctor {check['name']}: {check['status']} x{check['count']} "
                            f"{check['message']} {check['examples']}")
    if doctor.code != 0:
        problems.append(f"doctor exit status {doctor.code}")
    assert not problems, "\n".join(problems)
    print(f"converged; whole test {time.monotonic() - started:.0f} s")


# -- exact crash points ---------------------------------------------------------------------
# Each case kills the ingest at one precise write point (the process SIGKILLs itself there),
# changes the sources the way a user might before the next run, and requires the next complete
# ingest to leave no trace of what was half-written.


def _traced(env: dict[str, str], trace: Path, kill_at: str | None) -> subprocess.CompletedProcess:
    own = [str(trace), str(BATCH)] + ([kill_at] if kill_at else [])
    return subprocess.run([sys.executable, "-m", "hostile.ingest_tracer", *own, "--", "ingest",
                           "--context", "Point", "--json"], env=env, capture_output=True,
                          text=True, cwd=TESTS_DIR, timeout=300)


def _module(marker: str, functions: int = 3, variant: str = "") -> str:
    rng = random.Random(marker + variant)
    return corpus_mod.python_module(rng, marker, functions)


def _consistent(home: Path, context: str) -> dict:
    """Doctor's findings (in this process), keyed by check, for the checks that are not ok."""
    from chinvex.doctor import diagnose

    os.environ["CHINVEX_HOME"] = str(home)
    report = diagnose(context)
    return {c.name: (c.count, c.examples) for c in report.checks if c.status != "ok"}


def _case_edit_killed_after_sqlite_commit(repo: Path, chat: Path) -> str:
    (repo / "a.py").write_text(_module("alphamarker", variant="v2"))
    return "ids_for_docs:start:1"


def _case_new_file_killed_before_fingerprint_then_deleted(repo: Path, chat: Path) -> str:
    (repo / "new.py").write_text(_module("ghostmarker"))
    return "write:start:1"


def _case_new_file_killed_after_chroma_upsert_then_deleted(repo: Path, chat: Path) -> str:
    (repo / "new.py").write_text(_module("ghostmarker"))
    return "upsert:end:1"


def _case_edit_killed_after_chroma_upsert_then_reverted(repo: Path, chat: Path) -> str:
    (repo / "a.py").write_text(_module("alphamarker", variant="v2"))
    return "upsert:end:1"


def _case_newer_export_killed_after_ledger_entry_then_deleted(repo: Path, chat: Path) -> str:
    write_marked_chatgpt_export(chat / "2026" / "conversations.json", "newermarker", 1_800_000_000.0)
    return "record:end:1"


def _case_edit_killed_after_sqlite_commit_then_reverted(repo: Path, chat: Path) -> str:
    """SQLite holds the edit, the fingerprint the original: reverted, the file matches its
    fingerprint again (same size, same content hash), yet the index holds the edit."""
    (repo / "a.py").write_text(_module("alphamarker", variant="v2"))
    return "ids_for_docs:start:1"


def _case_rename_killed_after_chroma_upsert_then_reverted(repo: Path, chat: Path) -> str:
    """A renamed conversation keeps its chunk ids (the title is only in the embedded header):
    Chroma gets the renamed vectors under ids whose rows still hold the old header."""
    export = chat / "2025" / "conversations.json"
    data = json.loads(export.read_text())
    for conv in data:
        conv["title"] = f"Renamed: medieval falconry {conv.get('title')}"
    export.write_text(json.dumps(data))
    return "upsert:end:1"


CASES = {
    "edit_killed_after_sqlite_commit": _case_edit_killed_after_sqlite_commit,
    "edit_killed_after_sqlite_commit_then_reverted": _case_edit_killed_after_sqlite_commit_then_reverted,
    "rename_killed_after_chroma_upsert_then_reverted": _case_rename_killed_after_chroma_upsert_then_reverted,
    "new_file_killed_before_fingerprint_then_deleted": _case_new_file_killed_before_fingerprint_then_deleted,
    "new_file_killed_after_chroma_upsert_then_deleted": _case_new_file_killed_after_chroma_upsert_then_deleted,
    "edit_killed_after_chroma_upsert_then_reverted": _case_edit_killed_after_chroma_upsert_then_reverted,
    "newer_export_killed_after_ledger_entry_then_deleted": _case_newer_export_killed_after_ledger_entry_then_deleted,
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_exact_crash_point_leaves_no_trace(case: str, tmp_path: Path, chinvex_home: Path):
    repo, chat = tmp_path / "repo", tmp_path / "chat"
    repo.mkdir()
    (repo / "a.py").write_text(_module("alphamarker"))
    (repo / "b.py").write_text(_module("betamarker"))
    write_marked_chatgpt_export(chat / "2025" / "conversations.json", "oldermarker", 1_700_000_000.0)
    env = _env(chinvex_home)
    assert run_cli_in_process("context", "create", "Point", "--repo", str(repo), "--chat-root", str(chat)).code == 0
    originals = {path: path.read_bytes() for path in (repo / "a.py", chat / "2025" / "conversations.json")}
    assert run_cli_in_process("ingest", "--context", "Point").code == 0

    kill_at = CASES[case](repo, chat)
    killed = _traced(env, tmp_path / "trace.log", kill_at)
    assert killed.returncode == -signal.SIGKILL, (kill_at, killed.stdout, killed.stderr)
    # What the user does before the next run:
    if case.endswith("then_deleted"):
        for path in (repo / "new.py", chat / "2026" / "conversations.json"):
            if path.exists():
                path.unlink()
    if case.endswith("then_reverted"):
        for path, data in originals.items():
            path.write_bytes(data)
    # The next runs in this process, as the fault-injection suite's settling ingests: the killed
    # process is gone either way, and the stores are opened again from their files.
    again = run_cli_in_process("ingest", "--context", "Point", "--json")
    assert again.code == 0, again
    if case.startswith("newer_export"):
        # The older export leaves too: no source has the conversations any more.
        (chat / "2025" / "conversations.json").unlink()
        assert run_cli_in_process("ingest", "--context", "Point").code == 0

    db_path = chinvex_home / "indexes" / "Point" / "hybrid.db"
    with sqlite3.connect(db_path) as conn:
        origins = {r[0] for r in conn.execute("SELECT DISTINCT origin_uri FROM documents")}
    expected = {str(repo / "a.py"), str(repo / "b.py")}
    if not case.startswith("newer_export"):
        expected.add(str(chat / "2025" / "conversations.json"))
    assert origins == expected, f"documents of vanished sources are still indexed: {origins - expected}"
    for term in ("ghostmarker", "newermarker", *(["oldermarker"] if case.startswith("newer") else [])):
        hits = run_cli("search", "--context", "Point", term, "--json", "--mode", "fts").json
        assert not [r for r in hits["results"] if term in r["text"]], term
    assert _consistent(chinvex_home, "Point") == {}
    assert _chunks_not_in_their_files(db_path) == []
    assert _vectors_not_matching_their_rows(chinvex_home, "Point") == []


def _chunks_not_in_their_files(db_path: Path) -> list[str]:
    """Every chunk of a file's document is a slice of the file as it is now (an index holding
    an edit the file no longer has fails this, whatever its fingerprint says)."""
    with sqlite3.connect(db_path) as conn:
        rows = conn.execute("SELECT c.chunk_id, c.text, d.origin_uri FROM chunks c "
                            "JOIN documents d USING(doc_id) WHERE d.source_type='repo'").fetchall()
    return [cid for cid, text, origin in rows if text not in Path(origin).read_text()]


def _vectors_not_matching_their_rows(home: Path, context: str) -> list[str]:
    """Every stored vector is the embedding of its row's embedded text (all of them, where
    doctor's vectors_stale check samples)."""
    import numpy as np

    from chinvex.doctor import STALE_COSINE
    from chinvex.embedding.factory import make_embedder
    from chinvex.context.registry import Registry
    from chinvex.storage import consistency as cons
    from chinvex.storage import db
    from chinvex.storage.vectors import VectorStore

    os.environ["CHINVEX_HOME"] = str(home)
    config = Registry().resolve(context)
    conn = db.connect(Path(config.index.sqlite_path))
    try:
        rows = list(cons.iter_chunk_rows(conn, sorted(cons.chunk_ids(conn))))
        store = VectorStore.open(config, conn, create=False)
        assert store is not None
        stored = store.embeddings([r["chunk_id"] for r in rows])
    finally:
        conn.close()
    texts = [cons.embed_text_of(r) for r in rows]
    assert None not in texts
    fresh = make_embedder(config.embedding).embed_documents(texts)
    bad = []
    for row, vector in zip(rows, fresh):
        old = np.asarray(stored[row["chunk_id"]], dtype=np.float32)
        if float(np.dot(old, vector) / (np.linalg.norm(old) * np.linalg.norm(vector))) < STALE_COSINE:
            bad.append(row["chunk_id"])
    return bad
