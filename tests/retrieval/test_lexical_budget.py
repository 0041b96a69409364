"""The lexical leg's scoring budget: a query whose words match too many chunks takes its
candidates from its rarer terms, and every candidate still gets its exact BM25."""

from __future__ import annotations

import pytest

from chinvex.retrieval.lexical import rare_terms
from helpers import run_cli_in_process


def test_under_the_budget_every_term_is_kept():
    assert rare_terms({"a": 5, "b": 900, "c": 40}, cap=1000, budget=2000) == ["a", "b", "c"]


def test_over_the_budget_the_rarest_terms_fit_it():
    counts = {"cache": 1000, "lantern": 12, "sweep": 700, "eviction": 30}
    assert rare_terms(counts, cap=1000, budget=500) == ["lantern", "eviction"]
    assert rare_terms(counts, cap=1000, budget=800) == ["lantern", "sweep", "eviction"]


def test_a_term_at_the_cap_is_never_counted_as_fitting():
    # The capped counts sum to less than the budget, but "the" may match everything.
    assert rare_terms({"the": 100, "otter": 3}, cap=100, budget=10_000) == ["otter"]


def test_at_least_the_rarest_term_is_kept_in_query_order():
    assert rare_terms({"x": 100, "y": 100, "z": 100}, cap=100, budget=10) == ["x"]
    assert rare_terms({"b": 9, "a": 3, "c": 8}, cap=100, budget=10) == ["a"]
    assert rare_terms({"b": 4, "a": 3, "c": 7}, cap=100, budget=10) == ["b", "a"]


COMMON = "The cache sweep moves the clock hand over every cache entry in the table. "


@pytest.fixture(scope="module")
def index(tmp_path_factory):
    base = tmp_path_factory.mktemp("budget")
    home, notes = base / "home", base / "notes"
    notes.mkdir()
    for i in range(30):  # common words only
        (notes / f"common{i:02d}.md").write_text(f"# Note {i}\n\n" + COMMON * (1 + i % 4))
    for i, extra in enumerate(["The lantern eviction policy", "A lantern", "Eviction of a lantern",
                               "Sweep the lantern cache twice"]):
        (notes / f"rare{i}.md").write_text(f"# Rare {i}\n\n{extra}. " + COMMON * (1 + i % 2))
    env = {"CHINVEX_HOME": str(home)}
    assert run_cli_in_process("context", "create", "B", "--note-root", str(notes), env=env).code == 0
    assert run_cli_in_process("ingest", "--context", "B", env=env).code == 0
    return home


def _search(home, monkeypatch, **kw):
    from chinvex.context.registry import Registry
    from chinvex.retrieval.search import SearchRequest, Searcher

    monkeypatch.setenv("CHINVEX_HOME", str(home))
    searcher = Searcher()
    try:
        return searcher.search([Registry().resolve("B")], SearchRequest(
            query="lantern cache sweep eviction table", k=40, explain=True, **kw))
    finally:
        searcher.close()


@pytest.mark.parametrize("mode", ["fts", "hybrid"])
def test_pruned_candidates_keep_their_exact_bm25(index, monkeypatch, mode):
    exact = _search(index, monkeypatch, mode=mode)
    pruned = _search(index, monkeypatch, mode=mode, fts_budget=8, fts_count_cap=8)
    exact_bm25 = {r.chunk_id: r.scores.fts for r in exact.results}
    pruned_bm25 = {r.chunk_id: r.scores.fts for r in pruned.results if r.scores.fts is not None}
    rare = {r.chunk_id for r in exact.results if "lantern" in r.text.lower() or "eviction" in r.text.lower()}
    assert rare and rare <= set(pruned_bm25), "every chunk with a rare term is a candidate"
    for chunk_id, score in pruned_bm25.items():
        assert score == pytest.approx(exact_bm25[chunk_id], rel=1e-9, abs=1e-9)
    # Chunks with nothing but common words are no lexical candidates any more.
    assert set(pruned_bm25) == rare
    top = pruned.results[0]
    assert top.chunk_id == exact.results[0].chunk_id
    assert top.explain["fts"]["candidate_terms"] == ["lantern", "eviction"]
    assert "rarer terms" in top.explain["why"]
    assert "candidate_terms" not in exact.results[0].explain["fts"]


@pytest.mark.parametrize("budget", [None, 8])
def test_kept_scores_equal_what_fts5_gives_for_the_same_chunks(index, monkeypatch, budget):
    """A bounded plan keeps every candidate's BM25 (LexicalLeg.scores); the vector-only
    candidates' scores looked up there are the ones FTS5 computes for them on request."""
    import sqlite3

    from chinvex.retrieval.lexical_leg import LexicalLeg, fts_leg, fts_scores_for
    from chinvex.retrieval.search import SearchRequest

    conn = sqlite3.connect(index / "indexes" / "B" / "hybrid.db")
    try:
        req = SearchRequest(query="lantern cache sweep eviction table", k=5, fts_budget=budget,
                            fts_count_cap=budget)
        leg = fts_leg(conn, req, depth=5)
        assert leg.scores is not None and leg.plan.bounded
        assert bool(leg.plan.common) is (budget is not None)
        every = [row[0] for row in conn.execute("SELECT chunk_id FROM chunks ORDER BY chunk_id")]
        kept = dict(fts_scores_for(conn, leg, every))
        asked = dict(fts_scores_for(conn, LexicalLeg(leg.plan, leg.hits), every))
        assert kept.keys() == asked.keys() and len(kept) >= 4
        for chunk_id, score in asked.items():
            assert kept[chunk_id] == pytest.approx(score, rel=1e-12, abs=1e-12)
        # The leg's hits are the best of the kept scores (ties are broken by rowid).
        assert [score for _, score in leg.hits] == sorted(kept.values(), reverse=True)[:5]
        assert all(kept[cid] == score for cid, score in leg.hits)
    finally:
        conn.close()
