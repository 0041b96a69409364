"""The vector leg reads the store's vector matrix when it is current (chinvex.retrieval.vector_leg
.MatrixStore): every chunk is reachable (Chroma's graph leaves some unreachable beside many
identical vectors), filters give the results the Chroma paths give, and a cold process never
opens Chroma. Real SQLite, real Chroma, the real built-in embedder, real ingests."""

from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import run_cli_in_process

from chinvex.retrieval.request import SearchRequest
from chinvex.storage import vector_matrix

WORDS = ("glacier volcano basalt erosion sediment delta estuary canyon plateau monsoon kernel driver "
         "interrupt scheduler paging syscall mutex semaphore deadlock watchdog recipe saffron risotto "
         "braise ferment sourdough starter knead proof crumb telescope nebula quasar orbit parallax "
         "redshift comet eclipse zenith aurora").split()
REMINDER = "Remember to water the office ficus on Mondays and Thursdays before the stand-up meeting."


def _searcher(monkeypatch, home: Path, name: str):
    monkeypatch.setenv("CHINVEX_HOME", str(home))
    from chinvex.context.registry import Registry
    from chinvex.retrieval.search import Searcher

    return Registry().resolve(name), Searcher()


@pytest.fixture(scope="module")
def repeated(tmp_path_factory):
    """Over a thousand chunks holding one identical text (two notes of repeated sections, each
    chunk several sections), and 300 notes of their own: (home, {file name: text})."""
    root = tmp_path_factory.mktemp("repeated")
    notes = root / "notes"
    notes.mkdir()
    for name in ("chores.md", "chores-again.md"):
        (notes / name).write_text("# Chores\n\n" + "".join(f"## Reminder\n\n{REMINDER}\n\n" for _ in range(6000)))
    rng = random.Random(3)
    unique = {}
    for i in range(300):
        unique[f"u{i:03d}.md"] = " ".join(rng.choice(WORDS) for _ in range(18)) + "."
        (notes / f"u{i:03d}.md").write_text(f"# Topic {i}\n\n{unique[f'u{i:03d}.md']}\n")
    home = root / "home"
    env = {"CHINVEX_HOME": str(home)}
    assert run_cli_in_process("context", "create", "D", "--note-root", str(notes), env=env).code == 0
    assert run_cli_in_process("ingest", "--context", "D", env=env).code == 0
    return home, unique


def test_every_chunk_is_found_by_its_own_text_beside_many_identical_ones(repeated, monkeypatch):
    home, unique = repeated
    config, searcher = _searcher(monkeypatch, home, "D")
    try:
        assert vector_matrix.matrix_path(config.index.sqlite_path).exists()
        missed = []
        for name, text in unique.items():
            response = searcher.search([config], SearchRequest(query=text, k=10, mode="vector"))
            assert response.stats.mode == "vector"
            if not any(r.source_uri.endswith(name) for r in response.results):
                missed.append(name)
    finally:
        searcher.close()
    assert missed == []


@pytest.fixture(scope="module")
def mixed(tmp_path_factory):
    """Notes and a repository (two source types), small enough that the Chroma path is
    exhaustive too: home."""
    root = tmp_path_factory.mktemp("mixed")
    for i in range(12):
        (root / "notes").mkdir(exist_ok=True)
        (root / "notes" / f"n{i}.md").write_text(f"# otter {i}\n\nThe otter number {i} keeps pebble {i * 3} near "
                                                 "the river bank.\n")
        (root / "repo").mkdir(exist_ok=True)
        (root / "repo" / f"otter_{i}.py").write_text(f'def otter_{i}(pebble):\n    """The pebble otter {i} keeps '
                                                     f'by the river."""\n    return pebble * {i}\n')
    home = root / "home"
    env = {"CHINVEX_HOME": str(home)}
    assert run_cli_in_process("context", "create", "X", "--note-root", str(root / "notes"),
                              "--repo", str(root / "repo"), env=env).code == 0
    assert run_cli_in_process("ingest", "--context", "X", env=env).code == 0
    return home


REQUESTS = [
    SearchRequest(query="otter pebble river", k=10),
    SearchRequest(query="otter pebble river", k=10, mode="vector"),
    SearchRequest(query="otter pebble river", k=5, source_types=["repo"]),
    SearchRequest(query="a small animal by the water", k=5, source_types=["note"], mode="vector"),
    SearchRequest(query="otter pebble", k=5, path_glob="*n1*"),
    SearchRequest(query="otter pebble", k=5, path_glob="*otter_*", mode="vector"),
    SearchRequest(query="otter", k=5, source_types=["chat"]),
]


