"""The nine MCP tools as plain functions of a `ServerState`: testable without MCP, and the MCP
layer (server.py) only describes their arguments and turns their results into tool results.

Every function validates its input against `limits`, returns a JSON-ready dict, and reports a
failure by raising `ToolFailure` (or a `ChinvexError`, mapped by `run_tool`).
"""

from __future__ import annotations

import sqlite3
import sys
import time
import traceback
from collections.abc import Callable
from typing import Any

from chinvex.mcp import budget
from chinvex.mcp import limits
from chinvex.mcp import recall
from chinvex.mcp.limits import ToolFailure
from chinvex.mcp.state import ENV_CONTEXT, ServerState

LOCK_WAIT_S = 3.0
"""How long recall_add waits for a context an ingest is writing before storing the item as
pending (it is indexed on a later call): long enough for a concurrent add, short for an agent."""
MAX_LISTED_CONTENT = 16 * 1024
"""recall_search returns a knowledge item's whole content up to this size, else the matching
chunk (recall_get returns all of it)."""


# -- running ------------------------------------------------------------------------------------

def run_tool(fn: Callable[..., dict[str, Any]], state: ServerState, **kwargs: Any) -> tuple[bool, dict[str, Any]]:
    """(ok, payload): the tool's result, or `{"ok": false, "error": {"code", "message"}}`."""
    from chinvex.errors import ChinvexError

    try:
        return True, fn(state, **kwargs)
    except ToolFailure as exc:
        return False, exc.payload()
    except ChinvexError as exc:
        return False, ToolFailure(exc.code, exc.message).payload()
    except sqlite3.Error as exc:
        return False, ToolFailure(limits.STORAGE_ERROR, f"index database error: {exc}").payload()
    except Exception as exc:  # a bug: answer the agent, keep the server, log the traceback
        sys.stderr.write(f"chinvex mcp: internal error in {getattr(fn, '__name__', fn)}:\n")
        traceback.print_exc(file=sys.stderr)
        return False, ToolFailure(
            limits.INTERNAL_ERROR, f"internal error ({type(exc).__name__}: {exc}); please report it").payload()


def _source_types(values: list[str] | None) -> tuple[list[str] | None, list[str]]:
    from chinvex.models.documents import SOURCE_TYPES

    types = limits.require_list("source_types", values, max_items=16, max_chars=limits.TYPE_MAX_CHARS)
    unknown = [t for t in types if t not in SOURCE_TYPES]
    warnings = [f"source type {t!r} is not one chinvex knows ({', '.join(SOURCE_TYPES)}); "
                "only a third-party adapter would produce it" for t in unknown]
    return (types or None), warnings


# -- chinvex tools ------------------------------------------------------------------------------

def chinvex_search(state: ServerState, query: str, context: str | None = None,
                   contexts: list[str] | None = None, k: int = 8,
                   source_types: list[str] | None = None, max_tokens: int = budget.DEFAULT_MAX_TOKENS,
                   filter: str | None = None) -> dict[str, Any]:
    from chinvex.retrieval.search import InvalidFilterError, SearchRequest

    query = limits.require_query(query)
    limits.require_range("k", k, limits.K_MIN, limits.K_MAX)
    types = limits.require_list("source_types", source_types, max_items=16, max_chars=limits.TYPE_MAX_CHARS) or None
    names = limits.require_list("contexts", contexts, max_items=limits.CONTEXTS_MAX, max_chars=200)
    if context is not None and context.strip():
        names = list(dict.fromkeys([context.strip(), *names]))
    configs = [state.resolve(n) for n in names] if names else [state.project()]
    configs = list({c.name: c for c in configs}.values())
    try:
        response = state.searcher.search(configs, SearchRequest(query=query, k=k, source_types=types,
                                                                filter_expression=_filter(filter)))
    except InvalidFilterError as exc:  # a type no searched index knows: as the CLI, not "no results"
        raise ToolFailure(limits.INVALID_ARGUMENT, exc.message if exc.message.startswith("--filter")
                          else f"source_types: {exc.message}") from None
    payload = response.model_dump(mode="json")
    payload["results"], payload["budget"] = budget.fit(payload["results"], "text", max_tokens)
    return payload


