"""Web UI pages (issue 20): the server-side time of every page of `chinvex ui` at ~10k and ~100k
chunks; target < 150 ms each.

Each index is built by the real ingest pipeline (`run_ingest`: walk, parse, chunk, FTS, Chroma,
fingerprints, the run record) over generated markdown notes (20 sections of ~120 words each, ~40 chunks a note),
plus one Codex rollout of 5,000 turns (a user message, an assistant reply, a shell call and its
output, a patch every 10th exchange), with one exception: vectors are random unit vectors under
the built-in embedder's name, as in bench/mcp_server.py, because the real model embeds ~20
chunks/s here and 100k chunks would take hours. Search and ask embed their queries with the
real model, so their figures include that. 20 knowledge items with feedback are added
(`recall_add`'s storage functions).

Pages are requested in process through Starlette's TestClient, with the run's cookie, through
the whole guarded application (security checks, routing, the library calls, template
rendering); no network and no browser. Each page is requested 3 times to warm up, then
`RUNS` times; wall-clock p50 and p95 are reported with the page's size, and the CPU time p50
(the machine is shared: queueing behind other processes shows in the wall clock, not there).

    python bench/ui_pages.py [--quick] [--markdown]   # --quick: 10k chunks only; --markdown: the RESULTS.md section
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from pathlib import Path
from typing import Any

_HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(_HERE))
from common import REPO, Figure, median, pct, print_figures  # noqa: E402

OUT = REPO / "bench" / "out" / "ui"
CONTEXT = "uibench"
SECTIONS = 20
"""Sections per note (the markdown chunker makes about 40 chunks of a note)."""
CONVERSATION_TURNS = 5000
THREAD = "0195bbbb-0000-7000-8000-000000005000"
RUNS = 20
TARGET_MS = 150.0
DIMENSION = 384
_TOPICS = ["webhook", "retry", "backoff", "settlement", "ledger", "invoice", "idempotency", "refund",
           "acquirer", "chargeback", "merchant", "payout", "currency", "fraud", "kubernetes", "deploy",
           "migration", "schema", "cache", "queue", "timeout", "latency", "token", "session", "rollback"]
QUERIES = [f"{a} {b} {c}" for a, b, c in zip(_TOPICS, _TOPICS[7:] + _TOPICS[:7], _TOPICS[13:] + _TOPICS[:13])]
QUESTIONS = [f"How does the {a} {b} work?" for a, b in zip(_TOPICS, _TOPICS[3:] + _TOPICS[:3])]


class RandomVectors:
    """An embedder with the built-in model's name and dimension that returns random unit vectors
    (see the module docstring)."""

    def __init__(self, seed: int = 7) -> None:
        import numpy as np

        from chinvex.embedding.builtin import BuiltinEmbedder

        real = BuiltinEmbedder()  # its name only: the model is not loaded
        self.name, self.provider, self.model, self.dimension = real.name, real.provider, real.model, DIMENSION
        self._rng = np.random.default_rng(seed)

    def embed_documents(self, texts: list[str]) -> Any:
        import numpy as np

        vectors = self._rng.standard_normal((len(texts), DIMENSION)).astype(np.float32)
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def _write_notes(folder: Path, files: int, rng: random.Random) -> None:
    vocabulary = [f"w{i:04d}" for i in range(4000)] + _TOPICS * 20
    folder.mkdir(parents=True, exist_ok=True)
    for n in range(files):
        sections = [f"## Section {i}: {rng.choice(_TOPICS)} {rng.choice(_TOPICS)}\n\n"
                    + " ".join(rng.choice(vocabulary) for _ in range(120)) for i in range(SECTIONS)]
        (folder / f"note_{n:05d}.md").write_text(f"# Note {n}\n\n" + "\n\n".join(sections) + "\n")


def _write_rollout(folder: Path) -> None:
    """A Codex rollout of CONVERSATION_TURNS turns."""
    day = folder / "2026" / "03" / "01"
    day.mkdir(parents=True, exist_ok=True)
    lines = [{"timestamp": "2026-03-01T00:00:00.000Z", "type": "session_meta",
              "payload": {"id": THREAD, "timestamp": "2026-03-01T00:00:00.000Z", "cwd": "/home/dev/shop",
                          "originator": "codex_cli_rs", "cli_version": "0.104.0", "source": "cli",
                          "model_provider": "openai"}}]
    exchange = turns = 0
    while turns < CONVERSATION_TURNS:  # a call and its output are one turn
        exchange += 1
        turns += 4 if exchange % 10 == 0 else 3
        stamp = f"2026-03-01T{exchange // 3600 % 24:02d}:{exchange // 60 % 60:02d}:{exchange % 60:02d}.000Z"
        topic = _TOPICS[exchange % len(_TOPICS)]
        items = [
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": f"Step {exchange}: check the {topic} handling."}]},
            {"type": "function_call", "name": "exec_command", "call_id": f"c{exchange}",
             "arguments": json.dumps({"cmd": f"grep -rn {topic} src/ | head -20"})},
            {"type": "function_call_output", "call_id": f"c{exchange}", "output": f"Process exited with code 0\nOutput:\nsrc/{topic}.py:12: {topic} = load()\n"},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": f"The {topic} code loads its settings at start-up; step {exchange} is done."}]},
        ]
        if exchange % 10 == 0:
            items.insert(3, {"type": "custom_tool_call", "name": "apply_patch", "call_id": f"p{exchange}",
                             "input": f"*** Begin Patch\n*** Update File: src/{topic}.py\n@@\n-{topic} = load()\n+{topic} = load(strict=True)\n*** End Patch\n"})
            items.insert(4, {"type": "custom_tool_call_output", "call_id": f"p{exchange}", "output": "Success."})
        lines.extend({"timestamp": stamp, "type": "response_item", "payload": item} for item in items)
    (day / f"rollout-2026-03-01T00-00-00-{THREAD}.jsonl").write_text("\n".join(json.dumps(l) for l in lines) + "\n")


def build(home: Path, notes: int) -> dict[str, Any]:
    """The context CONTEXT under `home` (built once; a marker file says it is complete)."""
    marker = home / ".complete"
    if marker.exists():
        return json.loads(marker.read_text())
    import shutil

    shutil.rmtree(home, ignore_errors=True)
    os.environ["CHINVEX_HOME"] = str(home)
    from chinvex.ingest.pipeline import IngestOptions, run_ingest
    from chinvex.memory.feedback import record_feedback
    from chinvex.memory.items import insert_memory, make_memory
    from chinvex.context.registry import Registry
    from chinvex.storage import db

    started = time.perf_counter()
    rng = random.Random(11)
    _write_notes(home / "src" / "notes", notes, rng)
    _write_rollout(home / "src" / "codex")
    registry = Registry()
    registry.create(CONTEXT, includes={"note_roots": [str(home / "src" / "notes")],
                                       "codex_session_roots": [str(home / "src" / "codex")]})
    config = registry.resolve(CONTEXT)
    data = json.loads((home / "contexts" / CONTEXT / "context.json").read_text())
    data["codex_appserver"] = {"mode": "off"}
    (home / "contexts" / CONTEXT / "context.json").write_text(json.dumps(data))
    config = registry.resolve(CONTEXT)
    embedder = RandomVectors()
    summary = run_ingest(config, IngestOptions(embedder_factory=lambda: embedder))
    run_ingest(config, IngestOptions(embedder_factory=lambda: embedder))  # a no-change run for the history
    conn = db.connect(Path(config.index.sqlite_path))
    try:
        for n in range(20):
            item = make_memory("decision", f"Decision {n} about {_TOPICS[n]}", f"We keep the {_TOPICS[n]} settings "
                               f"in one place (decision {n}).", scope="project", tags=[_TOPICS[n]], metadata={})
            insert_memory(conn, item)
            for kind in ("useful", "not_useful", "useful"):
                record_feedback(conn, item_id=item.item_id, session_id="bench", kind=kind, context=f"note {n}",
                                  duplicate_of=None)
        chunks = conn.execute("SELECT COUNT(*) FROM chunks").fetchone()[0]
    finally:
        conn.close()
    info = {"chunks": chunks, "documents": summary.sources.indexed, "build_s": round(time.perf_counter() - started, 1)}
    marker.write_text(json.dumps(info))
    return info


def _pages(conn: Any) -> list[tuple[str, list[str]]]:
    """(page name, URLs to request in turn)."""
    doc_id, chunk_id = conn.execute(
        "SELECT c.doc_id, c.chunk_id FROM chunks c JOIN documents d USING(doc_id) WHERE d.source_type='note' "
        "ORDER BY c.rowid LIMIT 1 OFFSET 7").fetchone()
    from urllib.parse import quote

    return [
        ("contexts", ["/"]),
        ("documents list", ["/documents", "/documents?page=3", "/documents?type=note"]),
        ("document view (hit highlighted)", [f"/document/{doc_id}?chunk={chunk_id}&q=webhook+retry"]),
        ("search (explain)", [f"/search?q={quote(q)}&explain=1" for q in QUERIES]),
        (f"conversation, {CONVERSATION_TURNS:,} turns (first page)", [f"/conversation/{THREAD}"]),
        (f"conversation, {CONVERSATION_TURNS:,} turns (jump to turn 4,900)", [f"/conversation/{THREAD}?turn=4900"]),
        ("ask (extractive)", [f"/ask?q={quote(q)}" for q in QUESTIONS]),
        ("memories (20 items with feedback)", ["/memories"]),
        ("ingest history", ["/ingest"]),
    ]


def measure(home: Path, runs: int = RUNS) -> tuple[dict[str, tuple[list[float], list[float], int]], int]:
    """Per page: wall-clock and CPU milliseconds per request, and the largest response's size;
    and the chunk count. CPU time (of this process: the page's work on any thread, plus the
    test client's small share) is what a page costs without a shared machine's queueing."""
    os.environ["CHINVEX_HOME"] = str(home)
    from starlette.testclient import TestClient

    from chinvex.context.registry import Registry
    from chinvex.storage import db
    from chinvex.web.app import create_app
    from chinvex.web.security import RunSecrets, cookie_name
    from chinvex.web.state import UiState

    port = 8765
    state = UiState(run=RunSecrets.new(), default_context=CONTEXT)
    client = TestClient(create_app(state, port=port), base_url=f"http://127.0.0.1:{port}")
    client.cookies.set(cookie_name(port), state.run.token)
    config = Registry().resolve(CONTEXT)
    conn = db.connect(Path(config.index.sqlite_path), readonly=True)
    try:
        pages = _pages(conn)
        chunks = conn.execute("SELECT COUNT(*) FROM chunks").fetchone()[0]
    finally:
        conn.close()
    found: dict[str, tuple[list[float], list[float], int]] = {}
    for name, urls in pages:
        for url in urls[:3]:  # warm-up: the searcher's handles, the model, the page cache
            assert client.get(url).status_code == 200, (name, url)
        timings: list[float] = []
        cpu: list[float] = []
        size = 0
        for n in range(runs):
            url = urls[n % len(urls)]
            started, cpu_started = time.perf_counter(), time.process_time()
            response = client.get(url)
            timings.append((time.perf_counter() - started) * 1000)
            cpu.append((time.process_time() - cpu_started) * 1000)
            assert response.status_code == 200, (name, url, response.text[:300])
            size = max(size, len(response.content))
        found[name] = (timings, cpu, size)
    state.close()
    client.close()
    return found, chunks


def run(quick: bool = False) -> list[Figure]:
    figures: list[Figure] = []
    sizes = [("10k", 250)] if quick else [("10k", 250), ("100k", 2500)]
    for label, notes in sizes:
        home = OUT / f"home-{label}"
        info = build(home, notes)
        print(f"  index {label}: {info['chunks']:,} chunks ({info['build_s']} s to build)", file=sys.stderr)
        found, chunks = measure(home)
        for page, (timings, cpu, size) in found.items():
            p95 = pct(timings, 95)
            figures.append(Figure(f"{page} at {chunks:,} chunks, p50", median(timings), "ms",
                                  note=f"CPU time p50 {median(cpu):.1f} ms"))
            figures.append(Figure(f"{page} at {chunks:,} chunks, p95", p95, "ms", f"< {TARGET_MS:.0f} ms",
                                  p95 < TARGET_MS, note=f"{size / 1024:.0f} KB of HTML"))
    return figures


TITLE = "Web UI pages"
WHAT = ("Server-side time of every `chinvex ui` page through the whole guarded app (Starlette TestClient), "
        f"at ~10k and ~100k chunks (notes through the real ingest, random vectors) with a {CONVERSATION_TURNS:,}-turn "
        "Codex session.")


def markdown(figures: list[Figure], seconds: float) -> str:
    """The RESULTS.md section, in bench/run_all.py's format, with the machine and its load (the
    file's header describes the run that wrote the other sections)."""
    import datetime as dt

    from common import machine

    now = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    load1, load5, _ = os.getloadavg()
    lines = [f"## {TITLE}", "", f"{WHAT} ({seconds:.0f} s, measured {now} on {machine()}; load average "
             f"{load1:.2f} (1 min), {load5:.2f} (5 min) at the end)", "",
             "| figure | value | target | verdict | note |", "|---|---|---|---|---|"]
    for f in figures:
        value = "n/a" if f.value is None else (f"{f.value:,.3f}" if abs(f.value) < 100 else f"{f.value:,.0f}")
        verdict = {True: "meets", False: "**misses**", None: ""}[f.ok]
        lines.append(f"| {f.name} | {value} {f.unit} | {f.target} | {verdict} | {f.note} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the 10k-chunk index only")
    parser.add_argument("--markdown", action="store_true", help="also print the bench/RESULTS.md section")
    args = parser.parse_args()
    began = time.perf_counter()
    found = run(args.quick)
    print_figures(TITLE, found)
    if args.markdown:
        print()
        print(markdown(found, time.perf_counter() - began))