def _answers(monkeypatch, home: Path) -> list[list[tuple[str, float | None, float | None]]]:
    config, searcher = _searcher(monkeypatch, home, "X")
    try:
        return [[(r.chunk_id, r.scores.vector, r.scores.rank) for r in searcher.search([config], req).results]
                for req in REQUESTS]
    finally:
        searcher.close()


def test_filters_give_the_results_of_the_chroma_paths(mixed, monkeypatch):
    path = vector_matrix.matrix_path(mixed / "indexes" / "X" / "hybrid.db")
    vector_matrix._OPENED.clear()
    with_matrix = _answers(monkeypatch, mixed)
    assert vector_matrix._OPENED, "the searches did not read the matrix"
    os.replace(path, f"{path}.aside")
    try:
        from_chroma = _answers(monkeypatch, mixed)
    finally:
        os.replace(f"{path}.aside", path)
    assert with_matrix == from_chroma
    assert all(with_matrix[:6]) and not with_matrix[6]


COLD = """
import threading
from chinvex.retrieval import cold_start
cold_start.begin(["--context", "X", "otter"])
for thread in threading.enumerate():
    if thread.name.startswith("chinvex-cold"):
        thread.join(120)
from chinvex.context.registry import Registry
from chinvex.storage import chroma_warm, vector_matrix
from chinvex.storage.vector_clients import SharedClient
config = Registry().resolve("X")
assert not chroma_warm._WARMED and not chroma_warm._PENDING
(warmed,) = vector_matrix._OPENED.values()
from chinvex.retrieval import vector_leg
vector_leg.KEPT_PROCESS_LIMIT = 1  # a one-shot read-only command reads any matrix up to MAX_VECTORS
from chinvex.api import Engine
response = Engine().search([config], SearchRequest(query="otter pebble", k=3))
assert response.stats.mode == "hybrid" and response.results, response.stats
assert not SharedClient._registry, "Chroma was opened"
(used,) = vector_matrix._OPENED.values()
assert used is warmed
print("OK")
"""


def test_a_cold_process_reads_the_matrix_and_never_opens_chroma(mixed):
    script = "from chinvex.retrieval.request import SearchRequest\n" + COLD
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=False, timeout=300,
                          env={**os.environ, "CHINVEX_HOME": str(mixed), "CHINVEX_NO_RELAY": "1"})
    assert proc.returncode == 0 and proc.stdout.strip() == "OK", proc.stderr


def test_the_embedding_worker_searches_the_matrix_from_the_first_search(mixed, monkeypatch):
    """No store to open first: the worker that embeds the query runs the neighbour search on
    the matrix beside the lexical leg (embed_ahead), and a filtered search keeps it where the
    filter can narrow it."""
    import chinvex.retrieval.embed_ahead as embed_ahead_module
    from chinvex.retrieval.vector_leg import MatrixStore

    stores = []
    real = embed_ahead_module.embed_and_search
    monkeypatch.setattr(embed_ahead_module, "embed_and_search", lambda *a: stores.append(a[3]) or real(*a))
    config, searcher = _searcher(monkeypatch, mixed, "X")
    try:
        first = searcher.search([config], SearchRequest(query="otter pebble river", k=5))
        assert first.stats.mode == "hybrid" and first.results and not first.stats.warnings
        assert len(stores) == 1 and isinstance(stores[0], MatrixStore)
        searcher.search([config], SearchRequest(query="otter pebble river", k=5, path_glob="*n1*"))
        assert len(stores) == 1
        assert searcher.warm and searcher.handle(config).store is None  # Chroma never opened
    finally:
        searcher.close()


def test_a_process_that_keeps_searching_loads_chroma_above_its_limit(mixed, monkeypatch):
    from chinvex.retrieval import vector_leg

    monkeypatch.setattr(vector_leg, "KEPT_PROCESS_LIMIT", 5)
    config, searcher = _searcher(monkeypatch, mixed, "X")
    try:
        found = searcher.search([config], SearchRequest(query="otter pebble river", k=5))
        assert found.stats.mode == "hybrid" and found.results
        assert searcher.handle(config).store is not None and searcher.handle(config).matrix is None
    finally:
        searcher.close()