def _filter(expression: str | None) -> str | None:
    """A filter expression checked before searching (INVALID_ARGUMENT naming the column)."""
    if expression is None or not expression.strip():
        return None
    from chinvex.retrieval import fel

    limits.require_text("filter", expression, max_bytes=limits.QUERY_MAX_BYTES)
    try:
        fel.parse(expression)
    except fel.FilterError as exc:
        raise ToolFailure(limits.INVALID_ARGUMENT, str(exc).replace("--filter", "filter", 1)) from None
    return expression


def chinvex_get_chunks(state: ServerState, chunk_ids: list[str], context: str | None = None) -> dict[str, Any]:
    from chinvex.chunks import fetch_chunks

    ids = limits.require_list("chunk_ids", chunk_ids, max_items=limits.CHUNK_IDS_MAX, max_chars=limits.ID_MAX_CHARS)
    if not ids:
        raise ToolFailure(limits.INVALID_ARGUMENT, "chunk_ids must name at least one chunk id.")
    config = state.context_or_project(context)
    h = state.handle(config)
    with h.lock:
        chunks = fetch_chunks(h.conn, ids, config.name)
    found = {c["chunk_id"] for c in chunks}
    missing = [cid for cid in ids if cid not in found]
    if not chunks:
        raise ToolFailure(limits.NOT_FOUND, f"None of the chunk ids is in context {config.name}: {', '.join(ids[:10])}",
                          context=config.name, missing=missing)
    return {"context": config.name, "chunks": chunks, "missing": missing}


def chinvex_list_contexts(state: ServerState) -> dict[str, Any]:
    from chinvex.models import INCLUDE_KEYS

    registry = state.registry()
    resolution = state.resolution()
    default = resolution.config.name if resolution.config else None
    rows = []
    for entry in registry.entries():
        config = entry.config
        if config is None:
            rows.append({"name": entry.dir_name, "aliases": [], "updated_at": None, "sources": {},
                         "default": False, "global": False, "error": entry.error})
            continue
        rows.append({
            "name": config.name,
            "aliases": list(config.aliases),
            "updated_at": config.updated_at,
            "sources": {key: len(getattr(config.includes, key)) for key in INCLUDE_KEYS},
            "default": config.name == default,
            "global": config.name == "global",
            "error": None,
        })
    return {
        "contexts": rows,
        "default_context": default,
        "default_resolved_by": resolution.via if default else None,
        "default_error": resolution.error,
        "global_context": "global" if any(r["name"] == "global" for r in rows) else None,
        "session_id": state.session_id,
    }


def chinvex_answer(state: ServerState, query: str, context: str | None = None, k: int = 8,
                   grounded: bool = True, source_types: list[str] | None = None,
                   include_evidence: bool = False, max_tokens: int = budget.DEFAULT_MAX_TOKENS) -> dict[str, Any]:
    query = limits.require_query(query)
    limits.require_range("k", k, limits.K_MIN, limits.K_MAX)
    types, _ = _source_types(source_types)
    config = state.context_or_project(context)
    try:
        from chinvex.answer.service import answer
    except ImportError as exc:
        raise ToolFailure(limits.NOT_AVAILABLE, f"grounded answers are not available in this build ({exc}); "
                          "use chinvex_search instead") from None
    from chinvex.retrieval.search import InvalidFilterError

    try:
        response = answer(config, query, k=k, grounded=grounded, source_types=types, searcher=state.searcher)
    except InvalidFilterError as exc:  # as chinvex_search: a type no searched index knows
        raise ToolFailure(limits.INVALID_ARGUMENT, f"source_types: {exc.message}") from None
    payload = response.model_dump(mode="json")
    # GROUNDING_FAILED is an answer ("not stated"); anything else in `errors` means the tool
    # could not do its job, reported like every other tool failure (the v1 response, evidence
    # included, rides along in details).
    failed = [e for e in response.errors if e.code != limits.GROUNDING_FAILED]
    if failed:
        raise ToolFailure(failed[0].code, failed[0].detail, response=payload)
    if not include_evidence:
        return compact_answer(payload)
    pack = payload.get("evidence_pack") or {}
    if isinstance(pack.get("chunks"), list):
        pack["chunks"], payload["budget"] = budget.fit(pack["chunks"], "text", max_tokens)
    return payload


