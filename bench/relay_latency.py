"""`chinvex search` from a shell, with and without a running `chinvex watch` whose relay answers
it (chinvex/relay), alternating runs over the same context: this repository's docs/, or with
`--index 100k` the ~100k-chunk index of bench/search_latency.py (issue 41 asks for that size).
The relayed process imports no searcher, embedder or Chroma module; the other loads all of them
(its model and vector index on background threads, chinvex.retrieval.cold_start). The load
average is printed with the figures: other work on a 2-core machine moves them.

    python bench/relay_latency.py [--runs 10] [--index docs|100k]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

_HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(_HERE))
from common import CHINVEX, REPO, Figure, median, print_figures  # noqa: E402

QUERY = "how does the relay decline a request"
BIG_QUERY = "Vitamin D deficiency is associated with increased risk of tuberculosis"


def _timed(env: dict[str, str], context: str, query: str) -> float:
    started = time.perf_counter()
    subprocess.run([CHINVEX, "search", "--context", context, query, "--k", "5"], env=env, check=True,
                   capture_output=True)
    return time.perf_counter() - started


def _docs_context(home: str, env: dict[str, str]) -> None:
    subprocess.run([CHINVEX, "context", "create", "relaybench", "--repo", str(REPO / "docs")], env=env,
                   check=True, capture_output=True)
    subprocess.run([CHINVEX, "ingest", "--context", "relaybench", "--quiet"], env=env, check=True)


def _alternate(home: str, context: str, query: str, runs: int, server: str) -> tuple[list[float], list[float]]:
    """Start `server` (`watch`, or `ui` for an index without source folders to watch, whose
    relay answers the same way) on `context`, then time searches alternately through it and
    in-process."""
    env = {**os.environ, "CHINVEX_HOME": home}
    extra = ["--port", "0", "--no-open"] if server == "ui" else []
    watch = subprocess.Popen([CHINVEX, server, "--context", context, *extra], env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while not (Path(home) / "run" / "relay.sock").exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        _timed(env, context, query)  # the watcher's engine warms on its first request
        _timed({**env, "CHINVEX_NO_RELAY": "1"}, context, query)  # page cache, the model's kept graph
        relayed, local = [], []
        for _ in range(runs):
            relayed.append(_timed(env, context, query))
            local.append(_timed({**env, "CHINVEX_NO_RELAY": "1"}, context, query))
    finally:
        watch.terminate()
        watch.wait(timeout=60)
    return relayed, local


def run(runs: int, index: str = "docs") -> list[Figure]:
    load_before = os.getloadavg()[0]
    if index == "100k":
        import search_latency

        search_latency.build_100k()
        search_latency.record_coverage()
        relayed, local = _alternate(str(search_latency.BIG_HOME), "big", BIG_QUERY, runs, "ui")
        where = "106,780-chunk index (bench/search_latency.py), relay served by `chinvex ui` (it has no folder to watch)"
    else:
        with tempfile.TemporaryDirectory(prefix="cxr-", dir="/tmp") as home:
            _docs_context(home, {**os.environ, "CHINVEX_HOME": home})
            relayed, local = _alternate(home, "relaybench", QUERY, runs, "watch")
        where = "docs/ context (small index)"
    load = f"load average {load_before:.2f} -> {os.getloadavg()[0]:.2f}"
    return [Figure(f"chinvex search with a chinvex process running (relay) p50, {index}", median(relayed), "s", "< 0.25",
                   median(relayed) < 0.25, f"{runs} runs, alternating; max {max(relayed):.3f} s; {where}; {load}"),
            Figure(f"chinvex search in-process p50, {index}", median(local), "s", "< 0.45", median(local) < 0.45,
                   f"{runs} runs, alternating; max {max(local):.3f} s; {where}; {load}")]


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--index", choices=("docs", "100k"), default="docs",
                        help="this repository's docs/ (default) or bench/search_latency.py's ~100k-chunk index")
    args = parser.parse_args()
    print_figures("CLI search from a shell", run(args.runs, args.index))
