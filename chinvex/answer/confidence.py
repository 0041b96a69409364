"""How likely an answer is to be right: the calibrated part of the answer gate.

`support.judge` keeps the checks that are logic (a name the question uses must be found, the
subject must be mentioned, a "how many" answer must hold a number) and picks the sentence an
answer rests on. Whether that sentence is good enough is a probability: a logistic regression
over what `support` measured about it (`gate_features`), fitted by bench/fit_gate.py on LoCoMo
conversations leave-one-conversation-out and shipped as gate_model.json next to this module.
The label it was fitted to: an answerable question answered citing a turn that holds the answer
(or whose words match the reference answer); an unanswerable question answered, or an answer
citing none of the right turns, is wrong.

Pure functions and a model read once; no index, no I/O beyond the packaged file.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import TYPE_CHECKING

from chinvex.answer.linear_model import MODEL_FILE, LinearModel, columns

if TYPE_CHECKING:
    from chinvex.answer.evidence import Evidence
    from chinvex.answer.judgement import Analysis, Candidate

FEATURES = (
    "support", "own", "specific", "typed", "prior", "said_share", "score", "best_support",
    "rival_support", "rival_ahead", "margin", "cosine_gap", "cosine_chosen_gap", "strict", "asks_person",
    "names_asked", "subject_asked", "terms_log", "passes_rules",
)
"""What the model reads about the chosen sentence, in the order of its weights."""


def gate_features(best: Candidate, analysis: Analysis, evidence: list[Evidence], fitting: list[Candidate],
                  *, min_cosine: float | None, strict: bool, passes_rules: bool) -> dict[str, float]:
    """The features of `best`, the sentence an answer would rest on.

    `fitting` are the sentences that may answer (about the right person, with every name, on the
    subject); `analysis.candidates` all of them, so that a fuller statement about someone else
    (the rival) counts even when an LLM's answer does not cite it. Cosines are read relative to
    the embedder's related-or-not point (`min_cosine`), and are 0 when it has none: other
    embedders have other scales. `passes_rules` says whether the hand-set support thresholds the
    gate had before would have let it through."""
    terms = len(analysis.terms) or 1
    rival = max((c.support for c in analysis.candidates if c.others and not c.about and c.names), default=0.0)
    others = [c.score for c in fitting if c.item.chunk_id != best.item.chunk_id]
    cosines = [e.result.scores.vector for e in evidence if e.result.scores.vector is not None]
    chosen_cosine = best.item.result.scores.vector
    point = min_cosine
    return {
        "support": best.support,
        "own": best.own,
        "specific": best.specific,
        "typed": float(best.typed),
        "prior": best.prior,
        "said_share": min(1.0, best.said / terms),
        "score": best.score,
        "best_support": max((c.support for c in fitting), default=best.support),
        "rival_support": rival,
        "rival_ahead": max(0.0, rival - best.support),
        "margin": best.score - max(others) if others else best.score,
        "cosine_gap": (max(cosines) - point) if point is not None and cosines else 0.0,
        "cosine_chosen_gap": (chosen_cosine - point) if point is not None and chosen_cosine is not None else 0.0,
        "strict": float(strict),
        "asks_person": float(bool(analysis.participants)),
        "names_asked": float(bool(analysis.names)),
        "subject_asked": float(bool(analysis.subject)),
        "terms_log": math.log1p(len(analysis.terms)),
        "passes_rules": float(passes_rules),
    }


@dataclass(frozen=True)
class GateModel(LinearModel):
    """A logistic regression over standardised features: p = 1 / (1 + exp(-(b + w·(x - mean) / scale)))."""

    intercept: float
    threshold: float
    """The default refusal point: an answer below this confidence is refused."""

    def probability(self, values: dict[str, float]) -> float:
        """The probability that an answer resting on a sentence with these features is right."""
        z = self.intercept + self.value(values)
        if z >= 0:
            return 1.0 / (1.0 + math.exp(-z))
        e = math.exp(z)
        return e / (1.0 + e)

    def to_json(self, **extra: object) -> str:
        document = self.to_document(intercept=self.intercept, threshold=self.threshold, **extra)
        return json.dumps(document, indent=1) + "\n"

    @classmethod
    def from_document(cls, document: dict) -> GateModel:
        return cls(*columns(document), float(document["intercept"]), float(document["threshold"]))


@lru_cache(maxsize=1)
def gate_model() -> GateModel:
    """The model shipped in the package (read once)."""
    text = resources.files("chinvex.answer").joinpath(MODEL_FILE).read_text("utf-8")
    return GateModel.from_document(json.loads(text))


def default_min_confidence() -> float:
    """The refusal point chosen on held-out conversations (bench/fit_gate.py)."""
    return gate_model().threshold


def confidence(values: dict[str, float]) -> float:
    return gate_model().probability(values)

