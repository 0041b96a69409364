"""Issue 40: "a kill in the first tens of seconds of a big ingest keeps none of its work (the
first commit comes late)". The writer's first batch is now small and the batches grow, so a
real ingest of a corpus larger than one full batch commits its first documents within seconds;
a SIGKILL then keeps them, and the next ingest skips the sources whose fingerprints were
committed and ingests only the rest.

Real SQLite, real Chroma, the real built-in embedder, a real `chinvex ingest` process killed
for real.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from helpers import REPO_ROOT, assert_no_traceback, run_cli

NOTES = 300
"""One chunk each: more chunks than one full write batch (`max_pending_chunks`, 256), so the
old writer could not commit anything before it had embedded a whole batch."""
FULL_BATCH = 256


def _counts(db: Path) -> tuple[int, int] | None:
    """(committed fingerprints, committed chunks), read-only; None while unreadable."""
    try:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1)
        try:
            return (int(conn.execute("SELECT COUNT(*) FROM source_fingerprints").fetchone()[0]),
                    int(conn.execute("SELECT COUNT(*) FROM chunks").fetchone()[0]))
        finally:
            conn.close()
    except sqlite3.Error:
        return None


def _first_commit(proc: subprocess.Popen, db: Path, timeout: float) -> tuple[int, int, float]:
    """Poll hybrid.db until the running ingest has committed a source: (fingerprints, chunks,
    seconds since start)."""
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        assert proc.poll() is None, "the ingest ended before anything was seen committed"
        counts = _counts(db) if db.exists() else None
        if counts is not None and counts[0] > 0:
            return counts[0], counts[1], time.monotonic() - start
        time.sleep(0.02)
    raise AssertionError(f"no commit within {timeout:.0f} s")


def test_a_kill_seconds_into_a_big_ingest_keeps_what_was_committed(tmp_path: Path, chinvex_home: Path):
    root = tmp_path / "notes"
    root.mkdir()
    for i in range(NOTES):
        (root / f"n{i:04d}.md").write_text(f"# Ledger {i}\n\nSettlement line {i} of account {i % 13}.\n",
                                           encoding="utf-8")
    assert run_cli("context", "create", "Early", "--note-root", str(root)).code == 0
    db = chinvex_home / "indexes" / "Early" / "hybrid.db"
    proc = subprocess.Popen([sys.executable, "-m", "chinvex", "ingest", "--context", "Early"],
                            cwd=REPO_ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        sources, chunks, seconds = _first_commit(proc, db, timeout=120)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=60)
    # The first commit holds far less than a full batch: the old writer's first commit came
    # only once 256 chunks were embedded (and then held at least that many).
    assert 0 < chunks < FULL_BATCH and sources < NOTES, (sources, chunks)
    print(f"\nfirst commit after {seconds:.1f} s: {sources} sources, {chunks} chunks")
    kept, _ = _counts(db)
    assert 0 < kept < NOTES

    again = run_cli("ingest", "--context", "Early", "--json")
    assert_no_traceback(again)
    assert again.code == 0, again
    counted = again.json["sources"]
    assert counted["unchanged"] == kept and counted["indexed"] == NOTES - kept, counted
    assert again.json["chunks"]["total"] == again.json["chunks"]["with_vector"] == NOTES
