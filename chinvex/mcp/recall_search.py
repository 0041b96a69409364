"""MCP tool `recall_search`: memories and chunks for a query, across RECALL scopes."""

from __future__ import annotations

import time
from typing import Any

from chinvex.mcp import budget, limits
from chinvex.mcp.arguments import checked_filter
from chinvex.mcp.item_indexing import index_pending
from chinvex.mcp.scopes import scope_contexts
from chinvex.mcp.state import ServerState
from chinvex.memory.events import log_event
from chinvex.memory.feedback import count_retrievals
from chinvex.memory.items import Memory, memories_for_docs, redactor_for
from chinvex.memory.vocabulary import (
    MEMORY_SOURCE_TYPE,
    result_type,
    source_types_for,
    type_matches,
)
from chinvex.storage.recall_reads import has_chunks

JUDGE_REMINDER = (
    "Apply the retrieval-judge skill: evaluate each result for relevance before using. "
    "Log a retrieval_judgment entry via flight_recorder_log."
)
"""RECALL §12: a nudge for the consuming agent in every recall_search response."""


MAX_LISTED_CONTENT = 16 * 1024
"""recall_search returns a memory's whole content up to this size, else the matching
chunk (recall_get returns all of it)."""


def _empty_context_warning(state: ServerState, configs: list[Any], warning: str) -> bool:
    """"no vectors yet" about a context with nothing indexed (a fresh `global`) is noise."""
    for config in configs:
        if warning.startswith(f"{config.name}: no vectors yet"):
            h = state.handle(config)
            with h.lock:
                return not has_chunks(h.conn)
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


def _memories_found(state: ServerState, by_context: dict[str, Any],
                    results: list[Any]) -> dict[tuple[str, str], Memory]:
    """The memories among the search results, by (context, doc id)."""
    items: dict[tuple[str, str], Memory] = {}
    for name, config in by_context.items():
        doc_ids = [r.doc_id for r in results if r.context == name and r.source_type == MEMORY_SOURCE_TYPE]
        if doc_ids:
            h = state.handle(config)
            with h.lock:
                for doc_id, item in memories_for_docs(h.conn, doc_ids).items():
                    items[(name, doc_id)] = item
    return items


def _count_retrievals(state: ServerState, by_context: dict[str, Any], results: list[dict[str, Any]]) -> None:
    """One more retrieval for every result returned, counted in its own context."""
    for name, config in by_context.items():
        ids = [res["id"] for res in results if res["metadata"]["context"] == name]
        if ids:
            h = state.handle(config)
            with h.lock:
                count_retrievals(h.conn, ids)


def _log_query(state: ServerState, config: Any, query: str, results: list[dict[str, Any]],
               latency_ms: int, *, filters: dict[str, Any], contexts: list[str]) -> None:
    """The query and what it returned, in the flight recorder of the first context searched."""
    h = state.handle(config)
    with h.lock:
        log_event(h.conn, session_id=state.session_id, event_type="retrieval_query", content=query,
                  redactor=redactor_for(config), metadata={
                      "query": query,
                      "filters": filters,
                      "contexts": contexts,
                      "results": [{"id": res["id"], "type": res["type"], "score": res["score"],
                                   "context": res["metadata"]["context"]} for res in results],
                      "latency_ms": latency_ms,
                  })


def recall_search(state: ServerState, query: str, types: list[str] | None = None, scope: str = "all",
                  limit: int = 10, max_tokens: int = budget.DEFAULT_MAX_TOKENS,
                  filter: str | None = None, rerank: bool = True) -> dict[str, Any]:
    from chinvex.retrieval.search import SearchRequest

    started = time.perf_counter()
    query = limits.require_query(query)
    limits.require_range("limit", limit, limits.LIMIT_MIN, limits.LIMIT_MAX)
    wanted = limits.require_list("types", types, max_items=16, max_chars=limits.TYPE_MAX_CHARS)
    configs, warnings = scope_contexts(state, scope)
    for config in configs:
        note = index_pending(state, config)
        if note:
            warnings.append(note)
    fetch = min(200, limit * (5 if wanted else 2) + 10)
    response = state.searcher.search(
        configs, SearchRequest(query=query, k=fetch, source_types=source_types_for(wanted) if wanted else None,
                               filter_expression=checked_filter(filter), rerank=None if rerank else False))
    warnings.extend(w for w in response.stats.warnings if not _empty_context_warning(state, configs, w))

    by_context = {c.name: c for c in configs}
    items = _memories_found(state, by_context, response.results)
    results: list[dict[str, Any]] = []
    seen: set[tuple[str, str]] = set()
    for r in response.results:
        item = items.get((r.context, r.doc_id)) if r.source_type == MEMORY_SOURCE_TYPE else None
        rtype = result_type(r.source_type, r.metadata or {}, {"type": item.type} if item else None)
        if wanted and not type_matches(rtype, r.source_type, wanted):
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

    _count_retrievals(state, by_context, results)
    latency_ms = int(round((time.perf_counter() - started) * 1000))
    _log_query(state, configs[0], query, results, latency_ms, contexts=list(by_context),
               filters={"scope": scope, "types": wanted, "limit": limit})
    results, fitted = budget.fit(results, "content", max_tokens)
    return {
        "results": results,
        "budget": fitted,
        "query_metadata": {
            "scope_searched": scope,
            "contexts": list(by_context),
            "total_candidates": response.stats.candidates,
            "reranked": response.stats.reranker is not None,
            "mode": response.stats.mode,
            "latency_ms": latency_ms,
            "warnings": list(dict.fromkeys(warnings)),
        },
        "_judge_reminder": JUDGE_REMINDER,
    }
