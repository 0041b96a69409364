"""8 MCP clients x 200 queries while ingests of the same context keep writing (issue 16).

Each client is what an agent runs: the official SDK's stdio client driving its own `chinvex mcp`
process. Every client sends 200 calls one after another (3 of 4 `chinvex_search`, 1 of 4
`recall_search`, which also writes its query to the flight recorder), all at once with the other
clients. Meanwhile a loop keeps `chinvex ingest` of the same context busy: each round adds 24
notes, edits one of the previous round's and deletes the others, so every run embeds, upserts
and deletes vectors and rows. The index is a snapshot of this repository's `chinvex/`, `docs/` and README
(real text, the real built-in embedder).

Figures: calls answered, errors (an `isError` result or a failed call: target 0), latency
p50/p95/max over all calls and over those that overlapped a writing ingest, answers whose top
result differs from the same query's top result before the load (the new files are about other
things, so a change means a search saw a half-written index), answers that fell back to FTS only,
ingest runs and their failures.

    python bench/mcp_load.py [--quick]      # --quick: docs only, 4 clients x 25 calls
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

_HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(_HERE))
from common import CHINVEX, REPO, Figure, median, pct, print_figures  # noqa: E402

CONTEXT = "load"
NOTES_PER_ROUND = 24
QUERIES = [
    "how does the MCP server answer a malformed line",
    "vector journal crash safety settle",
    "fingerprint reasons mtime size content changed",
    "reciprocal rank fusion weights lexical vector",
    "chunk header markdown heading path",
    "redaction of secrets before storing",
    "context default resolution working directory",
    "doctor repair vectors missing orphaned",
    "grounded answer refusal relatedness floor",
    "writer lock wait LOCKED",
    "conversation turns grouped into chunks budget",
    "Chroma gate change token reopen client",
]


def _snapshot(target: Path, quick: bool) -> int:
    paths = ["docs", "README.md"] if quick else ["chinvex", "docs", "README.md"]
    files = subprocess.run(["git", "-C", str(REPO), "ls-files", *paths], capture_output=True, text=True,
                           check=True).stdout.split()
    for rel in files:
        if rel.endswith("tokenizer.json"):
            continue
        (target / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / rel, target / rel)
    return len(files)


def _chinvex(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([CHINVEX, *args], env=env, capture_output=True, text=True)


def _ledger_note(n: int, k: int, edit: int) -> str:
    """A note about something the bench queries never ask (so their top results must not move)."""
    return f"# Ledger note {n}.{k}\n\n" + " ".join(
        f"Payout {n}-{k}-{i}: currency conversion for merchant refunds settles on day {(i + edit) % 28 + 1}."
        for i in range(12)) + "\n"


class IngestLoop(threading.Thread):
    """Rounds of new/edited/deleted files, each followed by `chinvex ingest` of the context."""

    def __init__(self, env: dict[str, str], root: Path):
        super().__init__(daemon=True)
        self.env, self.root = env, root
        self.stop = threading.Event()
        self.runs: list[dict[str, Any]] = []

    def run(self) -> None:
        folder = self.root / "load_notes"
        folder.mkdir(exist_ok=True)
        n = 0
        while not self.stop.is_set():
            n += 1
            for k in range(NOTES_PER_ROUND):
                (folder / f"round_{n}_{k}.md").write_text(_ledger_note(n, k, 0), encoding="utf-8")
            for old in folder.glob(f"round_{n - 1}_*.md"):  # one edited, the others deleted
                if old.name.endswith("_0.md"):
                    old.write_text(_ledger_note(n - 1, 0, n), encoding="utf-8")
                else:
                    old.unlink()
            started = time.perf_counter()
            proc = _chinvex(self.env, "ingest", "--context", CONTEXT, "--wait", "--json")
            run: dict[str, Any] = {"start": started, "end": time.perf_counter(), "code": proc.returncode}
            try:
                summary = json.loads(proc.stdout)
                run["embedded"] = summary["chunks"]["embedded"]
            except (ValueError, KeyError, TypeError):
                run["error"] = (proc.stderr or proc.stdout)[-400:]
            self.runs.append(run)


async def _client(env: dict[str, str], cwd: Path, calls: int, offset: int, baseline: dict[str, str] | None,
                  out: list[dict[str, Any]]) -> None:
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(command=CHINVEX, args=["mcp", "--context", CONTEXT],
                                   env={**env, "CHINVEX_MCP_TOOLS": "all"}, cwd=str(cwd))
    async with Client(params, mode="legacy", read_timeout_seconds=600) as client:
        for i in range(calls):
            query = QUERIES[(offset + i) % len(QUERIES)]
            recall = (offset + i) % 4 == 3
            started = time.perf_counter()
            record: dict[str, Any] = {"start": started, "tool": "recall_search" if recall else "chinvex_search"}
            try:
                if recall:
                    result = await client.call_tool("recall_search", {"query": query, "types": ["code", "doc"],
                                                                      "scope": "project", "limit": 5})
                else:
                    result = await client.call_tool("chinvex_search", {"query": query, "k": 8})
            except Exception as exc:  # a failed call is an error to count, not a crash of the bench
                record.update(end=time.perf_counter(), error=f"{type(exc).__name__}: {exc}")
                out.append(record)
                continue
            record["end"] = time.perf_counter()
            payload = result.structured_content or {}
            if result.is_error:
                record["error"] = (result.content[0].text if result.content else "isError")[:300]
            elif not recall:
                rows = payload.get("results", [])
                record["top"] = rows[0]["chunk_id"] if rows else None
                record["fts_only"] = payload.get("stats", {}).get("mode") == "fts"
                if baseline is not None:
                    record["top_changed"] = record["top"] != baseline.get(query)
            out.append(record)


async def _baseline(env: dict[str, str], cwd: Path) -> dict[str, str]:
    records: list[dict[str, Any]] = []
    await _client(env, cwd, len(QUERIES) * 4, 0, None, records)
    tops = {}
    for i, record in enumerate(records):
        if record["tool"] == "chinvex_search" and "error" not in record:
            tops[QUERIES[i % len(QUERIES)]] = record["top"]
    return tops


async def _load(env: dict[str, str], cwd: Path, clients: int, calls: int,
                baseline: dict[str, str]) -> tuple[list[dict[str, Any]], float]:
    import anyio

    records: list[dict[str, Any]] = []
    started = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for c in range(clients):
            tg.start_soon(_client, env, cwd, calls, c * 5, baseline, records)
    return records, time.perf_counter() - started


def run(quick: bool = False) -> list[Figure]:
    import anyio

    clients, calls = (4, 25) if quick else (8, 200)
    with tempfile.TemporaryDirectory(prefix="chinvex-bench-mcp-load-") as tmp:
        base = Path(tmp)
        root, home = base / "src", base / "home"
        n_files = _snapshot(root, quick)
        env = {**os.environ, "CHINVEX_HOME": str(home), "ANONYMIZED_TELEMETRY": "False"}
        created = _chinvex(env, "context", "create", CONTEXT, "--repo", str(root))
        if created.returncode != 0:
            raise RuntimeError(f"context create failed: {created.stderr}")
        started = time.perf_counter()
        first = _chinvex(env, "ingest", "--context", CONTEXT, "--json")
        if first.returncode != 0:
            raise RuntimeError(f"first ingest failed: {first.stderr[-500:]}")
        first_s = time.perf_counter() - started
        first_chunks = json.loads(first.stdout)["chunks"]["embedded"]
        baseline = anyio.run(_baseline, env, base)

        loop = IngestLoop(env, root)
        loop.start()
        while not loop.runs and loop.is_alive():  # from here on, an ingest is writing
            time.sleep(0.2)
        try:
            records, wall = anyio.run(_load, env, base, clients, calls, baseline)
        finally:
            loop.stop.set()
            loop.join()

    runs = loop.runs
    writing = [(r["start"], r["end"]) for r in runs[1:]]
    for record in records:
        record["during"] = any(a <= record["end"] and record["start"] <= b for a, b in writing)
    errors = [r for r in records if "error" in r]
    latencies = [r["end"] - r["start"] for r in records]
    during = [r["end"] - r["start"] for r in records if r["during"]]
    searches = [r for r in records if r["tool"] == "chinvex_search" and "error" not in r]
    changed = sum(1 for r in searches if r.get("top_changed"))
    fts_only = sum(1 for r in searches if r.get("fts_only"))
    failed_runs = [r for r in runs if r["code"] != 0]
    total = clients * calls
    note = (f"{clients} clients x {calls} calls, {n_files} files / {first_chunks} chunks indexed first "
            f"({first_s:.0f} s); {len(records)} answered in {wall:.0f} s")
    figures = [
        Figure("calls answered", len(records), "calls", f"= {total}", len(records) == total, note),
        Figure("errors", len(errors), "calls", "0", not errors,
               "; ".join(sorted({e['error'][:120] for e in errors}))[:400]),
        Figure("latency p50 (all calls)", median(latencies) * 1000, "ms"),
        Figure("latency p95 (all calls)", pct(latencies, 95) * 1000, "ms"),
        Figure("latency max", max(latencies) * 1000, "ms", "", None, "includes each server's first call (model and Chroma load)"),
        Figure("calls overlapping an ingest run", len(during), "calls", "", None,
               "a call that ran while a `chinvex ingest` process was alive (runs after the first)"),
        Figure("latency p95 of those", pct(during, 95) * 1000 if during else None, "ms"),
        Figure("searches whose top result changed under load", changed, "searches", "0", changed == 0,
               f"of {len(searches)} chinvex_search answers, vs the same query before the load"),
        Figure("searches answered FTS-only", fts_only, "searches"),
        Figure("ingest runs during the load", len(runs), "runs", "", None,
               f"{sum(r.get('embedded', 0) for r in runs)} chunks embedded in all"),
        Figure("ingest runs that failed", len(failed_runs), "runs", "0", not failed_runs,
               "; ".join(str(r.get("error", r["code"]))[:200] for r in failed_runs[:3])),
    ]
    return figures


if __name__ == "__main__":
    print_figures("MCP under load", run(quick="--quick" in sys.argv))
