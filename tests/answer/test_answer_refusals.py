"""A refusal says what was retrieved: the nearest passages, where they are, and which of the
question's words they state and which they leave out (issue 39: "the best covers 0% of its
terms" hid that passages were found). And the learned sentence ranker's pure parts: its
features, its model file, and that without a shipped ranker the hand-weighted score decides."""

from __future__ import annotations

import math

import pytest
from support_cases import TALK, result, verdict_for

from chinvex.answer.ranker import (
    FEATURES,
    RankerModel,
    learned,
    ranked,
    ranker_features,
    ranker_model,
)
from chinvex.answer.support import _may_answer, _passes_floor

DOCS = ("Fusion blends the lexical and vector legs after normalising each one.\n\n"
        "Hybrid mode is the default search mode of the command line.\n")


def test_a_refusal_names_the_nearest_passage_and_the_words_it_leaves_out():
    _, _, verdict, _ = verdict_for("How does hybrid retrieval combine scores?",
                                   [result(DOCS, path="docs/search.md", vector=0.5)], min_cosine=0.3)
    assert not verdict.ok
    assert "0%" not in verdict.reason
    assert "docs/search.md:1-4" in verdict.reason, verdict.reason
    assert "says “hybrid” but not “retrieval”, “combine” or “scores”" in verdict.reason, verdict.reason


def test_a_refusal_with_nothing_in_common_says_so():
    _, _, verdict, _ = verdict_for("How does garbage collection compact memory?",
                                   [result(DOCS, path="docs/search.md", vector=0.5)])
    assert not verdict.ok
    assert verdict.reason == "No retrieved passage states any of the question's words."


def _pool(question: str):
    analysis, _, _, _ = verdict_for(question, [result(TALK)])
    pool = [c for c in analysis.candidates if _may_answer(analysis, c)]
    return analysis, pool, [_passes_floor(c) for c in pool]


def test_the_ranker_features_are_finite_and_in_model_order():
    analysis, pool, floor = _pool("What did Melanie realize after the charity race?")
    rows = ranker_features(pool, analysis, floor)
    assert len(rows) == len(pool) >= 2
    for row in rows:
        assert list(row) == list(FEATURES)
        assert all(isinstance(v, float) and math.isfinite(v) for v in row.values())
    assert sum(row["score_rank_log"] == 0.0 for row in rows) == 1, "one sentence is first by the hand-weighted score"


def test_without_a_shipped_ranker_the_hand_weighted_score_orders():
    assert ranker_model() is None, "no ranker ships: it did not hold on every held-out conversation"
    analysis, pool, floor = _pool("What did Melanie realize after the charity race?")
    assert not learned(pool)
    order = ranked(pool, analysis, floor)
    assert [c.score for c in order] == sorted((c.score for c in pool), reverse=True)


def test_a_ranker_model_orders_by_its_linear_score_and_checks_its_columns():
    model = RankerModel(FEATURES, tuple(0.0 for _ in FEATURES), tuple(1.0 for _ in FEATURES),
                        tuple(-1.0 if name == "words_log" else 0.0 for name in FEATURES))
    assert model.value({"words_log": 1.0}) < model.value({"words_log": 0.5}), "shorter ranks first here"
    document = model.to_document()
    assert RankerModel.from_document(document) == model
    document["weights"] = document["weights"][:-1]
    with pytest.raises(ValueError, match="one value per feature"):
        RankerModel.from_document(document)
