"""`chinvex mcp` through the official SDK's stdio client, over an index of 10 000 chunks.

Figures: handshake (spawn -> `initialize` answered -> `tools/list` answered; target < 0.4 s (issue 17), since
nothing heavy may load before the first tool call; also on search_latency.py's ~100k-chunk index when built), the server's own CPU time up to that point
(what the handshake costs without the noise of a shared machine), the first (cold) search,
warm latency through MCP (p50/p95 of chinvex_search and recall_search, and recall_add), and the
server's peak RSS after the warm calls.

The index is SYNTHETIC: 10 000 chunks of generated text written through the storage layer (the
ingest's IndexWriter) with random unit vectors, because the real embedder runs ~20 chunks/s
here. The vector leg therefore does real work on a real Chroma collection of that size, but its
similarities are meaningless; query embeddings are real (the built-in model), so latencies
include embedding each query.

    python bench/mcp_server.py [--quick]
"""

from __future__ import annotations

import os
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

_HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(_HERE))
from common import CHINVEX, Figure, median, pct, print_figures  # noqa: E402

from chinvex.mcp.profiles import CORE  # noqa: E402


def _sdk() -> Any:
    """The `mcp` SDK package, imported when a measurement needs it."""
    import mcp as sdk

    return sdk


N_CHUNKS = 10_000
BIG_HOME = _HERE / "out" / "latency" / "home-100k"
BIG_INDEX = BIG_HOME / "indexes" / "big" / "hybrid.db"
"""The 100k-chunk index bench/search_latency.py builds: the handshake is measured on it too."""
CHUNKS_PER_DOC = 20
DIMENSION = 384

_TOPICS = ["webhook", "retry", "backoff", "settlement", "ledger", "invoice", "idempotency", "refund",
           "acquirer", "chargeback", "merchant", "payout", "currency", "fraud", "kubernetes", "deploy",
           "migration", "schema", "cache", "queue", "timeout", "latency", "token", "session", "rollback"]
QUERIES = [f"{a} {b} {c}" for a, b, c in zip(_TOPICS, _TOPICS[7:] + _TOPICS[:7], _TOPICS[13:] + _TOPICS[:13])]


def _words(rng: random.Random, n: int, vocabulary: list[str]) -> str:
    return " ".join(rng.choice(vocabulary) for _ in range(n))


