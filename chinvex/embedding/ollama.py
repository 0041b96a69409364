"""Embeddings from an Ollama server (POST /api/embed through the official `ollama` client).

Used only when a context asks for it (`"embedding": {"provider": "ollama", ...}`): it is the one
embedder that reaches the network, by default a server on this machine.

Failures are told apart because the user's remedy differs: a server that is not running (start
it), a model that is not pulled (pull it), a transient server error (retried with exponential
backoff, a bounded number of times) and a rejected request (never retried: it would fail again).
"""

from __future__ import annotations

import os
import threading
import time
from typing import TYPE_CHECKING, Callable

from chinvex.embedding.base import embedder_name, l2_normalise
from chinvex.errors import EmbedderError

if TYPE_CHECKING:
    import numpy

    from chinvex.models import EmbeddingConfig

DEFAULT_MODEL = "mxbai-embed-large"
DEFAULT_HOST = "http://127.0.0.1:11434"
DEFAULT_BATCH_SIZE = 32
DEFAULT_MAX_ATTEMPTS = 4
DEFAULT_BACKOFF_S = 0.5
DEFAULT_TIMEOUT_S = 120.0

KNOWN_DIMENSIONS = {
    "mxbai-embed-large": 1024,
    "nomic-embed-text": 768,
    "all-minilm": 384,
    "snowflake-arctic-embed": 1024,
    "bge-m3": 1024,
}
"""Answers `dimension` before any request for common models (untagged or ':latest' only: other
tags may be other sizes). A hint only: the first response decides."""

TASK_PREFIXES: dict[str, tuple[str, str]] = {
    "mxbai-embed-large": ("Represent this sentence for searching relevant passages: ", ""),
    "nomic-embed-text": ("search_query: ", "search_document: "),
}
"""(query prefix, document prefix) the model cards prescribe for retrieval, by model family
(every tag). Without them these models retrieve noticeably worse; with them, documents and
queries are embedded asymmetrically, as the models were trained."""


def resolve_host(host: str | None) -> str:
    """Config, else OLLAMA_HOST (as the ollama CLI does), else the local default."""
    for candidate in (host, os.environ.get("OLLAMA_HOST")):
        if candidate and candidate.strip():
            return candidate.strip()
    return DEFAULT_HOST


def _known_dimension(model: str) -> int | None:
    base, _, tag = model.partition(":")
    return KNOWN_DIMENSIONS.get(base) if tag in ("", "latest") else None


def task_prefixes(model: str) -> tuple[str, str]:
    """(query prefix, document prefix) for `model`; none for models not in the table."""
    family = model.partition(":")[0].rpartition("/")[2]
    return TASK_PREFIXES.get(family, ("", ""))


class _Retryable(Exception):
    """A failure worth another attempt; carries the message to report if attempts run out."""


