"""A rare query term keeps its best full-text matches in the results (issue 41): the pure rules
(chinvex.retrieval.rare_terms), then a real search where fusion alone would lose the one chunk
holding an identifier."""

from __future__ import annotations

from pathlib import Path

from chinvex.retrieval.rare_terms import RARE_DF, best_lexical, keep_pinned, pin_limit, wanted_pins


def test_only_rare_terms_pin_and_never_more_than_a_third():
    assert wanted_pins({"zanzibar": 1, "mode": 500}, 10) == 1
    assert wanted_pins({"a": 2, "b": 3}, 10) == 3  # 5 matches, capped at a third of k
    assert wanted_pins({"common": RARE_DF + 1}, 10) == 0 and wanted_pins({"absent": 0}, 10) == 0
    assert pin_limit(1) == 1 and pin_limit(30) == 10


def test_the_cap_on_kept_hits_holds_over_every_context_searched():
    """Two contexts holding the same rare chunk each pin their copy; at k = 3 only one may be
    lifted (a third of the results), so the second-best result is not pushed out by the two."""
    ordered = ["a", "b", "c", "ctx1-rare", "ctx2-rare"]
    assert keep_pinned(ordered, {"ctx1-rare", "ctx2-rare"}, 3, str) == ["a", "b", "ctx1-rare", "c", "ctx2-rare"]
    assert keep_pinned(ordered, {"ctx1-rare", "ctx2-rare"}, 4, str)[:4] == ["a", "b", "c", "ctx1-rare"]


def test_keep_pinned_lifts_into_the_last_places_in_order():
    ordered = list("abcdefgh")
    assert keep_pinned(ordered, {"g"}, 4, str) == list("abcgdefh")
    assert keep_pinned(ordered, {"b", "g", "h"}, 6, str) == list("abcdegfh")  # b stays; one more may join it
    assert keep_pinned(ordered, {"a"}, 4, str) == ordered  # already in: nothing moves
    assert keep_pinned(ordered, {"x"}, 4, str) == ordered
    assert best_lexical([("p", 1.0), ("q", None), ("r", 3.0), ("s", 3.0)], 2) == ["r", "s"]


WORDS = ("turning", "seems", "milestones", "clock", "childhood", "features")
"""Words of LoCoMo conv-26 and conv-30 that the full-text index matches in two or three chunks;
hybrid search without the rare-term rule left at least one of those chunks below 10 for each
(bench/needles.py found them)."""


def test_every_chunk_holding_a_rare_word_is_in_the_top_ten(tmp_path: Path, chinvex_home: Path):
    from chinvex.context.registry import Registry
    from chinvex.retrieval.request import SearchRequest
    from chinvex.retrieval.search import Searcher
    from helpers import BENCH_DATA, run_cli_in_process

    roots = [str(BENCH_DATA / "locomo" / conv) for conv in ("conv-26", "conv-30")]
    assert run_cli_in_process("context", "create", "talks", "--note-root", roots[0], "--note-root", roots[1]).code == 0
    assert run_cli_in_process("ingest", "--context", "talks").code == 0
    searcher = Searcher()
    try:
        config = Registry().resolve("talks")
        for word in WORDS:
            holding = {r.chunk_id for r in searcher.search([config], SearchRequest(query=word, k=20, mode="fts")).results}
            assert 1 <= len(holding) <= 3, (word, holding)
            found = {r.chunk_id for r in searcher.search([config], SearchRequest(query=word, k=10)).results}
            assert holding <= found, word
    finally:
        searcher.close()


def test_the_rarest_term_s_holders_are_kept_first():
    from chinvex.retrieval.rare_terms import best_rare

    # a dotted name held by one chunk goes before its last part's five, whatever their scores
    hits = [("part-a", 9.0, 5), ("part-b", 8.0, 5), ("dotted", 1.0, 1), ("part-c", 7.0, 5)]
    assert best_rare(hits, 2) == ["dotted", "part-a"]
    assert best_rare([("x", None, 2), ("y", 0.5, 2)], 1) == ["y"]
