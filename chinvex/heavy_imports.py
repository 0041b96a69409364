"""One lock for importing the large third-party stacks (chromadb, numpy, onnxruntime, tokenizers)
while other threads may be importing too.

A search imports chromadb on a prefetch thread and loads the embedding model on a worker thread
while the main thread runs the lexical leg. Two threads importing module graphs that share a
package (chromadb's and onnxruntime's both reach numpy) can deadlock on the per-module import
locks, and Python breaks that by handing one thread a half-initialised module ("cannot import
name 'NDArray' from partially initialized module 'numpy._typing'"): the search then silently
lost its vector leg. Imports go one at a time; the slow native work that follows them (the ONNX
session, opening the Chroma store) still overlaps.
"""

from __future__ import annotations

import threading

IMPORT_LOCK = threading.RLock()
