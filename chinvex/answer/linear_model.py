"""A linear score over standardised features: the shape both learned parts of the answer gate
share. The confidence model (confidence.py) is a logistic regression on it; the sentence ranker
(ranker.py) ranks by it. Both ship in gate_model.json with one value per feature in each of
`mean`, `scale` and `weights`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

MODEL_FILE = "gate_model.json"


@dataclass(frozen=True)
class LinearModel:
    """s = w·(x - mean) / scale over the named features (a feature missing from x counts 0)."""

    features: tuple[str, ...]
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    weights: tuple[float, ...]

    def value(self, values: dict[str, float]) -> float:
        return sum(w * (values.get(name, 0.0) - m) / s
                   for name, m, s, w in zip(self.features, self.mean, self.scale, self.weights))

    def to_document(self, **extra: object) -> dict[str, Any]:
        return {"features": list(self.features), "mean": list(self.mean), "scale": list(self.scale),
                "weights": list(self.weights), **extra}


def columns(document: dict[str, Any], owner: str = "") -> tuple[tuple[str, ...], tuple[float, ...],
                                                                tuple[float, ...], tuple[float, ...]]:
    """The features, mean, scale (a 0 read as 1) and weights of a model's document; ValueError
    when they do not line up (`owner` names the model in the message)."""
    names = tuple(document["features"])
    mean, scale, weights = (tuple(float(v) for v in document[key]) for key in ("mean", "scale", "weights"))
    if any(len(column) != len(names) for column in (mean, scale, weights)):
        raise ValueError(f"{MODEL_FILE}: {owner}mean, scale and weights must each have one value per feature")
    return names, mean, tuple(s or 1.0 for s in scale), weights


def vector(values: dict[str, float], names: Iterable[str]) -> list[float]:
    """The features in model order (for fitting)."""
    return [float(values.get(name, 0.0)) for name in names]
