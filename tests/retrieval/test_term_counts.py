"""The lexical leg's term counts, remembered by a warm searcher while the index is unchanged
(chinvex.retrieval.term_counts), on a real hybrid.db."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from chinvex.retrieval.lexical_leg import lexical_plan
from chinvex.retrieval.request import SearchRequest
from chinvex.retrieval.term_counts import TermCounts, count_matches
from chinvex.storage import db


def _add(conn: sqlite3.Connection, doc: str, texts: list[str]) -> None:
    conn.execute("INSERT INTO documents (doc_id, source_type, source_uri, origin_uri) VALUES (?, 'note', ?, ?)",
                 (doc, f"file:///{doc}.md", f"file:///{doc}.md"))
    for i, text in enumerate(texts):
        conn.execute("INSERT INTO chunks (chunk_id, doc_id, chunk_index, text, search_text, embed_hash) "
                     "VALUES (?, ?, ?, ?, ?, ?)", (f"{doc}-{i}", doc, i, text, text, f"h{doc}{i}"))


@pytest.fixture
def index(tmp_path):
    path = tmp_path / "hybrid.db"
    conn = db.connect(path, create=True)
    _add(conn, "a", ["the lantern sweep"] * 6 + ["eviction of the lantern"])
    yield path, conn
    conn.close()


def test_counts_are_the_index_counts_up_to_the_cap(index):
    _, conn = index
    counter = TermCounts()
    assert counter.counts(conn, ["lantern", "eviction", "otter"], cap=100) == {"lantern": 7, "eviction": 1, "otter": 0}
    assert counter.counts(conn, ["lantern"], cap=3) == {"lantern": 3}
    assert count_matches(conn, "lantern", 5) == 5


def test_another_connections_commit_is_seen(index):
    path, conn = index
    counter = TermCounts()
    assert counter.counts(conn, ["eviction"], cap=100)["eviction"] == 1
    other = db.connect(path)
    try:
        _add(other, "b", ["an eviction policy", "eviction again"])
    finally:
        other.close()
    assert counter.counts(conn, ["eviction"], cap=100)["eviction"] == 3


def test_this_connections_own_writes_are_seen(index):
    _, conn = index
    counter = TermCounts()
    assert counter.counts(conn, ["sweep"], cap=100)["sweep"] == 6
    conn.execute("DELETE FROM chunks WHERE chunk_id = 'a-0'")
    assert counter.counts(conn, ["sweep"], cap=100)["sweep"] == 5


def test_the_memory_is_bounded(index):
    _, conn = index
    counter = TermCounts(limit=2)
    for term in ["lantern", "sweep", "eviction", "otter"]:
        counter.counts(conn, [term], cap=100)
    assert len(counter._counts) == 2
    assert counter.counts(conn, ["lantern", "otter"], cap=100) == {"lantern": 7, "otter": 0}


def test_a_remembered_plan_is_the_fresh_plan(index):
    """Pruning decides which chunks are candidates: a plan from remembered counts must be the
    one a new process would make, so that results stay the same in every process."""
    path, conn = index
    counter = TermCounts()
    req = SearchRequest(query="lantern eviction sweep", k=5, fts_budget=3)
    first = lexical_plan(conn, req, counter)
    assert first.rare == ["eviction"] and first.bounded
    assert lexical_plan(conn, req, counter) == lexical_plan(conn, req) == first
    other = db.connect(path)
    try:  # "sweep" (now 1) and "lantern" (2) become rarer than "eviction" (4)
        other.execute("DELETE FROM chunks WHERE chunk_id LIKE 'a-%' AND text = 'the lantern sweep' "
                      "AND chunk_index > 0")
        _add(other, "c", ["eviction"] * 3)
    finally:
        other.close()
    assert lexical_plan(conn, req, counter) == lexical_plan(conn, req)
    assert lexical_plan(conn, req, counter).rare == ["lantern", "sweep"]


def test_terms_are_counted_up_to_the_budget_by_default(index):
    """A term that fits the budget is a rare term even when it matches many chunks: the count
    cap is the budget unless a request sets its own."""
    _, conn = index
    plan = lexical_plan(conn, SearchRequest(query="lantern eviction", k=5, fts_budget=8))
    assert plan.rare == ["lantern", "eviction"] and not plan.common
    capped = lexical_plan(conn, SearchRequest(query="lantern eviction", k=5, fts_budget=8, fts_count_cap=2))
    assert capped.rare == ["eviction"] and capped.common == ["lantern"]


def test_a_warm_searcher_counts_each_term_once(tmp_path, monkeypatch):
    """The searcher keeps one memory per context: a second query sharing words counts only
    its new ones, and an ingest by another connection makes it count again."""
    from chinvex.context.registry import Registry
    from chinvex.retrieval import term_counts
    from chinvex.retrieval.search import Searcher

    monkeypatch.setenv("CHINVEX_HOME", str(tmp_path / "home"))
    registry = Registry()
    registry.create("T")
    config = registry.resolve("T")
    conn = db.connect(Path(config.index.sqlite_path), create=True)
    _add(conn, "a", ["the lantern sweep", "eviction of the lantern", "a sweep policy"])
    conn.close()
    counted: list[str] = []
    real = term_counts.count_matches

    def spy(conn, term, cap):
        counted.append(term)
        return real(conn, term, cap)

    monkeypatch.setattr(term_counts, "count_matches", spy)
    searcher = Searcher()
    try:
        first = searcher.search([config], SearchRequest(query="lantern sweep", k=3, mode="fts"))
        assert sorted(counted) == ["lantern", "sweep"] and first.results
        searcher.search([config], SearchRequest(query="sweep eviction", k=3, mode="fts"))
        assert sorted(counted) == ["eviction", "lantern", "sweep"]
        other = db.connect(Path(config.index.sqlite_path))
        try:
            _add(other, "b", ["another sweep"])
        finally:
            other.close()
        again = searcher.search([config], SearchRequest(query="sweep eviction", k=3, mode="fts"))
        assert counted.count("sweep") == 2 and any(r.doc_id == "b" for r in again.results)
    finally:
        searcher.close()
