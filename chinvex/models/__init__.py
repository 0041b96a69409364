"""Pydantic models shared by adapters, the engine and the CLI (DESIGN.md §2).

Every model is declared with `defer_build=True`: its validator is built the first time it is
used, not when this package is imported. A one-shot command such as a cold `chinvex search` uses
a few of these models and no longer pays for building the others on the way to its result
(tests/models/test_models_build.py builds every one, so a broken model still fails a test).
"""

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
