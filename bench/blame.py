"""`chinvex blame` latency in a context of 10,000 sessions, and what recording edits costs an
ingest (issue 37: under 300 ms warm for a 500-line file; under 5 % of the ingest).

Latency: a hybrid.db holding 10,000 agent sessions whose edits (12 each, 25 added lines on
average, over 2,000 files) are written through the writer's own `chinvex.storage.edits.record`;
the blamed file has 500 lines, 40 sessions wrote parts of it across 6 commits of a real git
repository, some lines are a person's, and ~2,400 edits of other packages' files of the same
name must be told apart by their path. `chinvex.blame.service.blame` on the whole file (git
blame included), median and p95 of 20 warm calls, then of a 20-line range.

Ingest cost: every agent's real samples (tests/fixtures/samples) ingested in-process into one
context with the built-in embedder; the time spent inside `edits.record` (the whole of what
recording adds: hashing the added lines and writing the rows) as a share of the ingest's time.
"""

from __future__ import annotations

import os
import random
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from common import FIXTURES, REPO, Figure, print_figures

OUT = REPO / "bench" / "out" / "blame"
SESSIONS = 10_000
FILES = 2_000
EDITS_PER_SESSION = 12
TARGET_LINES = 500
WRITERS = 40
AGENTS = ["claude_code", "codex", "gemini", "cursor", "cline", "copilot_chat", "opencode", "aider"]
WORDS = ("user", "order", "total", "retry", "cache", "token", "config", "result", "value", "index", "client",
         "request", "parse", "item", "path", "count", "limit", "record", "state", "event")


def _line(rng: random.Random) -> str:
    a, b, c = rng.choice(WORDS), rng.choice(WORDS), rng.choice(WORDS)
    shape = rng.randrange(5)
    return ["    {a}_{b} = {c}({a}, {n})", "    if {a}.{b} > {n}:", "        return {c}_{a}[{n}]",
            "def {a}_{b}_{n}({c}):", "    {a}.{c}({b}={n})"][shape].format(a=a, b=b, c=c, n=rng.randrange(1000))


def _git(repo: Path, *args: str, when: str | None = None) -> None:
    env = dict(os.environ, GIT_AUTHOR_NAME="Dev", GIT_AUTHOR_EMAIL="d@x", GIT_COMMITTER_NAME="Dev",
               GIT_COMMITTER_EMAIL="d@x")
    if when:
        env.update(GIT_AUTHOR_DATE=when, GIT_COMMITTER_DATE=when)
    subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)


