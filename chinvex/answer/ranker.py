"""Which of the sentences that may answer is the answer: the learned part of the choice.

`support.judge` narrows the evidence to the sentences that may answer (about the right person,
with every name, on the subject, holding the kind of answer where it must). Which of those an
answer rests on was the hand-weighted `Candidate.score`; here it is a linear model over what
`support` measured about each sentence and how it stands against the others of the same
question (`ranker_features`), fitted by bench/fit_ranker.py on LoCoMo conversations
leave-one-conversation-out as a conditional logit: for each question, the probability that each
sentence is the turn that holds the answer is the softmax of its score over the question's
sentences. Its weights ship in gate_model.json under "ranker", next to the confidence model.

Pure functions and a model read once; no index, no I/O beyond the packaged file.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from functools import lru_cache
from importlib import resources
from typing import TYPE_CHECKING

from chinvex.answer.linear_model import MODEL_FILE, LinearModel, columns

if TYPE_CHECKING:
    from chinvex.answer.judgement import Analysis, Candidate
    from chinvex.answer.units import Unit

RANKER_KEY = "ranker"
FEATURES = (
    "support", "own", "specific", "typed", "prior", "said_share", "score", "passes_floor",
    "score_rank_log", "top_support", "top_own", "chunk_position", "first_chunk", "order_log", "cosine",
    "lexical", "words_log", "by_asked", "about_others", "replies", "follows_top", "precedes_top",
    "reply_to_top", "echo",
)
"""What the ranker reads about each sentence, in the order of its weights."""


def ranker_features(pool: list[Candidate], analysis: Analysis,
                    floor: Iterable[bool]) -> list[dict[str, float]]:
    """The features of every sentence of `pool` (the sentences that may answer one question);
    `floor` says for each whether it clears the hand-set support thresholds. A sentence is also
    read beside its rivals: its place by the hand-weighted score, whether it says the most of
    the question (a difference to the best would be the same shift for every sentence of the
    question, which a linear ranking cannot use)."""
    if not pool:
        return []
    terms = len(analysis.terms) or 1
    top_support = max(c.support for c in pool)
    top_own = max(c.own for c in pool)
    by_score = sorted(range(len(pool)), key=lambda i: (-pool[i].score, pool[i].unit.chunk, pool[i].unit.order))
    place = {i: n for n, i in enumerate(by_score)}
    top = pool[by_score[0]].unit
    asked = analysis.participants
    rows = []
    for i, (c, passes) in enumerate(zip(pool, floor)):
        scores = c.item.result.scores
        speaker = (c.unit.speaker or "").lower()
        rows.append({
            "support": c.support,
            "own": c.own,
            "specific": c.specific,
            "typed": float(c.typed),
            "prior": c.prior,
            "said_share": min(1.0, c.said / terms),
            "score": c.score,
            "passes_floor": float(passes),
            "score_rank_log": math.log1p(place[i]),
            "top_support": float(c.support >= top_support),
            "top_own": float(c.own >= top_own),
            "chunk_position": math.log1p(c.unit.chunk),
            "first_chunk": float(c.unit.chunk == 0),
            "order_log": math.log1p(c.unit.order),
            "cosine": scores.vector if scores.vector is not None else 0.0,
            "lexical": scores.fts_norm,
            "words_log": math.log1p(len(c.unit.text.split())),
            "by_asked": float(bool(speaker) and speaker in asked),
            "about_others": float(bool(c.others)),
            "replies": float(c.preceding is None and c.unit.kind == "dialogue" and c.unit.block > 0),
            # the words that echo the question are often next to the answer, not the answer
            "follows_top": float(_same_block(c.unit, top) and c.unit.order == top.order + 1),
            "precedes_top": float(_same_block(c.unit, top) and c.unit.order == top.order - 1),
            "reply_to_top": float(c.unit.chunk == top.chunk and c.unit.block == top.block + 1),
            "echo": c.own * (1.0 - c.specific),
        })
    return rows


def _same_block(a: Unit, b: Unit) -> bool:
    return a.chunk == b.chunk and a.block == b.block


class RankerModel(LinearModel):
    """A linear score over standardised features (higher ranks first)."""

    @classmethod
    def from_document(cls, document: dict) -> RankerModel:
        return cls(*columns(document, owner="the ranker's "))


@lru_cache(maxsize=1)
def ranker_model() -> RankerModel | None:
    """The ranker shipped in the package (read once); None when the model file has none."""
    text = resources.files("chinvex.answer").joinpath(MODEL_FILE).read_text("utf-8")
    document = json.loads(text).get(RANKER_KEY)
    return RankerModel.from_document(document) if document else None


def learned(pool: list[Candidate]) -> bool:
    """Does the ranker choose among `pool`? Only for sentences of a dialogue, the evidence it
    was fitted on; prose and code keep the hand-weighted score."""
    return bool(pool) and ranker_model() is not None and all(c.kind == "dialogue" for c in pool)


def ranked(pool: list[Candidate], analysis: Analysis, floor: list[bool]) -> list[Candidate]:
    """`pool` best first by the ranker (ties: the hand-weighted score, then position) when it
    applies (`learned`), else by the hand-weighted score. Sets each candidate's `rank_value`."""
    model = ranker_model()
    if model is None or not learned(pool):
        return sorted(pool, key=lambda c: (-c.score, c.unit.chunk, c.unit.order))
    for c, values in zip(pool, ranker_features(pool, analysis, floor)):
        c.rank_value = model.value(values)
    return sorted(pool, key=lambda c: (-c.rank_value, -c.score, c.unit.chunk, c.unit.order))

