"""`chinvex watch` (issue 18): how long from a write to a searchable result, and what the
watcher costs while nothing happens.

A repository of 300 small modules plus a growing Codex rollout is watched by a real
`chinvex watch --json` process. Each round writes one file (an edit, a new file, or an appended
session exchange) carrying a unique word, then searches for it in this process (FTS, the
index on disk) every 20 ms until it is found. Idle CPU: the watcher's CPU time over 20 s with
no change, as a share of one core. Peak RSS of the watcher at the end.

    python bench/watch.py [--quick]
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import threading
import time

from common import CHINVEX, FIXTURES, REPO, Figure, print_figures

OUT = REPO / "bench" / "out" / "watch"
INCR = FIXTURES / "codex-rollout" / "public" / "codemie-code" / "incremental"
ROLLOUT = "rollout-2026-05-12T10-00-00-0196c0de-0000-7000-8000-000000000001.jsonl"


def _exchange(n: int, word: str) -> str:
    stamp = "2026-05-12T11:00:%02d.000Z" % (n % 60)
    lines = [{"timestamp": stamp, "type": "event_msg", "payload": {"type": "task_started", "turn_id": f"w-{n}"}},
             {"timestamp": stamp, "type": "event_msg", "payload": {"type": "user_message", "message": f"Question {n} about {word}"}},
             {"timestamp": stamp, "type": "event_msg", "payload": {"type": "agent_message", "message": f"Answer {n}: {word} is fine."}},
             {"timestamp": stamp, "type": "event_msg", "payload": {"type": "task_complete", "turn_id": f"w-{n}"}}]
    return "".join(json.dumps(line) + "\n" for line in lines)


def run(quick: bool = False) -> list[Figure]:
    import psutil

    from chinvex.context.registry import Registry
    from chinvex.retrieval.search import SearchRequest, Searcher

    shutil.rmtree(OUT, ignore_errors=True)
    repo, sessions = OUT / "repo", OUT / "codex" / "sessions" / "2026" / "05" / "12"
    (repo / "pkg").mkdir(parents=True)
    sessions.mkdir(parents=True)
    for i in range(300):
        (repo / "pkg" / f"m{i}.py").write_text(f'def f{i}(x):\n    """Module {i} helper."""\n    return x + {i}\n')
    rollout = sessions / ROLLOUT
    rollout.write_bytes((INCR / "turn-1.jsonl").read_bytes())
    home = OUT / "home"
    os.environ["CHINVEX_HOME"] = str(home)
    env = {**os.environ}
    subprocess.run([CHINVEX, "context", "create", "watched", "--repo", str(repo), "--codex-sessions",
                    str(OUT / "codex")], env=env, check=True, capture_output=True)
    proc = subprocess.Popen([CHINVEX, "watch", "--context", "watched", "--json", "--debounce-ms", "200"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    events: list[dict] = []
    threading.Thread(target=lambda: [events.append(json.loads(l)) for l in proc.stdout], daemon=True).start()
    try:
        deadline = time.monotonic() + 300
        while not any(e.get("trigger") == "start" for e in events):
            assert time.monotonic() < deadline and proc.poll() is None, "watch did not start"
            time.sleep(0.05)
        config = Registry().resolve("watched")
        searcher = Searcher()
        latencies: dict[str, list[float]] = {"edit": [], "add": [], "append": []}
        rounds = 3 if quick else 15
        watcher = psutil.Process(proc.pid)
        rss_first = None
        for n in range(rounds):
            if n == 1:
                rss_first = watcher.memory_info().rss / 2**20
            for kind in latencies:
                word = f"w{kind}{n}marker"
                started = time.monotonic()
                if kind == "edit":
                    (repo / "pkg" / f"m{n}.py").write_text(f'def f{n}(x):\n    """{word}."""\n    return x\n')
                elif kind == "add":
                    (repo / "pkg" / f"new{n}.py").write_text(f'def g{n}():\n    """{word}."""\n')
                else:
                    with open(rollout, "a", encoding="utf-8") as handle:
                        handle.write(_exchange(n, word))
                while True:
                    found = searcher.search([config], SearchRequest(query=word, k=1, mode="fts")).results
                    if found and word in found[0].text:
                        break
                    if time.monotonic() - started > 30:
                        raise AssertionError(f"{word} not searchable after 30 s")
                    time.sleep(0.02)
                latencies[kind].append(time.monotonic() - started)
        time.sleep(2)
        cpu0, wall0 = sum(watcher.cpu_times()[:2]), time.monotonic()
        time.sleep(8 if quick else 20)
        idle = (sum(watcher.cpu_times()[:2]) - cpu0) / (time.monotonic() - wall0)
        rss_mb = watcher.memory_info().rss / 2**20
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    every = sorted(v for values in latencies.values() for v in values)
    p95 = every[min(len(every) - 1, round(0.95 * (len(every) - 1)))]
    figures = [
        Figure("write to searchable, p50", statistics.median(every), "s", "< 5 s", statistics.median(every) < 5,
               f"{len(every)} writes: edits, new files, appended session exchanges; debounce 200 ms"),
        Figure("write to searchable, p95", p95, "s", "< 5 s", p95 < 5),
    ]
    for kind, values in latencies.items():
        figures.append(Figure(f"write to searchable, {kind}, median", statistics.median(values), "s"))
    figures += [
        Figure("idle CPU of the watcher", idle * 100, "% of one core", "< 1 %", idle * 100 < 1,
                "CPU time over a quiet period after the rounds"),
        Figure("watcher RSS after the rounds", rss_mb, "MB", note="embedder and Chroma client loaded once and kept"),
        Figure("watcher RSS growth from round 2 to the end", rss_mb - (rss_first or rss_mb), "MB",
               note=f"{(rounds - 1) * 3} ingests in between"),
    ]
    return figures


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    print_figures("watch", run(parser.parse_args().quick))