def chinvex_pack(state: ServerState, task: str, context: str | None = None,
                 budget_tokens: int = 2000, diversity: int | None = None,
                 source_types: list[str] | None = None) -> dict[str, Any]:
    from chinvex.pack.service import MAX_BUDGET, build_pack
    from chinvex.retrieval.search import InvalidFilterError

    task = limits.require_query(task)
    limits.require_range("budget_tokens", budget_tokens, 1, MAX_BUDGET)
    if diversity is not None:
        limits.require_range("diversity", diversity, 1, limits.K_MAX)
    types, _ = _source_types(source_types)
    config = state.context_or_project(context)
    try:
        response = build_pack([config], task, budget=budget_tokens, diversity=diversity,
                              source_types=types, searcher=state.searcher)
    except InvalidFilterError as exc:
        raise ToolFailure(limits.INVALID_ARGUMENT, f"source_types: {exc.message}") from None
    return response.model_dump(mode="json")


def compact_answer(payload: dict[str, Any]) -> dict[str, Any]:
    """The answer as an agent reads it (well under 3,000 characters): the answer, its citations
    with where to find them, and one line on the evidence; the full pack on request."""
    chunks = payload["evidence_pack"]["chunks"]
    retrieval = payload["retrieval"]
    places = []
    for chunk in chunks[:3]:
        meta = chunk["metadata"]
        places.append(str(meta.get("path") or meta.get("source_uri") or chunk["chunk_id"]))
    summary = (f"{len(chunks)} chunks retrieved ({retrieval.get('mode') or 'no retrieval'}, "
               f"{retrieval.get('generator')}); best: {', '.join(places) or 'none'}")
    compact = {
        "schema_version": payload["schema_version"], "context": payload["context"], "query": payload["query"],
        "grounded": payload["grounded"], "answer": payload["answer"],
        "citations": [{"chunk_id": c["chunk_id"], "where": c.get("where"), "source_uri": c["source_uri"],
                       "range": {k: v for k, v in c["range"].items() if v is not None}}
                      for c in payload["citations"]],
        "evidence": summary,
        "errors": payload["errors"],
    }
    return compact


# -- RECALL: scopes -----------------------------------------------------------------------------

def scope_contexts(state: ServerState, scope: str) -> tuple[list[Any], list[str]]:
    """RECALL scopes as contexts: project = the default context, global = the context named
    `global`, all = both (whichever exist; an explicitly named project that does not exist is
    an error, never a silent switch to other data)."""
    if scope == "project":
        return [state.project()], []
    glob = state.global_context()
    if scope == "global":
        if glob is None:
            raise ToolFailure(limits.CONTEXT_NOT_FOUND, "No context named 'global' exists: create it with "
                              "'chinvex context create global' to keep cross-project knowledge.")
        return [glob], []
    if scope != "all":
        raise ToolFailure(limits.INVALID_ARGUMENT, f"scope must be project, global or all (got {scope!r}).")
    resolution = state.resolution()
    named = resolution.via in ("--context", ENV_CONTEXT)
    if resolution.config is None and (named or glob is None):
        raise ToolFailure(limits.CONTEXT_NOT_FOUND, resolution.error or "No default context.")
    configs = [c for c in (resolution.config, glob) if c is not None]
    configs = list({c.name: c for c in configs}.values())
    warnings = []
    if resolution.config is None:
        warnings.append(f"no project context ({resolution.error}); searched 'global' only")
    elif glob is None:
        warnings.append("no 'global' context exists; searched the project only")
    return configs, warnings


def _lookup_contexts(state: ServerState) -> list[Any]:
    configs, _ = scope_contexts(state, "all")
    return configs


