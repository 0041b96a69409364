"""Raw throughput of the built-in embedder (no storage, no chunker), and what it costs.

Texts are real source code: the modules of the installed `rich` package cut at token
boundaries into pieces of ~250, ~120 and ~40 WordPiece tokens (the sizes chunks have), plus a
mixed-length set that shows what sorting by length saves. Each configuration is timed on the
same texts after a warm-up; the best of `repeat` runs is kept because the figure of interest is
what the code can do, and a shared machine only ever slows a run down; the runs of all the
configurations are interleaved so that such slow-downs do not favour one of them.

    python bench/embedder.py [--quick] [--repeat N] [--json OUT.json]

`run_benchmark()` returns the same figures as a dict (for bench/run_all.py).
tokens/s counts the tokens the model really reads ([CLS] and [SEP] included, padding excluded).
cpu-ms is the process CPU time per chunk (best round): other processes barely change it, so it
compares configurations on a busy machine where wall-clock rates do not.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:  # runnable from a checkout without installing
    sys.path.insert(0, str(REPO_ROOT))

from chinvex.embedding.builtin import DEFAULT_BATCH_TOKENS  # noqa: E402  (cheap import)

LENGTHS = (250, 120, 40)
BATCH_SIZES = (1, 4, 8, 16, 32)
BATCH_TOKEN_BUDGETS = (512, 1024, 2048)


def source_text() -> str:
    """The concatenated modules of an installed package: plenty of realistic code and prose."""
    import rich

    folder = Path(rich.__file__).parent
    return "\n\n".join(p.read_text("utf-8") for p in sorted(folder.glob("*.py")))


def cut_pieces(text: str, tokens: int, count: int, *, offset: int = 0) -> list[str]:
    """`count` consecutive pieces of exactly `tokens` WordPiece tokens (content, no specials)."""
    from chinvex.embedding.tokenizer import token_offsets

    spans = token_offsets(text)
    pieces = []
    start = offset
    while len(pieces) < count:
        if start + tokens > len(spans):
            start = 0  # wrap around: repeats are fine for timing
        pieces.append(text[spans[start][0] : spans[start + tokens - 1][1]])
        start += tokens
    return pieces


def mixed_pieces(text: str, count: int, seed: int = 7) -> list[str]:
    """Lengths spread 20-250 tokens in random order, as a real ingest batch has."""
    from chinvex.embedding.tokenizer import token_offsets

    spans = token_offsets(text)
    rng = random.Random(seed)
    pieces, start = [], 0
    for _ in range(count):
        n = rng.randint(20, 250)
        if start + n > len(spans):
            start = 0
        pieces.append(text[spans[start][0] : spans[start + n - 1][1]])
        start += n
    return pieces


def real_tokens(texts: list[str]) -> int:
    from chinvex.embedding.tokenizer import MODEL_MAX_TOKENS, count_tokens_batch

    return sum(min(n + 2, MODEL_MAX_TOKENS) for n in count_tokens_batch(texts))


def _best_time(fn, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def _configs(threads: int) -> dict[str, dict[str, Any]]:
    """Name -> BuiltinEmbedder keyword arguments."""
    configs: dict[str, dict[str, Any]] = {}
    for budget in BATCH_TOKEN_BUDGETS:
        label = " (default)" if budget == DEFAULT_BATCH_TOKENS else ""
        configs[f"{budget}-token batches, {threads} parallel{label}"] = {"batch_tokens": budget}
    for bs in BATCH_SIZES:
        configs[f"batch {bs}, {threads} parallel x 1 thread"] = {
            "batch_tokens": 10**9,
            "max_batch_size": bs,
        }
    configs["batch 8, 1 session x 2 onnxruntime threads"] = {
        "batch_tokens": 10**9,
        "max_batch_size": 8,
        "threads": 1,
        "intra_op_threads": 2,
    }
    return configs


def _unsorted_run(embedder, texts: list[str], batch_size: int) -> None:
    """Fixed batches in input order (no length sorting), through the embedder's own kernel and
    with its parallelism: what the default would cost without the sort."""
    from concurrent.futures import ThreadPoolExecutor

    session, tokenizer = embedder._ensure_loaded()
    ids = [e.ids for e in tokenizer.encode_batch(texts)]
    batches = [ids[start : start + batch_size] for start in range(0, len(ids), batch_size)]
    with ThreadPoolExecutor(embedder.threads) as pool:
        list(pool.map(lambda rows: embedder._run_batch(session, rows), batches))


def _child_measure(args: argparse.Namespace) -> None:
    """Runs in a fresh process: cold load, first vector, then a workload, then peak RSS."""
    t0 = time.perf_counter()
    from chinvex.embedding.builtin import BuiltinEmbedder
    from common import own_peak_rss_kb

    kwargs = json.loads(args.child)
    emb = BuiltinEmbedder(**kwargs)
    t_import = time.perf_counter()
    emb.load()
    t_load = time.perf_counter()
    emb.embed_query("how is the embedder loaded?")
    t_first = time.perf_counter()
    if args.child_texts == 0:
        return  # the parent times the whole process: start to first vector
    rss_loaded = own_peak_rss_kb()
    texts = cut_pieces(source_text(), 250, args.child_texts)
    emb.embed_documents(texts)
    peak = own_peak_rss_kb()
    print(
        json.dumps(
            {
                "import_s": t_import - t0,
                "load_s": t_load - t_import,
                "first_vector_s": t_first - t0,
                "peak_rss_after_first_vector_mb": rss_loaded / 1024,
                "peak_rss_mb": peak / 1024,
            }
        )
    )


def _measure_in_child(kwargs: dict[str, Any], texts: int) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, __file__, "--child", json.dumps(kwargs), "--child-texts", str(texts)],
        check=True,
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def run_benchmark(*, repeat: int = 2, quick: bool = False, log=print) -> dict[str, Any]:
    import numpy  # noqa: F401  (imported before timing anything)

    from chinvex.embedding.builtin import BuiltinEmbedder, default_threads

    threads = default_threads()
    scale = 0.25 if quick else 1.0
    counts = {250: int(64 * scale), 120: int(128 * scale), 40: int(384 * scale)}
    source = source_text()
    sets = {n: cut_pieces(source, n, counts[n]) for n in LENGTHS}

    result: dict[str, Any] = {
        "machine": {
            "cpus_usable": threads,
            "platform": platform.platform(),
            "processor": platform.processor() or platform.machine(),
            "load_average_at_start": os.getloadavg(),
        },
        "repeat": repeat,
        "throughput": {},
    }
    _cold_start(result, log)

    # Every configuration is loaded first and the rounds interleave them, so that load from other
    # processes on a shared machine falls on all of them alike; the best round is kept.
    embedders = {name: BuiltinEmbedder(**kwargs) for name, kwargs in _configs(threads).items()}
    for emb in embedders.values():
        emb.load()
        for texts in sets.values():
            emb.embed_documents(texts[:8])  # warm-up: first runs grow the memory arena
    default = BuiltinEmbedder()
    mixed = mixed_pieces(source, int(128 * scale))
    default.embed_documents(mixed[:8])
    best, best_cpu, mixed_best = _timed_rounds(embedders, sets, default, mixed, repeat, log)
    _throughput_rows(result, embedders, sets, best, best_cpu, log)
    del embedders

    result["mixed_lengths"] = {
        "texts": len(mixed),
        "tokens": real_tokens(mixed),
        "sorted_default_chunks_per_s": len(mixed) / mixed_best["sorted"],
        "unsorted_batch8_chunks_per_s": len(mixed) / mixed_best["unsorted"],
    }
    log(
        f"mixed 20-250 tokens ({len(mixed)} texts): sorted, default batches "
        f"{len(mixed) / mixed_best['sorted']:.1f}/s; unsorted batches of 8, same parallelism "
        f"{len(mixed) / mixed_best['unsorted']:.1f}/s"
    )
    _query_latency(result, default, log)
    result["load_average_at_end"] = os.getloadavg()
    log(f"load average start {result['machine']['load_average_at_start']} end {result['load_average_at_end']}")
    return result


def _cold_start(result: dict[str, Any], log) -> None:
    """A fresh process's import, model check, session and first vector, and its peak memory
    (with the default batching and with fixed batches of 32)."""
    log("cold process (import + sha256 + session + first vector):")
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, __file__, "--child", "{}", "--child-texts", "0"], check=True, cwd=REPO_ROOT
    )
    since_start = time.perf_counter() - start
    cold = _measure_in_child({}, 64)
    cold["process_to_first_vector_s"] = since_start
    result["cold"] = cold
    log(
        f"  first vector {cold['first_vector_s']:.2f} s after import "
        f"(load + sha256 check {cold['load_s']:.2f} s)"
        + f"; a whole process (start, first vector, exit) {since_start:.2f} s"
        + f"; RSS then {cold['peak_rss_after_first_vector_mb']:.0f} MB; "
        f"peak RSS after 64 x 250-token chunks: {cold['peak_rss_mb']:.0f} MB"
    )
    big = _measure_in_child({"batch_tokens": 10**9, "max_batch_size": 32}, 64)
    result["peak_rss_batch32_mb"] = big["peak_rss_mb"]
    log(f"  peak RSS with fixed batches of 32: {big['peak_rss_mb']:.0f} MB")


def _timed_rounds(embedders: dict[str, Any], sets: dict[int, list[str]], default: Any, mixed: list[str],
                  repeat: int, log) -> tuple[dict, dict, dict[str, float]]:
    """The best wall and CPU time of each configuration on each length, and of the default on
    mixed lengths, sorted and unsorted, over `repeat` interleaved rounds."""
    best: dict[tuple[str, int], float] = {}
    best_cpu: dict[tuple[str, int], float] = {}  # CPU seconds: less disturbed by other processes
    mixed_best = {"sorted": float("inf"), "unsorted": float("inf")}
    for round_no in range(repeat):
        for name, emb in embedders.items():
            for n, texts in sets.items():
                cpu0 = time.process_time()
                secs = _best_time(lambda: emb.embed_documents(texts), 1)
                cpu = time.process_time() - cpu0
                best[name, n] = min(best.get((name, n), float("inf")), secs)
                best_cpu[name, n] = min(best_cpu.get((name, n), float("inf")), cpu)
        mixed_best["sorted"] = min(mixed_best["sorted"], _best_time(lambda: default.embed_documents(mixed), 1))
        mixed_best["unsorted"] = min(mixed_best["unsorted"], _best_time(lambda: _unsorted_run(default, mixed, 8), 1))
        log(f"  round {round_no + 1}/{repeat} done, load average {os.getloadavg()[0]:.2f}")
    return best, best_cpu, mixed_best


def _throughput_rows(result: dict[str, Any], embedders: dict[str, Any], sets: dict[int, list[str]],
                     best: dict, best_cpu: dict, log) -> None:
    """Chunks, tokens and CPU-ms per chunk of each configuration, into `result["throughput"]`."""
    for name in embedders:
        row = {}
        for n, texts in sets.items():
            secs = best[name, n]
            row[f"{n}_tokens"] = {
                "chunks_per_s": len(texts) / secs,
                "tokens_per_s": real_tokens(texts) / secs,
                "cpu_ms_per_chunk": 1000 * best_cpu[name, n] / len(texts),
            }
        result["throughput"][name] = row
        log(
            f"{name:46s} "
            + "  ".join(
                f"{n}tok {row[f'{n}_tokens']['chunks_per_s']:6.1f}/s "
                f"({row[f'{n}_tokens']['tokens_per_s']:5.0f} tok/s, "
                f"{row[f'{n}_tokens']['cpu_ms_per_chunk']:5.1f} cpu-ms)"
                for n in LENGTHS
            )
        )


def _query_latency(result: dict[str, Any], emb: Any, log) -> None:
    """Median and p90 of 50 single-query embeddings (after one warm-up)."""
    query = "how do I point chinvex at a remote ollama server?"
    emb.embed_query(query)
    times = []
    for _ in range(50):
        t0 = time.perf_counter()
        emb.embed_query(query)
        times.append(time.perf_counter() - t0)
    times.sort()
    result["query_latency_ms"] = {"median": times[25] * 1000, "p90": times[45] * 1000}
    log(f"single query: median {times[25] * 1000:.1f} ms, p90 {times[45] * 1000:.1f} ms")


def run(quick: bool = False) -> list:
    """The default configuration's figures in the bench/common.py convention."""
    from common import Figure

    result = run_benchmark(repeat=1 if quick else 2, quick=quick, log=lambda *_: None)
    default = next(row for name, row in result["throughput"].items() if "(default)" in name)
    figures = [
        Figure(f"built-in embedder, {n}-token chunks", default[f"{n}_tokens"]["chunks_per_s"], "chunks/s",
               note=f"{default[f'{n}_tokens']['tokens_per_s']:.0f} tokens/s, "
                    f"{default[f'{n}_tokens']['cpu_ms_per_chunk']:.1f} CPU-ms/chunk")
        for n in LENGTHS
    ]
    cold = result["cold"]
    figures += [
        Figure("embedder cold process to first vector", cold["process_to_first_vector_s"], "s"),
        Figure("embedder peak RSS (64 x 250-token chunks)", cold["peak_rss_mb"], "MB"),
        Figure("single query embedding, median", result["query_latency_ms"]["median"], "ms"),
    ]
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=2, help="runs per figure, best kept")
    parser.add_argument("--quick", action="store_true", help="a quarter of the texts")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--child-texts", type=int, default=64, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child is not None:
        _child_measure(args)
        return 0
    result = run_benchmark(repeat=max(1, args.repeat), quick=args.quick)
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n", "utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
