"""MCP `recall_index` (RECALL spec v0.3 §3.7): "index this file (or folder) now".

An agent that has just written a design note wants it searchable before the next ingest. The
tool runs the context's own incremental ingest, with the embedder the server already holds, so
what gets indexed, how, and under which exclusions is exactly what `chinvex ingest` would do: a
path outside every source folder of the project context is refused (indexing it would make it a
source the user never configured), and a path inside one is picked up with the rest of that
folder's changes. `recursive` and `type_hint` are accepted for the spec's sake; a folder is
always covered whole by its context's walk, and the type comes from the adapter that reads it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from chinvex.files.walk import within
from chinvex.mcp import limits
from chinvex.mcp.limits import ToolFailure
from chinvex.mcp.state import ServerState
from chinvex.storage.documents_by_origin import count_documents_under

INGEST_WAIT_S = 30.0
"""How long the tool waits for another writer of the context (an ingest, `chinvex watch`)."""


def _root_of(path: Path, roots: list[Path]) -> Path | None:
    return next((root for root in roots if within(path, root)), None)


def recall_index(state: ServerState, path: str, recursive: bool = False,
                 type_hint: str | None = None) -> dict[str, Any]:
    from chinvex.errors import ChinvexError, LockedError
    from chinvex.ingest.pipeline import IngestOptions, run_ingest
    from chinvex.ingest.watch import source_roots

    raw = limits.require_short("path", path, max_chars=4096)
    assert raw is not None
    config = state.project()
    given = Path(raw).expanduser()
    target = (given if given.is_absolute() else Path(state.cwd) / given).resolve()
    roots = [root for root, _ in source_roots(config)]
    root = _root_of(target, roots)
    if root is None:
        listed = ", ".join(str(r) for r in roots) or "none"
        raise ToolFailure(limits.INVALID_ARGUMENT, f"{target} is outside the source folders of context "
                          f"{config.name} ({listed}); add the folder with 'chinvex context add-source' "
                          "first, or index it in the context that holds it")
    if not target.exists():
        raise ToolFailure(limits.NOT_FOUND, f"{target} does not exist")
    try:
        summary = run_ingest(config, IngestOptions(wait=INGEST_WAIT_S, embedder_factory=lambda: state.embedder(config)))
    except LockedError as exc:
        raise ToolFailure(limits.LOCKED, exc.message) from None
    except ChinvexError as exc:
        raise ToolFailure(exc.code, exc.message) from None
    h = state.handle(config)
    with h.lock:
        prefix = str(target)
        docs = count_documents_under(h.conn, prefix)
    return {"path": str(target), "context": config.name, "root": str(root), "documents_for_path": docs,
            "indexed": summary.sources.indexed, "removed": summary.sources.removed,
            "unchanged": summary.sources.unchanged, "errors": [e.message for e in summary.errors][:10],
            "status": summary.status, "duration_s": round(summary.duration_s, 3),
            "note": ("the whole context was brought up to date; the path is indexed as its folder's "
                     "adapter reads it" + ("" if type_hint is None else f" (type_hint {type_hint!r} noted, "
                                            "the adapter decides the type)"))}
