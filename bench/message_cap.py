"""One huge chat message: a Claude Code transcript whose first request is a 100 MB single-line
paste, ingested by a fresh `chinvex ingest` process. Figures: wall time (target < 60 s) and the
process's peak RSS (bounded: the message is cut to the 256 KB per-message limit before it is
redacted, chunked or embedded).

    python bench/message_cap.py [--mb 100]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

_HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(_HERE))
from common import CHINVEX, REPO, Figure, print_figures  # noqa: E402

TRANSCRIPT = (REPO / "tests" / "fixtures" / "samples" / "claude-code" / "codemie-code" / "projects" / "-tmp-private"
              / "4c2ddfdc-b619-4525-8d03-1950fb1b0257.jsonl")


def _transcript(target: Path, megabytes: int) -> None:
    """The transcript with its first request replaced by the paste, written in pieces: the
    bench process must stay small, since a child's peak RSS (what is measured) starts from the
    parent's on Linux."""
    words = "settle ledger retry backoff queue worker shard index vector token".split()
    piece = " ".join(words[i % len(words)] + str(i % 97) for i in range(8192)) + " "
    lines = TRANSCRIPT.read_text(encoding="utf-8").splitlines()
    first = next(i for i, text in enumerate(lines) if json.loads(text).get("type") == "user")
    record = json.loads(lines[first])
    record["message"]["content"] = "@@PASTE@@"
    head, tail = json.dumps(record).split('"@@PASTE@@"')
    target.mkdir(parents=True)
    with (target / TRANSCRIPT.name).open("w", encoding="utf-8") as out:
        out.write("\n".join(lines[:first]) + ("\n" if first else "") + head + '"')
        left = megabytes * 1024 * 1024
        while left > 0:
            out.write(piece[:left])
            left -= len(piece)
        out.write('"' + tail + "\n" + "\n".join(lines[first + 1:]) + "\n")


def run(megabytes: int) -> list[Figure]:
    with tempfile.TemporaryDirectory(prefix="cx-msgcap-") as tmp:
        base = Path(tmp)
        _transcript(base / "projects" / "-tmp-private", megabytes)
        env = {**os.environ, "CHINVEX_HOME": str(base / "home")}
        subprocess.run([CHINVEX, "context", "create", "cap", "--claude-sessions", str(base / "projects")],
                       env=env, check=True, capture_output=True)
        started = time.perf_counter()
        done = subprocess.run([CHINVEX, "ingest", "--context", "cap", "--json"], env=env, capture_output=True, text=True)
        wall = time.perf_counter() - started
        peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        summary = json.loads(done.stdout) if done.stdout.strip() else {}
    note = f"exit {done.returncode}; {summary.get('chunks', {}).get('embedded')} chunks embedded"
    return [Figure(f"ingest of a {megabytes} MB single-line message", wall, "s", "< 60", wall < 60, note),
            Figure("... peak RSS of the ingest process", peak_mb, "MB", "", None, "largest child of this bench")]


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=100)
    args = parser.parse_args()
    print_figures("One huge chat message", run(args.mb))
