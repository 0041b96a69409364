"""This process's one Chroma client per store, reopened when another process wrote to it.

chromadb keeps one System per persist directory per process; this module likewise keeps one
client per store per process (`SharedClient`), so re-opening really reloads and every
`VectorStore` of that store sees the reloaded one. Every access passes the store's gate
(chinvex.storage.vector_gate), which says when the loaded client is out of date.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ClassVar

from chinvex.models import ContextConfig
from chinvex.storage.vector_gate import READ_WAIT_SECONDS, WRITE_WAIT_SECONDS, StoreGate
from chinvex.storage.vector_open import forget_failed_system, open_client, reads_only


class SharedClient:
    """This process's one Chroma client for one store, reopened when another process wrote."""

    _registry: ClassVar[dict[str, "SharedClient"]] = {}
    _registry_lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, key: str, config: ContextConfig):
        self.key = key
        self.config = config
        self.lock = threading.RLock()
        self.gate = None if config.index.chroma_url else StoreGate(Path(config.index.chroma_dir))
        self.client: Any = None
        self.generation = 0
        """Bumped on every (re)open: collections fetched from an older client are stale."""
        self.max_batch = 5000
        self._token: bytes | None = None
        self._held: str | None = None
        self._users = 0

    @classmethod
    def acquire(cls, config: ContextConfig) -> "SharedClient":
        url = config.index.chroma_url
        key = f"url:{url}" if url else "dir:" + os.path.realpath(config.index.chroma_dir)
        with cls._registry_lock:
            shared = cls._registry.get(key)
            if shared is not None and shared.gate is not None and not shared.gate.is_current():
                # The folder was deleted and made again (context deleted and re-created in this
                # process): the old client reads files that are gone.
                with shared.lock:
                    shared.drop_client()
                del cls._registry[key]
                shared = None
            if shared is None:
                shared = cls(key, config)
                cls._registry[key] = shared
            shared._users += 1
            return shared

    def release(self) -> None:
        with self._registry_lock:
            self._users -= 1
            if self._users > 0:
                return
            if self._registry.get(self.key) is self:
                del self._registry[self.key]
        with self.lock:
            self.drop_client()
            if self.gate is not None:
                self.gate.close()

    def current(self, token: bytes | None = None) -> Any:
        """The open client (opened now if needed); callers hold `access`. `token`: the gate's
        token the caller read under its hold, with which a client that a cold process loaded
        ahead (chinvex.storage.chroma_warm) is taken instead of opening one, if it was loaded
        at that same token."""
        if self.client is not None:
            return self.client
        if token is not None and reads_only():
            from chinvex.storage import chroma_warm

            self.client = chroma_warm.take(self.config.index.chroma_dir, token)
        if self.client is None:
            self.client = open_client(self.config)
        self.generation += 1
        getter = getattr(self.client, "get_max_batch_size", None)
        try:
            self.max_batch = int(getter()) if getter else 5000
        except Exception:
            self.max_batch = 5000
        return self.client

    def reopen(self) -> Any:
        """Open a new client now (callers hold `access`, so no writer is touching the files)."""
        self.drop_client()
        client = self.current()
        if self.gate is not None:
            self._token = self.gate.token()
        return client

    def drop_client(self) -> None:
        """Forget the client: the next access opens a new one, reloading the index files."""
        client, self.client = self.client, None
        self._token = None
        if client is not None:
            try:
                client.close()
            except Exception:
                pass

    @contextmanager
    def access(self, *, write: bool) -> Iterator[Any]:
        """Hold the gate (shared to read, exclusive to write) and yield an up-to-date client."""
        with self.lock:
            if self._held is not None:  # nested call on this thread: the outer hold covers it
                if write and self._held != "write":
                    raise RuntimeError("a Chroma write nested inside a read of the same store")
                yield self.current()
                return
            if self.gate is not None:
                self.gate.acquire(exclusive=write,
                                  timeout=WRITE_WAIT_SECONDS if write else READ_WAIT_SECONDS)
            self._held = "write" if write else "read"
            try:
                if self.gate is not None:
                    token = self.gate.token()
                    if self.client is not None and token != self._token:
                        self.drop_client()  # another process wrote since this client loaded
                    if write:
                        # Before writing, so that even a write that dies half-way leaves readers
                        # a new token to reload at.
                        token = self.gate.bump()
                    client = self.current(None if write else token)
                    self._token = token
                else:
                    client = self.current()
                try:
                    yield client
                except BaseException:
                    if write:  # a failed write may leave this client's index out of step
                        self.drop_client()
                    raise
            finally:
                self._held = None
                if self.gate is not None:
                    self.gate.release()


def forget_store(config: ContextConfig) -> None:
    """Let go of every client this process holds on an embedded store, before its folder is
    moved (a repair rebuilding it): the next access opens the new folder."""
    key = "dir:" + os.path.realpath(config.index.chroma_dir)
    with SharedClient._registry_lock:
        shared = SharedClient._registry.pop(key, None)
    if shared is not None:
        with shared.lock:
            shared.drop_client()
            if shared.gate is not None:
                shared.gate.close()
    forget_failed_system(config.index.chroma_dir)