class OllamaEmbedder:
    provider = "ollama"

    def __init__(
        self,
        model: str | None = None,
        host: str | None = None,
        *,
        batch_size: int = DEFAULT_BATCH_SIZE,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
        backoff_s: float = DEFAULT_BACKOFF_S,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if batch_size < 1 or max_attempts < 1:
            raise EmbedderError("Ollama embedder: batch_size and max_attempts must be at least 1.")
        self.model = (model or DEFAULT_MODEL).strip()
        self.query_prefix, self.document_prefix = task_prefixes(self.model)
        self.host = resolve_host(host)
        self.batch_size = batch_size
        self.max_attempts = max_attempts
        self.backoff_s = backoff_s
        self.timeout_s = timeout_s
        self._sleep = sleep
        self._dimension: int | None = None  # learnt from the first response
        self._client = None
        self._lock = threading.Lock()
        self.requests = 0
        """HTTP requests sent, retries included (for tests and `--verbose`)."""

    @classmethod
    def from_config(cls, config: EmbeddingConfig | None) -> OllamaEmbedder:
        """context.json `embedding.model`, `embedding.host` and the optional `batch_size`."""
        if config is None:
            return cls()
        return cls(model=config.model, host=config.host,
                   batch_size=_positive_int(config, "batch_size", DEFAULT_BATCH_SIZE))

    @property
    def name(self) -> str:
        return embedder_name(self.provider, self.model)

    def __repr__(self) -> str:
        return f"OllamaEmbedder({self.name!r}, host={self.host!r})"

    @property
    def dimension(self) -> int:
        """From the first response; before one, the known size of the model, else one probe."""
        if self._dimension is not None:
            return self._dimension
        known = _known_dimension(self.model)
        if known is not None:
            return known
        self._embed(["dimension probe"])
        assert self._dimension is not None
        return self._dimension

    def _get_client(self):
        with self._lock:
            if self._client is None:
                from chinvex.embedding.heavy_imports import load

                try:
                    # chromadb imports httpx too, maybe on another thread at this moment
                    load("httpx", "ollama")
                    import ollama
                except ImportError:
                    raise EmbedderError(
                        "The Ollama embedder needs the ollama client: pip install ollama."
                    ) from None
                self._client = ollama.Client(host=self.host, timeout=self.timeout_s)
            return self._client

    # -- embedding ----------------------------------------------------------------------------

    def import_stack(self) -> None:
        """Import the client and numpy on the calling thread, so that a worker thread that
        embeds imports nothing (see chinvex.embedding.heavy_imports)."""
        from chinvex.embedding.heavy_imports import load

        try:
            load("numpy", "httpx", "ollama")
        except ImportError:
            pass  # reported by the first request, with the package to install

    def embed_documents(self, texts: list[str]) -> numpy.ndarray:
        return self._embed([self.document_prefix + t for t in texts])

    def embed_query(self, text: str) -> numpy.ndarray:
        return self._embed([self.query_prefix + text])[0]

    def _embed(self, texts: list[str]) -> numpy.ndarray:
        from chinvex.embedding.heavy_imports import load

        load("numpy")  # a search may be importing chromadb (and numpy with it) on another thread
        import numpy as np

        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        parts = [
            self._embed_batch(texts[start : start + self.batch_size])
            for start in range(0, len(texts), self.batch_size)
        ]
        return l2_normalise(np.concatenate(parts, axis=0))

    def _embed_batch(self, batch: list[str]) -> numpy.ndarray:
        import numpy as np

        delay = self.backoff_s
        for attempt in range(1, self.max_attempts + 1):
            try:
                vectors = self._request(batch)
                break
            except _Retryable as exc:
                if attempt == self.max_attempts:
                    tries = f"{attempt} attempts" if attempt > 1 else "1 attempt"
                    raise EmbedderError(f"{exc} (gave up after {tries}).") from None
                self._sleep(delay)
                delay *= 2
        widths = sorted({len(v) for v in vectors})
        if len(vectors) != len(batch) or len(widths) != 1 or widths[0] == 0:
            raise EmbedderError(
                f"Ollama at {self.host} returned {len(vectors)} embeddings of sizes {widths} "
                f"for {len(batch)} inputs (model {self.model}): is it an embedding model?"
            )
        matrix = np.asarray(vectors, dtype=np.float32)
        if not np.isfinite(matrix).all():
            raise EmbedderError(f"Ollama model {self.model} at {self.host} returned NaN or infinite values.")
        self._check_dimension(matrix.shape[1])
        return matrix

    def _check_dimension(self, width: int) -> None:
        with self._lock:
            if self._dimension is None:
                self._dimension = width
            elif width != self._dimension:
                raise EmbedderError(
                    f"Ollama model {self.model} at {self.host} returned {width}-dimensional vectors "
                    f"after {self._dimension}-dimensional ones: was the model replaced? "
                    "Re-run the ingest with --full."
                )

    def _request(self, batch: list[str]):
        """One POST /api/embed. Transient failures raise _Retryable, the rest EmbedderError."""
        client = self._get_client()
        import httpx
        import ollama

        self.requests += 1
        try:
            response = client.embed(model=self.model, input=batch)
        except ConnectionError:  # what the client makes of httpx.ConnectError
            raise _Retryable(
                f"Ollama not reachable at {self.host}: start it with `ollama serve`, "
                "or set the context's embedding.host (or OLLAMA_HOST) to where it runs"
            ) from None
        except httpx.TransportError as exc:  # timeouts, dropped connections
            raise _Retryable(
                f"Ollama at {self.host} did not answer ({type(exc).__name__}: {exc}); "
                "check that the server is healthy"
            ) from None
        except ollama.ResponseError as exc:
            status, detail = exc.status_code, str(exc.error).strip()
            if status >= 500:  # 4xx would fail the same way again: never retried
                raise _Retryable(f"Ollama at {self.host} failed: HTTP {status}: {detail}") from None
            if status == 404 or "not found" in detail.lower():
                raise EmbedderError(
                    f"Ollama model {self.model} not found at {self.host}: run `ollama pull {self.model}`."
                ) from None
            raise EmbedderError(
                f"Ollama at {self.host} rejected the embed request for {self.model}: "
                f"HTTP {status}: {detail}."
            ) from None
        return response.embeddings


def _positive_int(config: EmbeddingConfig, key: str, default: int) -> int:
    """An optional extra key of the `embedding` object (the model keeps unknown keys)."""
    value = (config.model_extra or {}).get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise EmbedderError(f"embedding.{key} must be a positive integer, got {value!r}.")
    return value
