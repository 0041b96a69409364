"""A cold `chinvex search` process starts loading what its search will need before its command
line is parsed.

Most of a cold search is spent loading two things: the embedding model (onnxruntime session,
tokenizer) and the vector store's approximate index, which Chroma reads whole into memory on
the first query. Both are native work that releases the GIL, so on a second core they overlap
the main thread's Python work: importing the CLI and the search code, parsing the arguments
and running the full-text leg. `begin` (called by chinvex.entry for `chinvex search`) resolves
the contexts the command line names, as the command will, then
- opens each context's embedded vector store for reading on a thread and runs one query, which
  makes Chroma load the index, and keeps the store open: the search's own store shares the
  process's client (chinvex.storage.vector_clients), so it finds the index loaded, or waits for
  the load under the client's lock;
- makes the built-in embedder and loads its model on another thread, leaving it for the
  search to take (chinvex.embedding.factory.prepare).
Nothing here decides anything: the command resolves its contexts and reports every error as
before; a guess that turns out wrong (another context, `--mode fts` written oddly) only costs
work. It is skipped when a running chinvex process's relay is expected to answer, and
`CHINVEX_COLD_START=0` turns it off.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from typing import Any

ENV_SWITCH = "CHINVEX_COLD_START"
_KEPT: list[Any] = []
"""Stores opened here, kept open for the life of the process so that their loaded index stays."""


def enabled() -> bool:
    return os.environ.get(ENV_SWITCH, "").strip() not in ("0", "false", "no", "off")


def option_values(argv: Sequence[str], flag: str) -> list[str]:
    """Every value given to `flag` (`--flag VALUE` or `--flag=VALUE`), in order."""
    values: list[str] = []
    for i, arg in enumerate(argv):
        if arg == "--":
            break
        if arg == flag and i + 1 < len(argv):
            values.append(argv[i + 1])
        elif arg.startswith(flag + "="):
            values.append(arg.split("=", 1)[1])
    return values


def _relay_may_answer() -> bool:
    """Whether a running chinvex process's relay socket exists (and the relay is not turned
    off): then the command is most likely answered there, and loading here would only take CPU
    from it."""
    from chinvex.relay.address import ENV_OFF, socket_path

    if os.environ.get(ENV_OFF, "").strip() not in ("", "0"):
        return False
    path = socket_path()
    return path is not None and path.exists()


READY_WAIT_SECONDS = 0.25
"""How long `begin` waits for the store thread to reach Chroma's index load (see `begin`)."""


def begin(argv: Sequence[str]) -> None:
    """Start preparing for `chinvex search` with the arguments `argv` (after `search`).

    The contexts are resolved here, on the calling thread: that imports the configuration
    models, which the command needs next anyway. The index load is the longest piece of native
    work, so the store thread gets the interpreter to itself until it starts that load (or
    READY_WAIT_SECONDS pass), and the model thread is started only then: each thread's Python
    work holds the GIL, and the command's own imports can wait those few milliseconds."""
    if not enabled() or option_values(argv, "--mode")[-1:] == ["fts"]:
        return
    try:
        if _relay_may_answer():
            return
        configs = list({c.name: c for c in _configs(list(dict.fromkeys(option_values(argv, "--context"))))}.values())
    except Exception:  # the command reports these itself when it resolves the contexts
        return
    if not configs:
        return
    from chinvex.storage.vector_open import read_only_process

    read_only_process()  # as the command will declare: its stores open through Chroma's bindings
    ready = threading.Event()
    threading.Thread(target=_prepare, args=(configs, ready), name="chinvex-cold-start", daemon=True).start()
    ready.wait(READY_WAIT_SECONDS)


def _configs(names: list[str]) -> list[Any]:
    """The contexts the command will search: the named ones, else the default context (found
    as chinvex.cli.context_choice finds it, without its note on stderr)."""
    from chinvex.context.registry import Registry

    registry = Registry()
    if names:
        return [registry.resolve(name) for name in names]
    from chinvex.context.default import resolve_default

    found = resolve_default(registry, given=None, env=os.environ, cwd=os.getcwd(), advice="")
    return [found.config] if found.config is not None else []


def _prepare(configs: list[Any], ready: threading.Event) -> None:
    """Open the embedded stores, start the model thread, then load the indexes (`ready` is set
    once nothing but native work is left here)."""
    from chinvex.embedding.heavy_imports import VECTOR_READER_STACK, load

    stores: list[Any] = []
    try:
        load(*VECTOR_READER_STACK)
        stores = [s for s in (_open_store(c) for c in configs if not c.index.chroma_url) if s is not None]
    except Exception:  # missing bindings: the search reports it
        pass
    finally:
        _start_model_threads(configs)
        ready.set()
    for store, dimension in stores:
        try:
            store.query([1.0] + [0.0] * (dimension - 1), 1)
        except Exception:  # the search's own query reports what is wrong with the store
            pass


def _start_model_threads(configs: list[Any]) -> None:
    """One thread per distinct built-in embedder setting, loading it (factory.prepare)."""
    from chinvex.embedding.factory import prepare, provider_of

    seen: set[str] = set()
    for config in configs:
        key = repr(config.embedding)
        if provider_of(config.embedding) == "builtin" and key not in seen:
            seen.add(key)
            threading.Thread(target=prepare, args=(config.embedding,), name="chinvex-cold-model",
                             daemon=True).start()


def _open_store(config: Any) -> tuple[Any, int] | None:
    """`config`'s vector store opened for reading, kept open for the process (see _KEPT), with
    its vectors' dimension; None when it has no store or no recorded dimension."""
    from pathlib import Path

    from chinvex.storage import db
    from chinvex.storage.vectors import VectorStore

    try:
        conn = db.connect(Path(config.index.sqlite_path), readonly=True)
    except Exception:
        return None
    try:
        dimension = int(db.get_meta(conn, "embedding_dimension") or 0)
        store = VectorStore.open(config, conn, create=False)
    except Exception:  # the search opens it again and reports what is wrong
        return None
    finally:
        conn.close()
    if store is None:
        return None
    _KEPT.append(store)
    return (store, dimension) if dimension > 0 else None