# -- RECALL: indexing knowledge items -----------------------------------------------------------

def _index_items(state: ServerState, config: Any, items: list[recall.KnowledgeItem], *, wait: float | bool) -> str | None:
    """Index stored items; None when done, else why they stay pending (they are kept either way)."""
    ids = [item.item_id for item in items]
    with state.indexing_lock:
        state.indexing.update(ids)
    try:
        return _index_items_now(state, config, items, wait=wait)
    finally:
        with state.indexing_lock:
            state.indexing.difference_update(ids)


def _index_items_now(state: ServerState, config: Any, items: list[recall.KnowledgeItem], *,
                     wait: float | bool) -> str | None:
    from chinvex.errors import ChinvexError, LockedError
    from chinvex.locking import context_lock
    from chinvex.storage import db
    from chinvex.storage.vectors import VectorStore

    h = state.handle(config)
    try:
        embedder = state.embedder(config)
        with h.lock:
            stored = db.get_meta(h.conn, "embedder")
        if stored is not None and stored != embedder.name:
            return (f"context {config.name} holds vectors of {stored} but is configured for {embedder.name}; "
                    f"the item is stored and will be indexed after 'chinvex ingest --context {config.name} --full'")
        prepared, vectors = recall.prepare_items(items, embedder, redact=recall.redactor_for(config).enabled)
    except ChinvexError as exc:
        return f"the item is stored but could not be embedded yet ({exc.message}); it will be indexed on a later call"
    try:
        with context_lock(config, wait=wait, purpose="recall_add (chinvex mcp)"):
            with h.lock:
                stored = db.get_meta(h.conn, "embedder")
                if stored is None:
                    db.set_meta(h.conn, "embedder", embedder.name)
                    db.set_meta(h.conn, "embedding_provider", embedder.provider)
                    db.set_meta(h.conn, "embedding_model", embedder.model)
                    db.set_meta(h.conn, "embedding_dimension", str(embedder.dimension))
                elif stored != embedder.name:  # an ingest --full switched models meanwhile
                    return f"context {config.name} changed embedder while the item was prepared; it will be indexed on a later call"
                try:
                    store = h.store
                    if store is None:
                        store = VectorStore.open(config, h.conn, create=True)
                        # The searcher may have noted "no vectors yet": it sees this store from now on.
                        h.store, h.store_checked, h.store_error = store, True, None
                    recall.write_prepared(h.conn, store, prepared, vectors)
                    recall.mark_indexed(h.conn, [item.item_id for item in items])
                except (ChinvexError, sqlite3.Error, OSError) as exc:
                    message = getattr(exc, "message", None) or str(exc)
                    return (f"the item is stored but writing it to the index failed ({message}); it will be "
                            "indexed on a later call")
    except LockedError:
        return (f"context {config.name} is being written by another process (an ingest?); the item is "
                "stored and will be indexed on a later call")
    return None


def _index_pending(state: ServerState, config: Any) -> str | None:
    """Index items stored while their context was busy (or its embedder unavailable); never
    waits for a lock, and leaves alone the items another call of this server is indexing."""
    h = state.handle(config)
    with h.lock:
        pending = [item for item in recall.pending_items(h.conn) if item.item_id not in state.indexing]
    if not pending:
        return None
    note = _index_items(state, config, pending, wait=False)
    if note is None:
        return None
    with state.indexing_lock:
        if state.indexing:  # this server is writing the context itself: retried on the next call
            return None
    return f"{len(pending)} knowledge item(s) of {config.name} are stored but not indexed yet: {note}"


# -- RECALL tools -------------------------------------------------------------------------------

def _empty_context_warning(state: ServerState, configs: list[Any], warning: str) -> bool:
    """"no vectors yet" about a context with nothing indexed (a fresh `global`) is noise."""
    for config in configs:
        if warning.startswith(f"{config.name}: no vectors yet"):
            h = state.handle(config)
            with h.lock:
                return h.conn.execute("SELECT 1 FROM chunks LIMIT 1").fetchone() is None
    return False


