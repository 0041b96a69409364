"""A cold `chinvex search` process starts loading what its search will need before its command
line is parsed.

Most of a cold search is spent loading two things: the vector store's approximate index, which
Chroma reads whole into memory on the first query, and the embedding model (onnxruntime
session, tokenizer). Both are native work that releases the GIL, so on a second core they
overlap the main thread's Python work: importing the configuration models, the CLI and the
search code, parsing the arguments and running the full-text leg. `begin` (called by
chinvex.entry for `chinvex search`, before anything else is imported) starts them in the order
that keeps the longest piece earliest:
- the index: each named context's folders are read straight from its context.json, and a thread
  maps the store's vector matrix and reads it through when it is current (the search then reads
  it instead of Chroma, chinvex.storage.vector_matrix); otherwise it loads the store's index
  (chinvex.storage.chroma_warm), which the search's shared client takes over when it first opens
  that store (chinvex.storage.vector_clients);
- the model: a thread imports the embedder's libraries and loads the built-in model, leaving it
  for the search to take (chinvex.embedding.factory.prepare).
Each thread's Python work holds the GIL, so the calling thread waits (briefly, see the
constants) until the first has reached Chroma's load and the second has imported its
libraries; then it resolves the contexts as the command will (a context named by an alias, or
chosen by the current directory, only then gets its index loaded).

Nothing here decides anything: the command resolves its contexts and reports every error as
before, and a guess that turns out wrong (another context, `--mode fts` written oddly) only
costs work. It is skipped when a running chinvex process's relay is expected to answer, and
`CHINVEX_COLD_START=0` turns it off.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from typing import Any

ENV_SWITCH = "CHINVEX_COLD_START"


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


READY_WAIT_SECONDS = 0.1
"""How long `begin` waits for the index thread to reach Chroma's load."""
IMPORTED_WAIT_SECONDS = 0.4
"""How long `begin` then waits for the model thread to import the embedder's libraries."""


def begin(argv: Sequence[str]) -> None:
    """Start preparing for `chinvex search` with the arguments `argv` (after `search`)."""
    if not enabled() or option_values(argv, "--mode")[-1:] == ["fts"]:
        return
    try:
        if _relay_may_answer():
            return
    except Exception:  # the command's own relay check reports real problems
        return
    names = list(dict.fromkeys(option_values(argv, "--context")))
    if not names and os.environ.get("CHINVEX_CONTEXT", "").strip():
        names = [os.environ["CHINVEX_CONTEXT"].strip()]
    found = _read_context_files(names) if names else None
    models: set[str] = set()
    if found is not None:
        _start_index_thread([(f["chroma_dir"], f["sqlite_path"]) for f in found if f["chroma_dir"]])
        if any(f["default_embedder"] for f in found):
            _start_model_thread(None, models)
    from chinvex.storage.vector_open import read_only_process

    read_only_process()  # as the command will declare: its stores open through Chroma's bindings
    try:
        configs = list({c.name: c for c in _configs(names)}.values())
    except Exception:  # the command reports these itself when it resolves the contexts
        return
    if found is None:
        _start_index_thread([(c.index.chroma_dir, c.index.sqlite_path) for c in configs
                             if not c.index.chroma_url])
    for config in configs:
        _start_model_thread(config.embedding, models)


def _read_context_files(names: list[str]) -> list[dict[str, Any]] | None:
    """For each name, what its context.json says, read without the configuration models: the
    embedded store's folder (None for a Chroma server), hybrid.db, and whether the built-in
    embedder with its default model is used. None when a name is not a context's folder name
    (an alias: only the registry resolves those) or a file does not read as expected."""
    import orjson

    from chinvex.paths import roots

    where = roots()
    found = []
    for name in names:
        if not name or "/" in name or "\\" in name or ".." in name or len(name) > 64:
            return None
        try:
            data = orjson.loads(where.context_file(name).read_bytes())
            index = data["index"]
            found.append({"chroma_dir": None if index.get("chroma_url") else str(index["chroma_dir"]),
                          "sqlite_path": str(index["sqlite_path"]),
                          "default_embedder": data.get("embedding") is None})
        except (OSError, ValueError, KeyError, TypeError):
            return None
    return found


def _start_index_thread(indexes: list[tuple[str, str]]) -> None:
    """Load each store's index on one thread (one after the other: each load is native work that
    keeps a core busy), and wait until the first load has started or READY_WAIT_SECONDS pass."""
    from chinvex.storage import chroma_warm

    if not indexes:
        return
    for folder, _ in indexes:
        chroma_warm.begin(folder)  # from now on the search's client waits for this load
    started = threading.Event()

    def run() -> None:
        from chinvex.embedding.heavy_imports import VECTOR_READER_STACK, load

        chroma = list(indexes)
        try:
            chroma = [index for index in indexes if not _matrix_warmed(*index)]
            if chroma:
                load(*VECTOR_READER_STACK)
                from chinvex.storage import chroma_reader  # noqa: F401  (imported before `started`)
        except ImportError:
            pass
        finally:
            started.set()
        for folder, sqlite_path in chroma:
            chroma_warm.warm(folder, sqlite_path)

    threading.Thread(target=run, name="chinvex-cold-index", daemon=True).start()
    started.wait(READY_WAIT_SECONDS)


def _matrix_warmed(folder: str, sqlite_path: str) -> bool:
    """Whether the store's vector matrix is current and now read through (the search then
    reads it instead of Chroma's index, which is not loaded: chroma_warm.skip)."""
    from chinvex.embedding.heavy_imports import load
    from chinvex.storage import chroma_warm

    try:
        load("numpy")
        from chinvex.storage import vector_matrix

        warmed = vector_matrix.warm(folder, sqlite_path)
    except Exception:  # the search's own open meets it again and reports it
        warmed = False
    if warmed:
        chroma_warm.skip(folder)
    return warmed


def _start_model_thread(embedding: Any, started: set[str]) -> None:
    """Load the built-in embedder `embedding` asks for on a thread (factory.prepare), once per
    setting, and wait until it has imported its libraries or IMPORTED_WAIT_SECONDS pass."""
    from chinvex.embedding.factory import prepare, provider_of

    key = "default" if embedding is None else repr(embedding)
    if provider_of(embedding) != "builtin" or key in started:
        return
    started.add(key)
    imported = threading.Event()
    threading.Thread(target=prepare, args=(embedding, imported), name="chinvex-cold-model", daemon=True).start()
    imported.wait(IMPORTED_WAIT_SECONDS)


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
