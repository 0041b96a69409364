"""context.json (seed spec §1, schema v1) plus the optional keys chinvex adds (DESIGN.md §3).

Every model allows unknown keys so that a rewrite never drops what a user or a newer chinvex
put into the file.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from chinvex.models.documents import DEFAULT_WEIGHTS

INCLUDE_KEYS: dict[str, str] = {
    "repos": "repo",
    "chat_roots": "chat",
    "codex_session_roots": "codex_session",
    "note_roots": "note",
    "claude_session_roots": "agent_session",
}
"""Include list -> the source type its files are indexed as."""


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow", validate_assignment=True)


class Includes(_Open):
    repos: list[str] = Field(default_factory=list)
    chat_roots: list[str] = Field(default_factory=list)
    codex_session_roots: list[str] = Field(default_factory=list)
    note_roots: list[str] = Field(default_factory=list)
    claude_session_roots: list[str] = Field(default_factory=list)


class IndexConfig(_Open):
    sqlite_path: str
    chroma_dir: str
    chroma_url: str | None = Field(
        default=None, description="http(s)://host:port of a `chroma run` server; None = embedded."
    )


class EmbeddingConfig(_Open):
    provider: Literal["builtin", "ollama"] = "builtin"
    model: str | None = None
    host: str | None = None


class CodexAppServerConfig(_Open):
    enabled: bool = True
    command: list[str] = Field(default_factory=lambda: ["codex", "app-server"])
    include_subagents: bool = False
    include_archived: bool = False
    timeout_s: float = 30.0


class RedactionConfig(_Open):
    enabled: bool = True


class RetrievalConfig(_Open):
    fts_depth: int | None = Field(default=None, ge=1, le=1000)
    vector_depth: int | None = Field(default=None, ge=1, le=1000)


class AnswerConfig(_Open):
    generator: Literal["extractive", "anthropic", "ollama"] = "extractive"
    model: str | None = None
    host: str | None = None


class ContextConfig(_Open):
    schema_version: Literal[1] = 1
    name: str
    aliases: list[str] = Field(default_factory=list)
    includes: Includes = Field(default_factory=Includes)
    excludes: list[str] = Field(default_factory=list, description="Glob patterns never indexed.")
    index: IndexConfig
    weights: dict[str, float] = Field(default_factory=lambda: dict(DEFAULT_WEIGHTS))
    embedding: EmbeddingConfig | None = None
    codex_appserver: CodexAppServerConfig | None = None
    redaction: RedactionConfig | None = None
    retrieval: RetrievalConfig | None = None
    answer: AnswerConfig | None = None
    created_at: str
    updated_at: str

    def weight_for(self, source_type: str) -> float:
        from chinvex.models.documents import UNKNOWN_SOURCE_WEIGHT

        merged = {**DEFAULT_WEIGHTS, **self.weights}
        return merged.get(source_type, UNKNOWN_SOURCE_WEIGHT)

    def effective_weights(self) -> dict[str, float]:
        return {**DEFAULT_WEIGHTS, **self.weights}