def build_index(home: Path, n_chunks: int = N_CHUNKS, seed: int = 7) -> dict[str, Any]:
    """A context `bench` with `n_chunks` synthetic chunks (text + random unit vectors)."""
    import numpy as np

    os.environ["CHINVEX_HOME"] = str(home)
    from chinvex.embedding.builtin import BuiltinEmbedder
    from chinvex.ids import chunk_id as make_chunk_id
    from chinvex.ids import doc_id_for, sha256_hex
    from chinvex.ingest.prepare import PreparedChunk, PreparedDoc
    from chinvex.storage.writer import IndexWriter
    from chinvex.models import Chunk
    from chinvex.context.registry import Registry
    from chinvex.retrieval.lexical import index_text
    from chinvex.storage import db
    from chinvex.storage.vectors import VectorStore
    from chinvex.timeutil import now_iso

    started = time.perf_counter()
    rng = random.Random(seed)
    vocabulary = [f"w{i:04d}" for i in range(4000)] + _TOPICS * 20
    config = Registry().create("bench").config
    conn = db.connect(Path(config.index.sqlite_path))
    store = VectorStore.open(config, conn, create=True)
    vectors = np.random.default_rng(seed).standard_normal((n_chunks, DIMENSION)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)

    class RandomVectors:
        def __init__(self) -> None:
            self.next = 0

        def embed_documents(self, texts: list[str]) -> Any:
            out = vectors[self.next:self.next + len(texts)]
            self.next += len(texts)
            return out

    embedder = RandomVectors()
    writer = IndexWriter(conn, lambda: store, lambda: embedder, max_pending_chunks=1000)
    stamp = now_iso()
    for d in range(n_chunks // CHUNKS_PER_DOC):
        path = f"src/module_{d:04d}.md"
        doc_id = doc_id_for("repo", f"/bench/{path}")
        chunks = []
        offset = 0
        for i in range(CHUNKS_PER_DOC):
            text = f"## Section {i}\n\n" + _words(rng, 120, vocabulary)
            chunk = Chunk(chunk_id=make_chunk_id(doc_id, i, text), doc_id=doc_id, chunk_index=i, text=text,
                          char_start=offset, char_end=offset + len(text), metadata={"kind": "markdown", "path": path})
            offset += len(text) + 1
            embed = f"{path}\n{text}"
            chunks.append(PreparedChunk(chunk=chunk, embed_text=embed, embed_hash=sha256_hex(embed),
                                        search_text=index_text(embed)))
        writer.add(PreparedDoc(doc_id=doc_id, source_type="repo", source_uri=f"/bench/{path}",
                               origin_uri=f"/bench/{path}", title=path, created_at=stamp, updated_at=stamp,
                               metadata={"path": path}, content_hash=doc_id, chunks=chunks))
    writer.flush()
    real = BuiltinEmbedder()  # its name only: the model is not loaded here
    db.set_meta(conn, "embedder", real.name)
    db.set_meta(conn, "embedding_provider", real.provider)
    db.set_meta(conn, "embedding_model", real.model)
    db.set_meta(conn, "embedding_dimension", str(DIMENSION))
    count = conn.execute("SELECT COUNT(*) FROM chunks").fetchone()[0]
    vector_count = store.count()
    # ... and end as an ingest ends: the vector files signed and the vector matrix written
    # (chinvex.storage.vector_matrix), which a server below KEPT_PROCESS_LIMIT reads instead of
    # loading Chroma's index. Without them the first search measured a load no ingested index has.
    from chinvex.storage import vector_matrix_refresh, vector_signature

    store.close()
    vector_signature.record_signature(config, conn)
    vector_matrix_refresh.refresh(config, conn, None)
    conn.close()
    return {"chunks": count, "vectors": vector_count, "build_s": time.perf_counter() - started}


def _server_pid() -> int:
    import psutil

    for proc in psutil.Process().children(recursive=True):
        try:
            if "mcp" in " ".join(proc.cmdline()):
                return proc.pid
        except psutil.Error:
            continue
    raise RuntimeError("server process not found")


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks  # utime + stime


def _peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _params(home: Path, cwd: Path, tools: str = "default", context: str = "bench") -> Any:
    return _sdk().StdioServerParameters(command=CHINVEX, args=["mcp", "--context", context],
                                        env={"CHINVEX_HOME": str(home), "ANONYMIZED_TELEMETRY": "False",
                                             "CHINVEX_MCP_TOOLS": tools}, cwd=str(cwd))


def _list_chars(tools: list[Any]) -> int:
    """Characters of the tool list as the server sends it (compact JSON)."""
    import json

    return len(json.dumps([t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in tools],
                          separators=(",", ":")))


async def _handshakes(home: Path, cwd: Path, runs: int,
                      context: str = "bench") -> tuple[list[float], list[float], list[float]]:
    Client = _sdk().Client
    totals, inits, cpus = [], [], []
    for _ in range(runs):
        started = time.perf_counter()
        async with Client(_params(home, cwd, context=context), mode="legacy") as client:
            initialised = time.perf_counter()
            listed = await client.list_tools()
            done = time.perf_counter()
            assert [t.name for t in listed.tools] == list(CORE)  # the default profile
            cpus.append(_cpu_seconds(_server_pid()))
        totals.append(done - started)
        inits.append(initialised - started)
    return totals, inits, cpus


async def _warm(home: Path, cwd: Path, runs: int) -> dict[str, Any]:
    import anyio

    Client = _sdk().Client
    out: dict[str, Any] = {"search": [], "recall": [], "add": []}

    async def timed(client: Any, tool: str, args: dict[str, Any]) -> float:
        started = time.perf_counter()
        result = await client.call_tool(tool, args)
        elapsed = time.perf_counter() - started
        if result.is_error:
            raise RuntimeError(f"{tool} failed: {result.content[0].text}")
        return elapsed

    async with Client(_params(home, cwd, "default"), mode="legacy") as client:
        out["list_default"] = _list_chars((await client.list_tools()).tools)
        # An agent's first search comes when its user has asked something, not in the same
        # instant as the handshake: the server warms up (model, Chroma) meanwhile.
        await anyio.sleep(AGENT_PAUSE_S)
        out["search_after_pause"] = await timed(client, "chinvex_search", {"query": "webhook retry backoff", "k": 8})
    async with Client(_params(home, cwd, "all"), mode="legacy", read_timeout_seconds=300) as client:
        pid = _server_pid()
        out["list_all"] = _list_chars((await client.list_tools()).tools)
        out["cold_search"] = await timed(client, "chinvex_search", {"query": "webhook retry backoff", "k": 8})
        out["cold_recall"] = await timed(client, "recall_search", {"query": "settlement ledger", "limit": 10})
        for i in range(runs):
            query = QUERIES[i % len(QUERIES)]
            out["search"].append(await timed(client, "chinvex_search", {"query": query, "k": 8}))
            out["recall"].append(await timed(client, "recall_search", {"query": query, "limit": 10}))
        for i in range(max(3, runs // 6)):
            out["add"].append(await timed(client, "recall_add", {
                "type": "decision", "title": f"Bench decision {i}",
                "content": f"Decision {i}: " + " ".join(QUERIES[i % len(QUERIES)] for _ in range(20))}))
        out["peak_rss_mb"] = _peak_rss_mb(pid)
        payloads = {}
        for tool, args in PAYLOAD_CALLS:
            result = await client.call_tool(tool, args)
            payloads[tool] = len(result.content[0].text)
        out["payloads"] = payloads
    return out


AGENT_PAUSE_S = 3.0
"""Seconds between the handshake and an agent's first search in the figure that measures the
warm-up (the server loads the model and opens Chroma in the background after the handshake)."""

PAYLOAD_CALLS = [
    ("chinvex_search", {"query": "webhook retry backoff"}),
    ("chinvex_answer", {"query": "How are webhook retries scheduled?"}),
    ("chinvex_pack", {"task": "change the webhook retry policy"}),
    ("recall_search", {"query": "settlement ledger"}),
    ("recall_list", {"type": "decision"}),
]
"""Each tool with its default arguments: the payload an agent gets when it does not ask for less."""


def run(quick: bool = False) -> list[Figure]:
    import anyio

    handshake_runs = 5 if quick else 15
    warm_runs = 15 if quick else 60
    previous_home = os.environ.get("CHINVEX_HOME")
    with tempfile.TemporaryDirectory(prefix="chinvex-bench-mcp-") as tmp:
        home = Path(tmp) / "home"
        try:
            built = build_index(home)
        finally:
            if previous_home is None:
                os.environ.pop("CHINVEX_HOME", None)
            else:
                os.environ["CHINVEX_HOME"] = previous_home
        cwd = Path(tmp)
        totals, inits, cpus = anyio.run(_handshakes, home, cwd, handshake_runs)
        warm = anyio.run(_warm, home, cwd, warm_runs)
        big = anyio.run(_handshakes, BIG_HOME, cwd, handshake_runs, "big")[0] if BIG_INDEX.exists() else None
    note = f"synthetic index: {built['chunks']:,} chunks, {built['vectors']:,} random unit vectors (built in {built['build_s']:.0f} s)"
    hs50 = median(totals)
    return [
        Figure("handshake (spawn -> initialize -> tools/list) p50", hs50, "s", "< 0.4 s", hs50 < 0.4, note),
        Figure("handshake best", min(totals), "s", "< 0.4 s", min(totals) < 0.4, f"{handshake_runs} runs"),
        Figure("handshake p50 at ~100k chunks", median(big) if big else None, "s", "< 0.4 s",
               (median(big) < 0.4) if big else None,
               "bench/search_latency.py's 106,780-chunk index (real SciFact text and vectors, replicated)"
               if big else "not measured: run bench/search_latency.py first, it builds the index"),
        Figure("handshake worst", max(totals), "s"),
        Figure("spawn -> initialize answered p50", median(inits), "s"),
        Figure("server CPU time until tools/list answered p50", median(cpus), "s", "",
               None, "user+sys of the server process: the handshake's cost without a shared machine's queueing"),
        Figure("first chinvex_search (loads the embedder; the vector matrix answers)", warm["cold_search"], "s", "", None,
               "asked in the instant the handshake ends"),
        Figure(f"first chinvex_search {AGENT_PAUSE_S:.0f} s after the handshake", warm["search_after_pause"], "s",
               "< 0.5 s", warm["search_after_pause"] < 0.5, "the server warms up in the background meanwhile"),
        Figure("first recall_search", warm["cold_recall"], "s"),
        Figure("chinvex_search warm p50", median(warm["search"]) * 1000, "ms", "", None, f"{warm_runs} queries, k=8"),
        Figure("chinvex_search warm p95", pct(warm["search"], 95) * 1000, "ms"),
        Figure("recall_search warm p50", median(warm["recall"]) * 1000, "ms", "", None, "limit=10, scope=all"),
        Figure("recall_search warm p95", pct(warm["recall"], 95) * 1000, "ms"),
        Figure("recall_add p50", median(warm["add"]) * 1000, "ms", "", None, f"{len(warm['add'])} adds, ~2 KB each"),
        Figure("server peak RSS (VmHWM)", warm["peak_rss_mb"], "MB"),
        Figure("tools/list, default profile", warm["list_default"], "characters", "< 4,000",
               warm["list_default"] < 4000, ", ".join(CORE)),
        Figure("tools/list, all tools (--tools all)", warm["list_all"], "characters"),
        *[Figure(f"default payload: {tool}", size, "characters", "", None,
                 "max_tokens 2,000 / budget_tokens 2,000 (about 8,000 characters of text)")
          for tool, size in warm["payloads"].items()],
    ]


if __name__ == "__main__":
    print_figures("MCP server", run(quick="--quick" in sys.argv))
