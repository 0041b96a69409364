"""JSON contracts of `search`, `answer` and `eval` (DESIGN.md §7, §10; seed spec §6)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)


class Range(_Strict):
    char_start: int | None = None
    char_end: int | None = None
    line_start: int | None = None
    line_end: int | None = None


class Scores(_Strict):
    fts: float | None = Field(None, description="Raw BM25 relevance (higher is better); None if not a lexical candidate.")
    vector: float | None = Field(None, description="Raw cosine similarity; None if not a vector candidate.")
    fts_norm: float = 0.0
    vector_norm: float = 0.0
    blended: float = 0.0
    weight: float = 1.0
    role_weight: float = Field(1.0, description="Weight of a repository file's role (code, docs, test, ...); 1.0 otherwise.")
    rank: float = 0.0
    rerank: float | None = Field(
        None, description="The reranking stage's score when it reordered this result (context.json "
        "retrieval.rerank); None otherwise. Results it reordered come first, by this score.")


class Freshness(_Strict):
    indexed_at: str | None = None
    stale: bool = False
    reason: str | None = Field(None, description="modified, deleted or unreadable when stale.")


class SearchResult(_Strict):
    rank: int
    chunk_id: str
    doc_id: str
    context: str
    source_type: str
    source_uri: str
    title: str | None = None
    text: str
    range: Range
    updated_at: str | None = None
    scores: Scores
    metadata: dict[str, Any] = Field(default_factory=dict)
    freshness: Freshness = Field(default_factory=Freshness)
    explain: dict[str, Any] | None = None
    scope: Literal["project", "global"] = Field(
        "project", description="RECALL scope: global for the context named `global`, else project.")


class VectorCoverageStats(_Strict):
    """How many of the searched contexts' chunks the search could score by vector."""

    chunks: int
    with_vector: int
    ratio: float = Field(description="with_vector / chunks, 4 decimals; 1.0 for an empty index.")


class SearchStats(_Strict):
    took_ms: float
    candidates: int
    fts_candidates: int = 0
    vector_candidates: int = 0
    mode: Literal["hybrid", "fts", "vector", "none"] = "hybrid"
    fts_share: float | None = Field(
        None, description="The lexical leg's weight in this query's blend (the vector leg has the rest).")
    vector_coverage: VectorCoverageStats | None = Field(
        None, description="Set when the search asked for vectors (modes hybrid and vector); under "
        "1.0 a warning names each context and its figure.")
    reranker: str | None = Field(
        None, description="The reranker that reordered the top results; None when the stage did not run.")
    warnings: list[str] = Field(default_factory=list)


class SearchResponse(_Strict):
    schema_version: Literal[1] = 1
    query: str
    contexts: list[str]
    k: int
    results: list[SearchResult]
    stats: SearchStats


class Citation(_Strict):
    chunk_id: str
    source_uri: str
    range: Range
    where: str | None = Field(
        None, description="Where a person finds it: `path:start-end` (relative to its source root), or a "
        "conversation's title with its turn range.")
    quote: str | None = Field(
        None, description="The words of the cited chunk the answer rests on (a sentence, with its speaker "
        "for a conversation turn), when the generator can say; null otherwise.")


class EvidenceScores(_Strict):
    fts: float | None = Field(None, description="Raw BM25 relevance (higher is better); None if no query term matched.")
    vector: float | None = Field(None, description="Raw cosine similarity; None if the chunk has no vector.")
    blended: float
    rank: float
    weight: float | None = Field(None, description="Source-type weight applied to the blended score.")
    position: int | None = Field(None, description="1-based position in the evidence pack (search rank).")


class EvidenceChunk(_Strict):
    chunk_id: str
    text: str
    metadata: dict[str, Any]
    scores: EvidenceScores


class EvidencePack(_Strict):
    chunks: list[EvidenceChunk] = Field(default_factory=list)


class Retrieval(_Strict):
    k: int
    filters: dict[str, Any] = Field(default_factory=dict)
    weights_used: dict[str, float] = Field(default_factory=dict)
    generator: str | None = Field(None, description="extractive, anthropic or ollama.")
    model: str | None = Field(None, description="The LLM that wrote the answer (None for extractive).")
    mode: str | None = Field(None, description="hybrid, fts or vector: what retrieval could use.")
    warnings: list[str] = Field(default_factory=list)
    took_ms: float | None = None


class AnswerError(_Strict):
    code: Literal["GROUNDING_FAILED", "CONTEXT_NOT_FOUND", "RETRIEVAL_ERROR", "EMPTY_QUERY", "GENERATOR_ERROR"]
    detail: str


class AnswerResponse(_Strict):
    """Response schema v1 of the seed spec §6."""

    schema_version: Literal[1] = 1
    context: str
    query: str
    grounded: bool
    answer: str
    confidence: float | None = Field(
        None, ge=0.0, le=1.0,
        description="The calibrated gate's probability that the answer is right (2 decimals). For a refusal, "
        "that of the best sentence the sources offered (below the refusal point), 0 when none could answer; "
        "null when no answer was attempted (empty query, retrieval or generator error).")
    citations: list[Citation] = Field(default_factory=list)
    evidence_pack: EvidencePack = Field(default_factory=EvidencePack)
    retrieval: Retrieval
    errors: list[AnswerError] = Field(default_factory=list)


class GoldenExpected(_Strict):
    path: str
    contains: str | None = None


class GoldenQuery(BaseModel):
    model_config = ConfigDict(extra="allow", defer_build=True)

    id: str | None = None
    query: str
    context: str | None = None
    expected: list[GoldenExpected] = Field(default_factory=list)
    answer: str | None = None
    answerable: bool = True
    k: int | None = None


class GoldenFile(BaseModel):
    """`chinvex eval --golden` input (DESIGN.md §10)."""

    model_config = ConfigDict(extra="allow", defer_build=True)

    schema_version: Literal[1] = 1
    name: str | None = None
    k: int | None = None
    queries: list[GoldenQuery]


class PackedChunkOut(_Strict):
    """One chunk of a context pack, with where it comes from."""

    position: int
    chunk_id: str
    doc_id: str
    context: str
    source_type: str
    source_uri: str
    where: str = Field(description="`path:start-end`, or a conversation's title with its turn range.")
    range: Range
    sha256: str = Field(description="SHA-256 of the chunk's full indexed text (before any cut).")
    mtime: str | None = Field(None, description="When the source was last updated (ISO-8601).")
    stale: bool = Field(False, description="The source changed since it was indexed.")
    score: float
    tokens: int = Field(description="Tokens of this chunk's block (header line and text) in `text`.")
    truncated: bool = Field(False, description="Only a prefix of the chunk fit in the budget.")
    text: str


class PackResponse(_Strict):
    """`chinvex pack` / MCP `chinvex_pack`: ranked chunks fitted into a token budget."""

    schema_version: Literal[1] = 1
    task: str
    contexts: list[str]
    budget_tokens: int
    used_tokens: int = Field(description="Tokens of `text`, never more than budget_tokens.")
    tokenizer: str = Field(description="What counted the tokens.")
    diversity: int | None = Field(None, description="At most this many chunks from one document.")
    truncated: bool = Field(description="Something relevant was cut or left out for lack of budget.")
    considered: int
    skipped_for_diversity: int
    left_out_for_budget: int
    chunks: list[PackedChunkOut]
    text: str = Field(description="The pack to paste: each chunk under a header line naming its place.")
    warnings: list[str] = Field(default_factory=list)
