"""`chinvex search` from a shell, with and without a running `chinvex watch` whose relay answers
it (chinvex/relay), alternating runs over the same context (this repository's docs/). The
relayed process imports no searcher, embedder or Chroma module; the other loads all of them.

    python bench/relay_latency.py [--runs 10]
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


def _timed(env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run([CHINVEX, "search", "--context", "relaybench", QUERY, "--k", "5"], env=env, check=True,
                   capture_output=True)
    return time.perf_counter() - started


def run(runs: int) -> list[Figure]:
    with tempfile.TemporaryDirectory(prefix="cxr-", dir="/tmp") as home:
        env = {**os.environ, "CHINVEX_HOME": home}
        subprocess.run([CHINVEX, "context", "create", "relaybench", "--repo", str(REPO / "docs")], env=env,
                       check=True, capture_output=True)
        subprocess.run([CHINVEX, "ingest", "--context", "relaybench", "--quiet"], env=env, check=True)
        watch = subprocess.Popen([CHINVEX, "watch", "--context", "relaybench"], env=env,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 60
            while not (Path(home) / "run" / "relay.sock").exists() and time.monotonic() < deadline:
                time.sleep(0.1)
            _timed(env)  # the watcher's engine warms on its first request
            relayed, local = [], []
            for _ in range(runs):
                relayed.append(_timed(env))
                local.append(_timed({**env, "CHINVEX_NO_RELAY": "1"}))
        finally:
            watch.terminate()
            watch.wait(timeout=60)
    return [Figure("chinvex search with a watcher running (relay) p50", median(relayed), "s", "< 0.25",
                   median(relayed) < 0.25, f"{runs} runs, alternating; max {max(relayed):.3f} s"),
            Figure("chinvex search in-process p50", median(local), "s", "< 0.45", median(local) < 0.45,
                   f"{runs} runs, alternating; max {max(local):.3f} s; docs/ context (small index)")]


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    print_figures("CLI search from a shell", run(args.runs))