def _chunk_title(result: Any) -> str:
    meta = result.metadata or {}
    base = meta.get("path") or result.title or result.source_uri
    symbols = meta.get("symbols") or []
    headings = meta.get("heading_path") or []
    if symbols:
        return f"{base}: {', '.join(str(s) for s in symbols[:3])}"
    if headings:
        return f"{base}: {' > '.join(str(h) for h in headings)}"
    if result.title and result.title != base:
        return f"{result.title} ({base})"
    return str(base)


def _chunk_metadata(result: Any) -> dict[str, Any]:
    meta = result.metadata or {}
    uri = result.source_uri
    out: dict[str, Any] = {
        "source": meta.get("path") or uri,
        "source_type": result.source_type,
        "context": result.context,
        "scope": result.scope,
        "chunk_id": result.chunk_id,
        "doc_id": result.doc_id,
        "updated_at": result.updated_at,
        "range": result.range.model_dump(mode="json"),
    }
    if uri.startswith("/") or (len(uri) > 2 and uri[1] == ":"):
        out["file_path"] = uri.split("#", 1)[0]
    if result.freshness.stale:
        out["stale"] = True
        out["stale_reason"] = result.freshness.reason
    for key in ("language", "symbols", "heading_path", "thread_id", "turn_start", "turn_end"):
        if meta.get(key) not in (None, [], ""):
            out[key] = meta[key]
    return out


def recall_search(state: ServerState, query: str, types: list[str] | None = None, scope: str = "all",
                  limit: int = 10, max_tokens: int = budget.DEFAULT_MAX_TOKENS,
                  filter: str | None = None) -> dict[str, Any]:
    from chinvex.retrieval.search import SearchRequest

    started = time.perf_counter()
    query = limits.require_query(query)
    limits.require_range("limit", limit, limits.LIMIT_MIN, limits.LIMIT_MAX)
    wanted = limits.require_list("types", types, max_items=16, max_chars=limits.TYPE_MAX_CHARS)
    configs, warnings = scope_contexts(state, scope)
    for config in configs:
        note = _index_pending(state, config)
        if note:
            warnings.append(note)
    fetch = min(200, limit * (5 if wanted else 2) + 10)
    response = state.searcher.search(
        configs, SearchRequest(query=query, k=fetch, source_types=recall.source_types_for(wanted) if wanted else None,
                               filter_expression=_filter(filter)))
    warnings.extend(w for w in response.stats.warnings if not _empty_context_warning(state, configs, w))

    items: dict[tuple[str, str], recall.KnowledgeItem] = {}
    by_context = {c.name: c for c in configs}
    for name, config in by_context.items():
        doc_ids = [r.doc_id for r in response.results if r.context == name and r.source_type == recall.MEMORY_SOURCE_TYPE]
        if doc_ids:
            h = state.handle(config)
            with h.lock:
                for doc_id, item in recall.items_for_docs(h.conn, doc_ids).items():
                    items[(name, doc_id)] = item

    results: list[dict[str, Any]] = []
    seen: set[tuple[str, str]] = set()
    for r in response.results:
        item = items.get((r.context, r.doc_id)) if r.source_type == recall.MEMORY_SOURCE_TYPE else None
        rtype = recall.result_type(r.source_type, r.metadata or {}, {"type": item.type} if item else None)
        if wanted and not recall.type_matches(rtype, r.source_type, wanted):
            continue
        rid = item.item_id if item else r.chunk_id
        if (r.context, rid) in seen:
            continue
        seen.add((r.context, rid))
        if item is not None:
            content = item.content if len(item.content) <= MAX_LISTED_CONTENT else r.text
            metadata = {**item.as_result()["metadata"], "context": r.context, "tags": item.tags,
                        "scope": item.scope, "chunk_id": r.chunk_id,
                        "content_truncated": content is not item.content}
            results.append({"id": rid, "type": rtype, "title": item.title, "content": content,
                            "score": r.scores.rank, "metadata": metadata})
        else:
            results.append({"id": rid, "type": rtype, "title": _chunk_title(r), "content": r.text,
                            "score": r.scores.rank, "metadata": _chunk_metadata(r)})
        if len(results) >= limit:
            break

    for name, config in by_context.items():
        ids = [res["id"] for res in results if res["metadata"]["context"] == name]
        if ids:
            h = state.handle(config)
            with h.lock:
                recall.count_retrievals(h.conn, ids)

    latency_ms = int(round((time.perf_counter() - started) * 1000))
    log_config = configs[0]
    h = state.handle(log_config)
    with h.lock:
        recall.log_event(h.conn, session_id=state.session_id, event_type="retrieval_query", content=query,
                    redactor=recall.redactor_for(log_config), metadata={
                        "query": query,
                        "filters": {"scope": scope, "types": wanted, "limit": limit},
                        "contexts": list(by_context),
                        "results": [{"id": res["id"], "type": res["type"], "score": res["score"],
                                     "context": res["metadata"]["context"]} for res in results],
                        "latency_ms": latency_ms,
                    })
    results, fitted = budget.fit(results, "content", max_tokens)
    return {
        "results": results,
        "budget": fitted,
        "query_metadata": {
            "scope_searched": scope,
            "contexts": list(by_context),
            "total_candidates": response.stats.candidates,
            "reranked": False,
            "mode": response.stats.mode,
            "latency_ms": latency_ms,
            "warnings": list(dict.fromkeys(warnings)),
        },
        "_judge_reminder": recall.JUDGE_REMINDER,
    }


