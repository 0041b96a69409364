"""Append re-ingest cost (issue 5/9): a long Codex rollout gets one more exchange appended, as
Codex does while a session runs. Measures the re-ingest time and how many chunks are embedded,
next to the first ingest of the same file."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time

from common import CHINVEX, FIXTURES, REPO, Figure, print_figures

OUT = REPO / "bench" / "out" / "append"
ROLLOUT = FIXTURES / "codex-rollout" / "public" / "codemie-code" / \
    "rollout-2026-05-11T13-28-45-019e1695-0522-7c83-8b39-0dd379793f80.jsonl"


def _exchange(n: int) -> str:
    stamp = "2026-05-11T14:00:%02d.000Z"
    lines = [
        {"timestamp": stamp % (n % 60), "type": "event_msg",
         "payload": {"type": "task_started", "turn_id": f"bench-turn-{n}"}},
        {"timestamp": stamp % (n % 60), "type": "event_msg",
         "payload": {"type": "user_message", "message": f"Appended question {n}: summarise the governance demo plan"}},
        {"timestamp": stamp % (n % 60), "type": "event_msg",
         "payload": {"type": "agent_message", "message": f"Answer {n}: the plan covers budgeting, analytics and approvals."}},
        {"timestamp": stamp % (n % 60), "type": "event_msg",
         "payload": {"type": "task_complete", "turn_id": f"bench-turn-{n}"}},
    ]
    return "".join(json.dumps(line) + "\n" for line in lines)


def run(quick: bool = False) -> list[Figure]:
    shutil.rmtree(OUT, ignore_errors=True)
    sessions = OUT / "codex" / "sessions" / "2026" / "05" / "11"
    sessions.mkdir(parents=True)
    target = sessions / ROLLOUT.name
    shutil.copy(ROLLOUT, target)
    env = {**os.environ, "CHINVEX_HOME": str(OUT / "home")}

    def ingest() -> tuple[float, dict]:
        started = time.perf_counter()
        proc = subprocess.run([CHINVEX, "ingest", "--context", "append", "--json"], env=env,
                              capture_output=True, text=True)
        return time.perf_counter() - started, json.loads(proc.stdout)

    subprocess.run([CHINVEX, "context", "create", "append", "--codex-sessions", str(OUT / "codex")],
                   env=env, check=True, capture_output=True)
    first_s, first = ingest()
    rounds = []
    for n in range(2 if quick else 5):
        with open(target, "a", encoding="utf-8") as handle:
            handle.write(_exchange(n))
        rounds.append(ingest())
    times = sorted(t for t, _ in rounds)
    embedded = [s["chunks"]["embedded"] for _, s in rounds]
    return [
        Figure("first ingest of a 515 KB rollout", first_s, "s",
               note=f"{first['chunks']['embedded']} chunks embedded"),
        Figure("re-ingest after appending one exchange (median)", times[len(times) // 2], "s",
               note=f"chunks embedded per append: {embedded}; whole process incl. interpreter start"),
    ]


if __name__ == "__main__":
    print_figures("Append re-ingest", run())
