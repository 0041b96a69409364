"""`chinvex pack` and MCP `chinvex_pack`: search, then assemble the hits into a budget.

The ranking is the search's (hybrid, source and role weights); the packer only orders ties,
caps chunks per document and fits the budget (`chinvex.pack.assemble`). Tokens are counted with
the built-in embedder's WordPiece tokenizer, the one that sized the chunks, whatever embedder a
context uses: one fixed measure makes a budget mean the same thing in every context.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from chinvex.models import ContextConfig
from chinvex.models.responses import PackedChunkOut, PackResponse, SearchResult
from chinvex.pack.assemble import PackCandidate, assemble

TOKENIZER = "all-MiniLM-L6-v2 WordPiece, the built-in embedder's"
DEFAULT_BUDGET = 2000
MAX_BUDGET = 200_000
SEARCH_DEPTH_MIN, SEARCH_DEPTH_MAX = 20, 200


def search_depth(budget: int) -> int:
    """How many ranked chunks to fetch: about three times what fills the budget at the typical
    chunk size (~130 tokens with its header), so diversity caps still leave enough."""
    return max(SEARCH_DEPTH_MIN, min(SEARCH_DEPTH_MAX, budget * 3 // 130 + 1))


def prefix_of(text: str, tokens: int) -> str:
    """The longest prefix of `text` that holds at most `tokens` tokens (cut at a token end)."""
    from chinvex.embedding.tokenizer import token_offsets

    if tokens <= 0:
        return ""
    spans = token_offsets(text)
    if len(spans) <= tokens:
        return text
    return text[:spans[tokens - 1][1]]


def _candidate(result: SearchResult, where: str) -> PackCandidate:
    offset = result.range.char_start if result.range.char_start is not None else (result.range.line_start or 0)
    return PackCandidate(chunk_id=result.chunk_id, doc_id=f"{result.context}/{result.doc_id}",
                         score=result.scores.rank, path=where, offset=offset, text=result.text,
                         header=f"### {where} [chunk:{result.chunk_id}]")


def build_pack(configs: Sequence[ContextConfig], task: str, *, budget: int = DEFAULT_BUDGET,
               diversity: int | None = None, source_types: list[str] | None = None,
               searcher=None, filter_expression: str | None = None) -> PackResponse:
    from chinvex.answer.evidence import Evidence
    from chinvex.embedding.tokenizer import count_tokens
    from chinvex.retrieval.search import SearchRequest, Searcher

    searcher = searcher or Searcher()
    response = searcher.search(list(configs), SearchRequest(query=task, k=search_depth(budget),
                                                            source_types=source_types,
                                                            filter_expression=filter_expression))
    places = {r.chunk_id: Evidence(position=r.rank, result=r).where() for r in response.results}
    by_id = {r.chunk_id: r for r in response.results}
    packed = assemble([_candidate(r, places[r.chunk_id]) for r in response.results], budget=budget,
                      diversity=diversity, count_tokens=count_tokens, prefix_of=prefix_of)
    chunks = []
    for position, p in enumerate(packed.chunks, start=1):
        r = by_id[p.candidate.chunk_id]
        chunks.append(PackedChunkOut(
            position=position, chunk_id=r.chunk_id, doc_id=r.doc_id, context=r.context,
            source_type=r.source_type, source_uri=r.source_uri, where=places[r.chunk_id], range=r.range,
            sha256=hashlib.sha256(r.text.encode("utf-8", "surrogatepass")).hexdigest(),
            mtime=r.updated_at, stale=r.freshness.stale, score=r.scores.rank, tokens=p.tokens,
            truncated=p.truncated, text=p.text))
    return PackResponse(task=task, contexts=response.contexts, budget_tokens=budget, used_tokens=count_tokens(packed.text),
                        tokenizer=TOKENIZER, diversity=diversity, truncated=packed.truncated,
                        considered=packed.considered, skipped_for_diversity=packed.skipped_for_diversity,
                        left_out_for_budget=packed.left_out_for_budget, chunks=chunks, text=packed.text,
                        warnings=list(response.stats.warnings))
