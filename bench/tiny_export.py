"""A whole `chinvex ingest` of one conversations.json holding 100k tiny conversations (issue 9's
hostile corpus names it; the test suite ingests 10k of them and only parses the 100k file).

Every conversation is one document with one chunk, so this measures the per-document cost of the
pipeline (ledger, SQLite rows, FTS, Chroma upserts), not the embedder: the conversations repeat a
few texts, and a text already embedded is never embedded again. The file comes from the test
suite's hostile-corpus generator. Figures: whole-process time, documents/s, peak RSS, and the
no-change re-ingest of the same file.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time

from common import REPO, Figure, print_figures, run_chinvex_measured

OUT = REPO / "bench" / "out" / "tiny_export"
COUNT = 100_000


def _tiny_export(count: int) -> bytes:
    sys.path.insert(0, str(REPO / "tests"))
    from hostile.generate import _tiny_conversations  # the test suite's own generator

    return _tiny_conversations(count)


def run(quick: bool = False) -> list[Figure]:
    count = 20_000 if quick else COUNT
    shutil.rmtree(OUT, ignore_errors=True)
    chat = OUT / "chat"
    chat.mkdir(parents=True)
    (chat / "conversations.json").write_bytes(_tiny_export(count))
    env = {**os.environ, "CHINVEX_HOME": str(OUT / "home")}
    created, _ = run_chinvex_measured(["context", "create", "tiny", "--chat-root", str(chat)], env=env)
    if created.returncode:
        raise RuntimeError(created.stderr)
    started = time.perf_counter()
    proc, peak_mb = run_chinvex_measured(["ingest", "--context", "tiny", "--json"], env=env)
    first = time.perf_counter() - started
    if proc.returncode:
        raise RuntimeError(f"ingest failed ({proc.returncode}): {proc.stderr[-2000:]}")
    summary = json.loads(proc.stdout)
    started = time.perf_counter()
    again, _ = run_chinvex_measured(["ingest", "--context", "tiny", "--json"], env=env)
    second = time.perf_counter() - started
    docs = summary["documents"]["written"]
    return [
        Figure(f"full ingest of {count:,} tiny conversations (one file)", first, "s",
               note=f"{docs:,} documents, {summary['chunks']['written']:,} chunks, "
                    f"{summary['chunks']['embedded']} embedded (the rest reuse a stored vector)"),
        Figure("documents written per second", docs / first, "docs/s"),
        Figure("peak RSS of that ingest", peak_mb, "MB", note="VmHWM of the ingest process"),
        Figure("no-change re-ingest of the same file", second, "s",
               note=f"sources unchanged: {json.loads(again.stdout)['sources']['unchanged']}"),
    ]


if __name__ == "__main__":
    print_figures("100k tiny conversations", run(quick="--quick" in sys.argv))