def _parent_content(conn: sqlite3.Connection, doc_id: str) -> str:
    """The document's text rebuilt from its chunks (ranges may overlap; gaps become a newline)."""
    rows = conn.execute(
        "SELECT text, char_start, char_end FROM chunks WHERE doc_id=? ORDER BY char_start, chunk_index",
        (doc_id,)).fetchall()
    parts: list[str] = []
    end = None
    for row in rows:
        start, text = row["char_start"], row["text"]
        if end is None or start is None:
            parts.append(text)
        elif start >= end:
            parts.append(("\n" if start > end else "") + text)
        else:
            parts.append(text[end - start:])
        if row["char_end"] is not None:
            end = max(end or 0, row["char_end"])
    return "".join(parts)


def _thread(conn: sqlite3.Connection, thread_id: str, context: str) -> dict[str, Any] | None:
    """A conversation by its Codex thread / Claude Code session / ChatGPT conversation id, in
    recall_get's shape (the turns as `content`, each also in `turns`)."""
    from chinvex.conversations import AmbiguousIdError, conversation, find_thread

    try:
        row = find_thread(conn, thread_id)
    except AmbiguousIdError as exc:
        raise ToolFailure(limits.INVALID_ARGUMENT, str(exc)) from None
    if row is None:
        return None
    found = conversation(conn, row, context)
    content = "\n\n".join(f"[{t['index']}] {t['role']}: {t['text']}" for t in found["turns"])
    return {"id": found["thread_id"], "type": "session", "title": found["title"], "content": content,
            "turns": found["turns"],
            "metadata": {"context": context, "doc_id": found["doc_id"], "source_type": found["source_type"],
                         "source_uri": found["source_uri"], "created_at": found["created_at"],
                         "updated_at": found["updated_at"], "turn_count": found["turn_count"]}}


