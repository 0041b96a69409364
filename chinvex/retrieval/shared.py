"""One Searcher for a long-running process (the MCP server, the web UI), built on first use.

A Searcher keeps warm handles (connections, stores, the embedder) that make every search after
the first fast; a server keeps one and shares it between its threads. It is built lazily, so a
server answers its first request (the MCP handshake, the first page) without waiting for it.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from chinvex.retrieval.search import Searcher


class SharedSearcher:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._searcher: Searcher | None = None

    def get(self) -> Searcher:
        with self._lock:
            if self._searcher is None:
                from chinvex.retrieval.search import Searcher

                self._searcher = Searcher()
            return self._searcher

    def close(self) -> None:
        """Close the searcher's handles; the next `get` builds a new one."""
        with self._lock:
            if self._searcher is not None:
                self._searcher.close()
                self._searcher = None
