"""Pydantic models shared by adapters, the engine and the CLI (DESIGN.md §2)."""

from chinvex.models.context import (
    INCLUDE_KEYS,
    AnswerConfig,
    CodexAppServerConfig,
    ContextConfig,
    EmbeddingConfig,
    Includes,
    IndexConfig,
    RedactionConfig,
    RetrievalConfig,
)
from chinvex.models.documents import (
    DEFAULT_WEIGHTS,
    SOURCE_TYPES,
    UNKNOWN_SOURCE_WEIGHT,
    Attachment,
    Chunk,
    ConversationDoc,
    ConversationLinks,
    Document,
    ToolCall,
    Turn,
)
from chinvex.models.responses import (
    AnswerError,
    AnswerResponse,
    Citation,
    EvidenceChunk,
    EvidencePack,
    EvidenceScores,
    Freshness,
    GoldenExpected,
    GoldenFile,
    GoldenQuery,
    Range,
    Retrieval,
    Scores,
    SearchResponse,
    SearchResult,
    SearchStats,
)

__all__ = [name for name in dir() if not name.startswith("_")]