def recall_get(state: ServerState, id: str, include_parent: bool = False) -> dict[str, Any]:
    from chinvex.chunks import fetch_chunks

    item_id = limits.require_short("id", id, max_chars=limits.ID_MAX_CHARS)
    assert item_id is not None
    pointer: dict[str, Any] | None = None
    for config in _lookup_contexts(state):
        h = state.handle(config)
        with h.lock:
            if recall.ITEM_ID.match(item_id):
                item = recall.get_item(h.conn, item_id)
                if item is None:
                    continue
                if item.scope == "promoted":  # a pointer: the item lives in global now
                    pointer = {**(item.metadata.get("promoted_to") or {}), "context": config.name}
                    continue
                out = item.as_result()
                out["metadata"].update({"context": config.name, "item_stats": recall.item_stats(h.conn, item_id)})
                if pointer is not None:
                    out["metadata"]["found_via_pointer_in"] = pointer["context"]
                return out
            chunks = fetch_chunks(h.conn, [item_id], config.name)
            if not chunks:
                thread = _thread(h.conn, item_id, config.name)
                if thread is not None:
                    return thread
                continue
            chunk = chunks[0]
            items = recall.items_for_docs(h.conn, [chunk["doc_id"]]) if chunk["source_type"] == recall.MEMORY_SOURCE_TYPE else {}
            parent = _parent_content(h.conn, chunk["doc_id"]) if include_parent else None
            stats = recall.item_stats(h.conn, item_id)
        item = items.get(chunk["doc_id"])
        rtype = recall.result_type(chunk["source_type"], chunk["metadata"], {"type": item.type} if item else None)
        meta = chunk["metadata"] or {}
        out = {
            "id": item_id,
            "type": rtype,
            "title": meta.get("path") or chunk["title"] or chunk["source_uri"],
            "content": chunk["text"],
            "metadata": {
                "source": meta.get("path") or chunk["source_uri"],
                "source_uri": chunk["source_uri"],
                "source_type": chunk["source_type"],
                "context": config.name,
                "doc_id": chunk["doc_id"],
                "range": chunk["range"],
                "neighbours": chunk["neighbours"],
                "timestamps": chunk["timestamps"],
                "chunk_metadata": meta,
                "knowledge_id": item.item_id if item else None,
                "item_stats": stats,
            },
        }
        if parent is not None:
            out["parent_content"] = parent
        return out
    raise ToolFailure(limits.NOT_FOUND, f"No knowledge item or chunk with id {item_id!r} in the project or global context.")


def recall_add(state: ServerState, type: str, title: str, content: str, tags: list[str] | None = None,
               scope: str = "project", related_files: list[str] | None = None) -> dict[str, Any]:
    item_type = limits.require_short("type", type, max_chars=limits.TYPE_MAX_CHARS)
    clean_title = limits.require_short("title", title, max_chars=limits.TITLE_MAX_CHARS)
    limits.require_text("content", content, max_bytes=limits.CONTENT_MAX_BYTES)
    tag_list = limits.require_list("tags", tags, max_items=limits.TAGS_MAX, max_chars=limits.TAG_MAX_CHARS)
    files = limits.require_list("related_files", related_files, max_items=64, max_chars=1024)
    assert item_type is not None and clean_title is not None
    if scope not in ("project", "global"):
        raise ToolFailure(limits.INVALID_ARGUMENT, f"scope must be project or global (got {scope!r}).")
    config = state.project() if scope == "project" else scope_contexts(state, "global")[0][0]

    metadata: dict[str, Any] = {**recall.edi_metadata(state.env), "added_by": "recall_add",
                                "mcp_session_id": state.session_id}
    if files:
        metadata["related_files"] = files
    redactor = recall.redactor_for(config)
    item = recall.make_item(item_type.lower(), clean_title, content, scope=scope, tags=tag_list, metadata=metadata,
                       redactor=redactor)
    redactions = dict(sorted(redactor.counts.items()))
    h = state.handle(config)
    with state.indexing_lock:  # so that a concurrent search does not take it for a pending item
        state.indexing.add(item.item_id)
    try:
        with h.lock:
            recall.insert_item(h.conn, item)  # durable first: indexing may have to wait
        pending = _index_items(state, config, [item], wait=LOCK_WAIT_S)
    finally:
        with state.indexing_lock:
            state.indexing.discard(item.item_id)
    out = {
        "id": item.item_id,
        "item_id": item.item_id,
        "type": item.type,
        "title": item.title,
        "scope": scope,
        "context": config.name,
        "doc_id": item.doc_id,
        "indexed": pending is None,
        "created_at": item.created_at,
        "metadata": item.metadata,
        "redactions": redactions,
    }
    if pending is not None:
        out["warning"] = pending
    return out


