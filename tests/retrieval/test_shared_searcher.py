"""A long-running server's searcher (chinvex.retrieval.shared) freezes the heap its first
searches loaded, once, so that Python's full collections stop walking the embedder's runtime and
Chroma's client on every later request. Run in a child process: freezing is process-wide, and
the test process must keep its own collector as it is. Real index, real embedder, real store."""

from __future__ import annotations

import json
import os
import subprocess
import sys

CHILD = """
import gc, json, sys
from chinvex.context.registry import Registry
from chinvex.retrieval.search import SearchRequest
from chinvex.retrieval.shared import SharedSearcher

full = []
gc.callbacks.append(lambda phase, info: full.append(1) if phase == "stop" and info["generation"] == 2 else None)
config = Registry().resolve("fixtures")
shared = SharedSearcher()
out = {}
searcher = shared.get()
out["cold_warm"] = searcher.warm
out["fts_only"] = searcher.search([config], SearchRequest(query="retry with backoff", k=3, mode="fts")).stats.mode
out["after_fts_warm"] = shared.get().warm
out["frozen_before"] = gc.get_freeze_count()
response = shared.get().search([config], SearchRequest(query="retry with backoff", k=3))
out["mode"] = response.stats.mode
out["frozen_after_search"] = gc.get_freeze_count()
collections = len(full)
same = shared.get()
out["same_searcher"] = same is searcher
out["frozen"] = gc.get_freeze_count()
out["full_collections_by_settling"] = len(full) - collections
shared.get(); shared.get()
out["full_collections_later"] = len(full) - collections
out["results_after"] = [r.chunk_id for r in same.search([config], SearchRequest(query="retry with backoff", k=3)).results] == [r.chunk_id for r in response.results]
shared.close()
print(json.dumps(out))
"""


def test_a_warm_shared_searcher_freezes_the_heap_once(fixtures_context):
    env = {**os.environ, **fixtures_context["env"], "CHINVEX_HOME": str(fixtures_context["home"])}
    proc = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, env=env,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["cold_warm"] is False
    # An FTS-only search opens no store and loads no model: nothing heavy to freeze yet.
    assert out["fts_only"] == "fts" and out["after_fts_warm"] is False and out["frozen_before"] == 0
    assert out["mode"] == "hybrid" and out["frozen_after_search"] == 0
    assert out["same_searcher"] and out["frozen"] > 10_000
    assert out["full_collections_by_settling"] == 1 and out["full_collections_later"] == 1
    assert out["results_after"]
