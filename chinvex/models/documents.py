"""What adapters produce and chunkers consume (DESIGN.md §2).

Adapters depend on these models only; they never touch storage or retrieval.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from chinvex.timeutil import Timestamp

SOURCE_TYPES = ("repo", "codex_session", "chat", "note", "agent_session", "memory")
"""Source types chinvex knows; others are accepted and weigh `UNKNOWN_SOURCE_WEIGHT`."""

DEFAULT_WEIGHTS: dict[str, float] = {
    "repo": 1.0,
    "codex_session": 0.9,
    "agent_session": 0.9,
    "memory": 0.9,
    "chat": 0.8,
    "note": 0.7,
}
UNKNOWN_SOURCE_WEIGHT = 0.5

ROLES = ("code", "docs", "config", "bench", "test", "fixture")

ROLE_WEIGHTS: dict[str, float] = {
    "code": 1.0,
    "docs": 1.0,
    "config": 0.8,
    "bench": 0.5,
    "test": 0.7,
    "fixture": 0.35,
}
"""Default retrieval weight of each role (a repository chunk's rank is blended x source weight x
role weight). Measured with bench/tune_fusion.py on the visible sets (ARCHITECTURE "Retrieval"):
implementation and prose docs state what a repository does; tests are right for about one
expected file in six of the SWE-QA questions, so they stay close; benchmark tables and sample
data (golden question sets, fixtures, corpora) almost never are, so a user's note (source
weight 0.7) outranks a fixture copy of the same text (1.0 x 0.35)."""

ConversationSource = Literal[
    "cx_appserver", "cx_sessions_jsonl", "chatgpt_export", "chat_markdown", "claude_code",
    "claude_ai", "gemini", "qwen", "copilot_cli", "copilot_chat", "cline", "roo", "kilo",
    "cursor", "opencode", "aider", "specstory", "amp", "goose", "pi", "droid", "kimi", "openclaw",
]
"""Who recorded a conversation: the reader of Codex threads, a chat export, or the agent."""

AGENT_OF_SOURCE = {"cx_appserver": "codex", "cx_sessions_jsonl": "codex", "chatgpt_export": "chatgpt",
                   "chat_markdown": "chat_markdown"}
"""A conversation's agent (`doc.agent` in filters) where it differs from its `source`."""


def agent_of(source: str) -> str:
    return AGENT_OF_SOURCE.get(source, source)
Role = Literal["user", "assistant", "tool", "system"]


class Document(BaseModel):
    """One file-like source: a code file, a note, a markdown chat that is not a conversation."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    doc_id: str
    source_type: str
    source_uri: str = Field(description="Absolute path of the source file.")
    title: str | None = None
    created_at: Timestamp | None = None
    updated_at: Timestamp | None = None
    text: str = Field(description="Full text; chunk char ranges index into it.")
    metadata: dict[str, Any] = Field(
        default_factory=dict,
        description="language, path (relative to the source root), git sha, front matter, ...",
    )


class ToolCall(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)

    name: str
    input: Any = None
    output: Any = None


class Attachment(BaseModel):
    """A reference to a file or image; never its bytes (no base64 reaches the index)."""

    model_config = ConfigDict(extra="allow", defer_build=True)

    kind: str = Field(description="image, file, audio, ...")
    name: str | None = None
    path: str | None = None
    uri: str | None = None
    mime_type: str | None = None
    size_bytes: int | None = None


class Turn(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)

    turn_id: str
    ts: Timestamp | None = None
    role: Role
    text: str = ""
    tool: ToolCall | None = None
    attachments: list[Attachment] = Field(default_factory=list)
    meta: dict[str, Any] = Field(default_factory=dict)


class ConversationLinks(BaseModel):
    model_config = ConfigDict(extra="allow", defer_build=True)

    workspace_id: str | None = None
    repo_paths: list[str] = Field(default_factory=list)


class ConversationDoc(BaseModel):
    """One thread (seed spec §2), whatever tool recorded it."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    doc_type: Literal["conversation"] = "conversation"
    source: ConversationSource
    source_type: str = Field(description="codex_session, chat or agent_session")
    source_uri: str = Field(
        description="File path; `<path>#<thread_id>` for multi-thread files; "
        "`codex://thread/<id>` for app-server threads without a rollout file under the include root."
    )
    doc_id: str
    thread_id: str
    title: str | None = None
    created_at: Timestamp | None = None
    updated_at: Timestamp | None = None
    turns: list[Turn] = Field(default_factory=list)
    links: ConversationLinks = Field(default_factory=ConversationLinks)
    metadata: dict[str, Any] = Field(default_factory=dict)


class Chunk(BaseModel):
    """A retrievable piece of a document.

    `text` is exactly `document_text[char_start:char_end]`; context that helps a chunk stand
    alone (file and symbol, heading path) lives in `metadata["header"]` and is added to what is
    embedded and indexed for full-text search, not to `text`.
    """

    model_config = ConfigDict(extra="forbid", defer_build=True)

    chunk_id: str
    doc_id: str
    chunk_index: int
    text: str
    char_start: int
    char_end: int
    line_start: int | None = None
    line_end: int | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
