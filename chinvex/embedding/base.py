"""The one interface every embedder offers, so storage and retrieval never care which runs.

Importing this module must stay cheap (no numpy, no onnxruntime): the CLI imports it on every
start, and `chinvex --help` has a 0.5 s budget.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import numpy


class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors.

    `name` ("provider:model") is what hybrid.db's meta and the source fingerprints record, so a
    change of model is noticed and the affected sources are embedded again.

    Optional, looked up with getattr: `import_stack()` imports on the calling thread what the
    embedder will import when it loads and runs; an embedder that has it is run on the ingest
    writer's worker thread, overlapping the parsing of the next batch (others run on the
    caller's thread). `load()` with `loaded` lets the writer load the model ahead of the first
    batch.

    Not runtime-checkable on purpose: on Python 3.11 `isinstance` would read `dimension`, which
    for an Ollama model of unknown size costs a request.
    """

    provider: str
    model: str

    @property
    def dimension(self) -> int: ...

    @property
    def name(self) -> str: ...

    def embed_documents(self, texts: list[str]) -> numpy.ndarray:
        """float32 [len(texts), dimension], unit rows, in the order of `texts`."""
        ...

    def embed_query(self, text: str) -> numpy.ndarray:
        """float32 [dimension], unit norm."""
        ...


def embedder_name(provider: str, model: str) -> str:
    return f"{provider}:{model}"


def l2_normalise(matrix: numpy.ndarray) -> numpy.ndarray:
    """Rows scaled to unit length, in float32. A zero row stays zero instead of becoming NaN:
    a NaN would poison every cosine it takes part in."""
    import numpy as np

    matrix = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return (matrix / np.maximum(norms, np.float32(1e-12))).astype(np.float32, copy=False)
