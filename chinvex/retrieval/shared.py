"""One Searcher for a long-running process (the MCP server, the web UI), built on first use.

A Searcher keeps warm handles (connections, stores, the embedder) that make every search after
the first fast; a server keeps one and shares it between its threads. It is built lazily, so a
server answers its first request (the MCP handshake, the first page) without waiting for it.

Once the searcher is warm, the objects its first searches loaded (the embedder's runtime,
Chroma's client, numpy) live as long as the process, and Python's full garbage collection walks
every one of them each time it runs, a pause paid by whichever search triggers it (measured in
ARCHITECTURE, "Search"). So the next `get` after the searcher became warm collects once and
freezes what is left (`gc.freeze`): later collections only walk what requests create. Only
servers do this; a one-shot command would pay the collection and gain nothing.
"""

from __future__ import annotations

import gc
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from chinvex.retrieval.search import Searcher


class SharedSearcher:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._searcher: Searcher | None = None
        self._heap_settled = False

    def get(self) -> Searcher:
        with self._lock:
            if self._searcher is None:
                from chinvex.retrieval.search import Searcher

                self._searcher = Searcher()
            elif not self._heap_settled and self._searcher.warm:
                gc.collect()
                gc.freeze()
                self._heap_settled = True
            return self._searcher

    def close(self) -> None:
        """Close the searcher's handles; the next `get` builds a new one."""
        with self._lock:
            if self._searcher is not None:
                self._searcher.close()
                self._searcher = None