def recall_feedback(state: ServerState, item_id: str, useful: bool | None = None, feedback: str | None = None,
                    context: str | None = None, duplicate_of: str | None = None) -> dict[str, Any]:
    target = limits.require_short("item_id", item_id, max_chars=limits.ID_MAX_CHARS)
    assert target is not None
    kind = feedback.strip().lower().replace("-", "_").replace(" ", "_") if feedback else None
    if kind is not None and kind not in recall.FEEDBACK_KINDS:
        raise ToolFailure(limits.INVALID_ARGUMENT, f"feedback must be one of {', '.join(recall.FEEDBACK_KINDS)} (got {feedback!r}).")
    if kind is None and useful is None:
        raise ToolFailure(limits.INVALID_ARGUMENT, "give useful (true or false) or feedback "
                          f"({', '.join(recall.FEEDBACK_KINDS)}).")
    if kind is None:
        kind = "useful" if useful else "not_useful"
    elif useful is not None and (kind == "useful") != bool(useful) and kind in ("useful", "not_useful"):
        raise ToolFailure(limits.INVALID_ARGUMENT, f"useful={useful} contradicts feedback={kind!r}.")
    limits.require_text("context", context, max_bytes=limits.NOTE_MAX_BYTES, required=False)
    dup = limits.require_short("duplicate_of", duplicate_of, max_chars=limits.ID_MAX_CHARS, required=False)
    if dup is not None and kind != "duplicate":
        raise ToolFailure(limits.INVALID_ARGUMENT, "duplicate_of is only meaningful with feedback='duplicate'.")
    for config in _lookup_contexts(state):
        h = state.handle(config)
        with h.lock:
            if recall.ITEM_ID.match(target):
                exists = recall.get_item(h.conn, target) is not None
            else:
                exists = h.conn.execute("SELECT 1 FROM chunks WHERE chunk_id=?", (target,)).fetchone() is not None
            if not exists:
                continue
            feedback_id = recall.record_feedback(h.conn, item_id=target, session_id=state.session_id, kind=kind,
                                            context=context, duplicate_of=dup, redactor=recall.redactor_for(config))
            stats = recall.item_stats(h.conn, target)
        return {"acknowledged": True, "feedback_id": feedback_id, "item_id": target, "feedback": kind,
                "stored_in": config.name, "item_stats": stats}
    raise ToolFailure(limits.NOT_FOUND, f"No knowledge item or chunk with id {target!r} in the project or global "
                      "context; use an id from recall_search results.")


def flight_recorder_log(state: ServerState, type: str, content: str, rationale: str | None = None,
                        metadata: dict[str, Any] | None = None, resolution: str | None = None,
                        from_agent: str | None = None, to_agent: str | None = None,
                        related_files: list[str] | None = None) -> dict[str, Any]:
    event_type = limits.require_short("type", type, max_chars=limits.TYPE_MAX_CHARS)
    limits.require_text("content", content, max_bytes=limits.CONTENT_MAX_BYTES)
    limits.require_text("rationale", rationale, max_bytes=limits.NOTE_MAX_BYTES, required=False)
    limits.require_text("resolution", resolution, max_bytes=limits.NOTE_MAX_BYTES, required=False)
    files = limits.require_list("related_files", related_files, max_items=64, max_chars=1024)
    if metadata is not None and not isinstance(metadata, dict):
        raise ToolFailure(limits.INVALID_ARGUMENT, "metadata must be a JSON object.")
    merged: dict[str, Any] = dict(metadata or {})
    for key, value in (("resolution", resolution), ("from_agent", from_agent), ("to_agent", to_agent)):
        if value:
            merged.setdefault(key, value[:1024] if key != "resolution" else value)
    if files:
        merged.setdefault("related_files", files)
    for key, value in recall.edi_metadata(state.env).items():
        merged.setdefault(key, value)
    limits.check_json_size("metadata", merged)
    assert event_type is not None
    config = state.project()
    h = state.handle(config)
    with h.lock:
        logged = recall.log_event(h.conn, session_id=state.session_id, event_type=event_type, content=content,
                             rationale=rationale, metadata=merged, redactor=recall.redactor_for(config))
    return {"logged": True, **logged, "session_id": state.session_id, "context": config.name}