def build(rng: random.Random) -> tuple[Path, Path]:
    """The index and the blamed file (in its git repository)."""
    import orjson

    from chinvex.storage import db, edits

    shutil.rmtree(OUT, ignore_errors=True)
    repo = OUT / "repo"
    (repo / "src").mkdir(parents=True)
    _git(repo, "init", "-q")
    conn = db.connect(OUT / "hybrid.db", create=True)
    target = repo / "src" / "orders.py"
    target_lines: list[str] = []
    writers = set(rng.sample(range(SESSIONS), WRITERS))
    conn.execute("BEGIN")
    for s in range(SESSIONS):
        day = 1 + s * 300 // SESSIONS
        ts = f"2026-{1 + day // 31:02d}-{1 + day % 28:02d}T{10 + s % 10:02d}:{s % 60:02d}:00.000Z"
        doc_id = f"session-{s:05d}"
        meta = {"doc_type": "conversation", "source": AGENTS[s % len(AGENTS)], "thread_id": f"t-{s:05d}",
                "cwd": "/home/dev/proj"}
        conn.execute("INSERT INTO documents(doc_id, source_type, source_uri, title, created_at, updated_at, "
                     "metadata_json, origin_uri) VALUES(?,?,?,?,?,?,?,?)",
                     (doc_id, "agent_session", f"/s/{doc_id}.jsonl", f"Session {s}", ts, ts,
                      orjson.dumps(meta).decode(), f"/s/{doc_id}.jsonl"))
        turns = [{"turn_id": "u", "ts": ts, "role": "user", "text": f"Please change things ({s})"}]
        for e in range(EDITS_PER_SESSION):
            added = [_line(rng) for _ in range(rng.randrange(5, 46))]
            if s in writers and e == 0:
                take = added[: TARGET_LINES // WRITERS]
                target_lines += take
                path = str(target.relative_to(repo))
            elif rng.random() < 0.02:  # another package's file of the same name: matched by path
                path = f"pkg{rng.randrange(500)}/orders.py"
            else:
                path = f"src/mod_{rng.randrange(FILES)}.py"
            turns.append({"turn_id": f"t{e}", "ts": ts, "role": "tool", "text": "Tool: Edit",
                          "meta": {"edits": [{"path": path, "op": "edit", "abs_path": f"/home/dev/proj/{path}",
                                              "old_text": "pass", "new_text": "\n".join(added)}]}})
        conn.executemany("INSERT INTO conversation_turns(doc_id, turn_index, turn_json) VALUES(?,?,?)",
                         [(doc_id, i, orjson.dumps(t).decode()) for i, t in enumerate(turns)])
        edits.record(conn, doc_id, turns, 0, ts)
    conn.execute("COMMIT")
    while len(target_lines) < TARGET_LINES:
        target_lines.append(f"    by_hand_{len(target_lines)} = {len(target_lines)}  # a person's line")
    rng.shuffle(target_lines)
    for n, cut in enumerate(range(TARGET_LINES // 6, TARGET_LINES + 1, TARGET_LINES // 6)):
        target.write_text("\n".join(target_lines[:cut]) + "\n", encoding="utf-8")
        _git(repo, "add", "-A")
        _git(repo, "commit", "-qm", f"step {n}", when=f"2026-11-{n + 1:02d}T12:00:00+0000")
    target.write_text("\n".join(target_lines[:TARGET_LINES]) + "\n", encoding="utf-8")
    conn.execute("ANALYZE")
    conn.close()
    return OUT / "hybrid.db", target


def _timed(fn, repeats: int) -> tuple[float, float]:
    fn()  # warm: pages cached, git's object store read once
    runs = []
    for _ in range(repeats):
        started = time.perf_counter()
        fn()
        runs.append((time.perf_counter() - started) * 1000)
    runs.sort()
    return statistics.median(runs), runs[int(len(runs) * 0.95) - 1]


def latency(quick: bool) -> list[Figure]:
    from chinvex.blame.service import Target, blame
    from chinvex.storage import db, edits

    index, target = build(random.Random(37))
    conn = db.connect(index)
    explained = 0
    try:
        rows = edits.count(conn)
        size = index.stat().st_size
        report = blame(conn, Target(target, None, None), context="bench")
        explained = sum(1 for line in report["lines"] if line["sessions"])
        whole = _timed(lambda: blame(conn, Target(target, None, None), context="bench"), 10 if quick else 20)
        part = _timed(lambda: blame(conn, Target(target, 200, 219), context="bench"), 10 if quick else 20)
    finally:
        conn.close()
    note = (f"{SESSIONS:,} sessions, {rows:,} edits, index {size / 1e6:.0f} MB; {explained} of "
            f"{TARGET_LINES} lines explained by {len(report['sessions'])} sessions")
    return [
        Figure("blame of a 500-line file, warm (median)", whole[0], "ms", "< 300", whole[0] < 300, note),
        Figure("blame of a 500-line file, warm (p95)", whole[1], "ms"),
        Figure("blame of 20 lines of it, warm (median)", part[0], "ms", "< 300", part[0] < 300),
    ]


def ingest_share() -> list[Figure]:
    from chinvex.embedding.factory import make_embedder
    from chinvex.ingest.pipeline import IngestOptions, run_ingest
    from chinvex.context.registry import Registry
    from chinvex.storage import edits

    from agents import KINDS

    from chinvex.models import EmbeddingConfig

    home = OUT / "ingest"
    shutil.rmtree(home, ignore_errors=True)
    os.environ["CHINVEX_HOME"] = str(home)
    spent = [0.0, 0]
    original = edits.record

    def timed_record(*args, **kwargs):
        started = time.perf_counter()
        try:
            written = original(*args, **kwargs)
        finally:
            spent[0] += time.perf_counter() - started
        spent[1] += written
        return written

    edits.record = timed_record
    try:
        config = Registry().create("agents", includes={"sessions": [
            f"{kind}={FIXTURES / folder}" for kind, folder in KINDS.items()]}).config
        embedder = make_embedder(EmbeddingConfig())
        embedder.embed_documents(["warm up the model once"])
        options = IngestOptions(embedder_factory=lambda: embedder)
        started = time.perf_counter()
        summary = run_ingest(config, options)
        elapsed = time.perf_counter() - started
    finally:
        edits.record = original
    share = 100 * spent[0] / elapsed
    note = (f"{spent[1]} edits recorded in {spent[0] * 1000:.0f} ms of a {elapsed:.1f} s ingest of "
            f"{summary.sources.indexed} sources (every agent's samples)")
    return [Figure("edit recording, share of ingest time", share, "%", "< 5", share < 5, note)]


def run(quick: bool = False) -> list[Figure]:
    return latency(quick) + ingest_share()


if __name__ == "__main__":
    print_figures("Blame", run("--quick" in sys.argv))
