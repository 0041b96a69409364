"""The embedder a context's `embedding` settings ask for (none: the built-in one).

Cheap to import and to call: the embedders load their model or client on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from chinvex.embedding.base import Embedder
from chinvex.errors import EmbedderError

if TYPE_CHECKING:
    from chinvex.models import EmbeddingConfig

BUILTIN_MODEL_ALIASES = frozenset({"all-MiniLM-L6-v2-int8", "all-MiniLM-L6-v2"})
"""Model names accepted with provider "builtin" (there is one built-in model)."""


def provider_of(config: EmbeddingConfig | None) -> str:
    """The provider a context's `embedding` settings name; no settings mean the built-in one."""
    return "builtin" if config is None else config.provider


def make_embedder(config: EmbeddingConfig | None = None) -> Embedder:
    provider = provider_of(config)
    if provider == "builtin":
        from chinvex.embedding.builtin import BuiltinEmbedder

        model = config.model if config is not None else None
        if model and model not in BUILTIN_MODEL_ALIASES:
            raise EmbedderError(
                f"Unknown built-in embedding model {model!r}: the built-in provider has only "
                "all-MiniLM-L6-v2-int8 (remove embedding.model, or use provider \"ollama\")."
            )
        return BuiltinEmbedder()
    if provider == "ollama":
        from chinvex.embedding.ollama import DEFAULT_BATCH_SIZE, OllamaEmbedder

        return OllamaEmbedder(
            model=config.model,
            host=config.host,
            batch_size=_positive_int(config, "batch_size", DEFAULT_BATCH_SIZE),
        )
    raise EmbedderError(f"Unknown embedding provider {provider!r}: use \"builtin\" or \"ollama\".")


def _positive_int(config: EmbeddingConfig, key: str, default: int) -> int:
    """An optional extra key of the `embedding` object (the model keeps unknown keys)."""
    value = (config.model_extra or {}).get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise EmbedderError(f"embedding.{key} must be a positive integer, got {value!r}.")
    return value
