"""MCP tool `chinvex_answer`: a grounded answer with citations, compact unless the evidence
is asked for."""

from __future__ import annotations

from typing import Any

from chinvex.mcp import budget
from chinvex.mcp import limits
from chinvex.mcp.arguments import checked_source_types
from chinvex.mcp.limits import ToolFailure
from chinvex.mcp.state import ServerState


def chinvex_answer(state: ServerState, query: str, context: str | None = None, k: int = 8,
                   grounded: bool = True, source_types: list[str] | None = None,
                   include_evidence: bool = False, max_tokens: int = budget.DEFAULT_MAX_TOKENS) -> dict[str, Any]:
    query = limits.require_query(query)
    limits.require_range("k", k, limits.K_MIN, limits.K_MAX)
    types, _ = checked_source_types(source_types)
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


def compact_answer(payload: dict[str, Any]) -> dict[str, Any]:
    """The answer as an agent reads it (well under 3,000 characters): the answer, its confidence, its citations
    with where to find them and the words each rests on, and one line on the evidence; the full pack on request."""
    chunks = payload["evidence_pack"]["chunks"]
    retrieval = payload["retrieval"]
    places: dict[str, int] = {}  # the best three distinct places, each with its chunk count
    for chunk in chunks:
        meta = chunk["metadata"]
        place = str(meta.get("path") or meta.get("source_uri") or chunk["chunk_id"])
        if place in places or len(places) < 3:
            places[place] = places.get(place, 0) + 1
    best = ", ".join(f"{place} ({n} chunks)" if n > 1 else place for place, n in places.items())
    summary = (f"{len(chunks)} chunks retrieved ({retrieval.get('mode') or 'no retrieval'}, "
               f"{retrieval.get('generator')}); best: {best or 'none'}")
    compact = {
        "schema_version": payload["schema_version"], "context": payload["context"], "query": payload["query"],
        "grounded": payload["grounded"], "answer": payload["answer"], "confidence": payload.get("confidence"),
        "citations": [{"chunk_id": c["chunk_id"], "where": c.get("where"), "source_uri": c["source_uri"],
                       "range": {k: v for k, v in c["range"].items() if v is not None},
                       **({"quote": c["quote"]} if c.get("quote") else {})}
                      for c in payload["citations"]],
        "evidence": summary,
        "errors": payload["errors"],
    }
    return compact
