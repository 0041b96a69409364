"""Importing the large third-party stacks (chromadb, numpy, onnxruntime, tokenizers) when more
than one thread may be importing.

A cold search imports chromadb on a prefetch thread and loads the embedding model on a worker
thread while the main thread runs the lexical leg. Two threads importing module graphs that
share a package (chromadb's and onnxruntime's both reach numpy) can deadlock on the per-module
import locks, and Python breaks that by handing one thread a half-initialised module ("cannot
import name 'NDArray' from partially initialized module 'numpy._typing'"): the search then
silently lost its vector leg. So these imports go one at a time, under one lock.

A lock alone serialises too much: the embed thread would wait for the whole of
chromadb's import just to learn that numpy is already there. `load` therefore remembers what
has finished importing and returns at once for it, and `prefetch_search_stack` imports the
embedder's small stack first, on the calling thread, before chromadb starts on its own thread:
the model then loads (native work) while chromadb imports.

The lock covers only the imports made through `load`. chromadb imports more of itself lazily
when a client or collection is first opened, outside it; so the thread that will embed must
find its stack (numpy above all) already imported, by its caller (search._embed_ahead).
"""

from __future__ import annotations

import importlib
import threading

_IMPORT_LOCK = threading.RLock()
_loaded: set[str] = set()

EMBEDDER_STACK = ("numpy", "onnxruntime", "tokenizers")
VECTOR_STORE_STACK = ("chromadb",)
VECTOR_READER_STACK = ("chromadb_rust_bindings",)
"""What a process needs to open an embedded store (chinvex.storage.chroma_reader and
chroma_writer): Chroma's compiled bindings, a small fraction of chromadb's import."""


def load(*names: str) -> None:
    """Import `names` (raising ImportError as `import` would), one importing thread at a time.
    A name some thread has already finished importing costs a set lookup and takes no lock."""
    if _loaded.issuperset(names):
        return
    with _IMPORT_LOCK:
        for name in names:
            if name not in _loaded:
                importlib.import_module(name)
                _loaded.add(name)


def prefetch_search_stack(*, embedder: bool, reader_only: bool = False, vector_store: bool = True) -> None:
    """Get a cold process ready to search: the embedder's stack now, when the built-in
    embedder will be used, and the vector store's on a background thread, so that it overlaps
    with loading the model and running the lexical leg: chromadb for a Chroma server,
    or for embedded stores only (`reader_only`) Chroma's bindings alone, and nothing when no
    store will be opened (`vector_store` false: vector matrices answer). Failures are left
    to the code that needs the module, which reports them in context."""
    if embedder:
        try:
            load(*EMBEDDER_STACK)
        except ImportError:
            pass
    if not vector_store:
        return
    stack = VECTOR_READER_STACK if reader_only else VECTOR_STORE_STACK

    def _import_vector_store() -> None:
        try:
            load(*stack)
        except Exception:
            pass

    threading.Thread(target=_import_vector_store, name="chinvex-prefetch-chroma", daemon=True).start()
