"""Memories (`recall_add`) by scope, and promotion from a project to `global`.

RECALL scopes (spec §4) are contexts here: a project's memories live in its context, cross-project
ones in the context named `global`. A lesson first recorded in one project often turns out to
hold everywhere; promotion moves it to `global` without losing the trail:

- the item is written to `global` under the same id, its metadata saying where it came from;
- in the project, its indexed document is deleted (so a search of both scopes finds it once)
  and its row stays as a pointer (`scope = "promoted"`, `metadata.promoted_to`), so the id an
  agent or a note already holds still resolves (`recall_get` follows the pointer);
- both writes go through the ingest's writer under each context's lock; the global copy is
  written first, so an interruption leaves the item in both places, never in neither.
"""

from __future__ import annotations

import sqlite3
from dataclasses import replace
from pathlib import Path
from typing import Any

import orjson

from chinvex.errors import ChinvexError, NotFoundError, UsageError
from chinvex.models import ContextConfig
from chinvex.timeutil import now_iso

GLOBAL = "global"
PROMOTED = "promoted"
LOCK_WAIT_S = 30.0


def scope_label(config: ContextConfig) -> str:
    return "global" if config.name == GLOBAL else "project"


def _connect(config: ContextConfig) -> sqlite3.Connection:
    from chinvex.storage import db

    return db.connect(Path(config.index.sqlite_path), create=True)


def promote(project: ContextConfig, target: ContextConfig, item_id: str, *,
            embedder_for: Any = None) -> dict[str, Any]:
    """Move item `item_id` of `project` to `target` (the global context). `embedder_for(config)`
    returns the embedder to use (the MCP server passes its warm one)."""
    from chinvex.embedding.factory import make_embedder
    from chinvex.ingest.remove import delete_documents
    from chinvex.locking import context_lock
    from chinvex.memory.indexing import prepare_memories, write_prepared
    from chinvex.memory.items import (
        get_memory,
        insert_memory,
        mark_indexed,
        redactor_for,
    )
    from chinvex.storage import db
    from chinvex.storage.memories import turn_into_pointer
    from chinvex.storage.vectors import VectorStore

    if project.name == target.name:
        raise UsageError(f"{item_id} is already in context {target.name}")
    embedder_for = embedder_for or (lambda config: make_embedder(config.embedding))
    source = _connect(project)
    try:
        item = get_memory(source, item_id)
        if item is None:
            raise NotFoundError(f"no knowledge item {item_id} in context {project.name} "
                                f"('chinvex memory list --context {project.name}' lists them)")
        if item.scope == PROMOTED:
            raise UsageError(f"{item_id} was already promoted to {item.metadata.get('promoted_to', {}).get('context', GLOBAL)}")
        stamp = now_iso()
        moved = replace(item, scope="global", updated_at=stamp, indexed_at=None,
                        metadata={**item.metadata, "promoted_from": {"context": project.name, "at": stamp}})
        dest = _connect(target)
        try:
            if get_memory(dest, item_id) is not None:
                raise UsageError(f"context {target.name} already holds an item {item_id}")
            embedder = embedder_for(target)
            prepared, vectors = prepare_memories([moved], embedder, redact=redactor_for(target).enabled)
            with context_lock(target, wait=LOCK_WAIT_S, purpose="memory promote"):
                if db.get_meta(dest, "embedder") is None:
                    db.set_meta(dest, "embedder", embedder.name)
                store = VectorStore.open(target, dest, create=True)
                insert_memory(dest, moved)
                write_prepared(dest, store, prepared, vectors)
                mark_indexed(dest, [item_id])
        finally:
            dest.close()
        with context_lock(project, wait=LOCK_WAIT_S, purpose="memory promote"):
            delete_documents(project, source, [item.doc_id], lambda: embedder_for(project))
            pointer = {**item.metadata, "promoted_to": {"context": target.name, "item_id": item_id, "at": stamp}}
            turn_into_pointer(source, item_id, scope=PROMOTED,
                              metadata_json=orjson.dumps(pointer, default=str).decode(), stamp=stamp)
    except sqlite3.Error as exc:
        raise ChinvexError(f"promotion of {item_id} failed: {exc}") from None
    finally:
        source.close()
    return {"id": item_id, "title": item.title, "type": item.type, "from": project.name, "to": target.name,
            "scope": "global", "promoted_at": stamp}
