"""Cosine similarities that come out bit for bit the same in every process.

A search scores each candidate's vector against the query's. Computed as a float32 BLAS matrix
product, a chunk's cosine depends on the summation order the library picks for that matrix
(its shape, the candidates next to it, the threads), so the same chunk could score differently
in the last bits from one search to the next, and min-max normalisation and ranking carry such
differences into the results. Chroma's own distances differ again (hnswlib's SIMD kernels), so
a chunk's cosine also depended on which leg had found it.

Here every product of two float32 components is exact in float64 (24 + 24 significant bits fit
in 53), and each vector's products are summed on their own, along one contiguous row, by
numpy's pairwise summation, whose order depends only on the row's length; square roots and the
division are correctly rounded IEEE operations. A cosine therefore depends on the two vectors
alone, not on the batch, the process or the thread that computes it (`math.fsum` would also be
independent of the numpy build, at about a hundred times the cost).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any


def cosines(query: Sequence[float] | Any, vectors: Sequence[Sequence[float] | Any]) -> list[float]:
    """The cosine similarity of `query` with each of `vectors` (0.0 for a zero vector)."""
    if len(vectors) == 0:
        return []
    import numpy as np

    q = np.asarray(query, dtype=np.float64).ravel()
    matrix = np.asarray(vectors, dtype=np.float64).reshape(len(vectors), -1)
    if matrix.shape[1] != q.shape[0]:
        raise ValueError(f"vectors of {matrix.shape[1]} dimensions against a query of {q.shape[0]}")
    dots = np.ascontiguousarray(matrix * q).sum(axis=1)
    norms = np.sqrt(np.ascontiguousarray(matrix * matrix).sum(axis=1)) * math.sqrt(float((q * q).sum()))
    safe = np.where(norms > 0.0, norms, 1.0)
    return np.where(norms > 0.0, dots / safe, 0.0).tolist()


def scored(query: Sequence[float] | Any, vectors: Mapping[str, Any]) -> dict[str, float]:
    """`cosines` by key (a search's keys are its candidates)."""
    ids = list(vectors)
    return dict(zip(ids, cosines(query, [vectors[i] for i in ids])))


def ranked(scores: Mapping[str, float], limit: int | None = None) -> list[tuple[str, float]]:
    """Best first; equal scores in key order, so the order never depends on the input's."""
    items = sorted(scores.items(), key=lambda item: (-item[1], item[0]))
    return items if limit is None else items[:limit]
