"""Memories as values: the `Memory` row of `knowledge_items` (their source of truth), making
one (redacted), storing and reading them, and the document that indexes one.

A memory lives in the context it was added to: its row plus one `memory` document written
through the ingest's own writer, so it is found by full-text and vector search at once and
carried by every index operation. Its source_uri is `memory://<item_id>` and it has no
fingerprint, so an ingest never removes it. Every text of it passes a `Redactor` first: a
writer called without one redacts with the default one.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import orjson

from chinvex.memory.vocabulary import MEMORY_SOURCE_TYPE, memory_uri, new_memory_id
from chinvex.storage import memories as rows
from chinvex.timeutil import now_iso

if TYPE_CHECKING:
    from chinvex.redaction import Redactor

EDI_METADATA = {
    "EDI_SESSION_ID": "edi_session_id",
    "EDI_AGENT_MODE": "edi_agent_mode",
    "EDI_GIT_BRANCH": "edi_git_branch",
    "EDI_GIT_SHA": "edi_git_sha",
    "EDI_PROJECT_PATH": "edi_project_path",
    "EDI_PROJECT_NAME": "edi_project_name",
}
_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH", re.I)


def edi_metadata(env: Mapping[str, str]) -> dict[str, str]:
    """EDI's session and git context, so every memory records where it came from (Codex injects
    the six documented variables; other EDI_* variables are kept too, secrets excepted)."""
    out: dict[str, str] = {}
    for name, value in sorted(env.items()):
        if not name.startswith("EDI_") or not value.strip() or _SECRET_NAME.search(name):
            continue
        key = EDI_METADATA.get(name, name.lower())
        out[key] = value.strip()[:1024]
    return out


@dataclass
class Memory:
    """One stored memory (a row of `knowledge_items`)."""

    item_id: str
    doc_id: str
    type: str
    title: str
    content: str
    scope: str
    tags: list[str] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    created_at: str = ""
    updated_at: str = ""
    indexed_at: str | None = None

    @property
    def uri(self) -> str:
        return memory_uri(self.item_id)

    def document_text(self) -> str:
        """What is chunked and indexed: the title as a heading, so titles are searchable too."""
        return f"# {self.title}\n\n{self.content}"

    def as_result(self) -> dict[str, Any]:
        return {
            "id": self.item_id,
            "type": self.type,
            "title": self.title,
            "content": self.content,
            "tags": self.tags,
            "scope": self.scope,
            "metadata": {
                **self.metadata,
                "source": self.uri,
                "source_type": MEMORY_SOURCE_TYPE,
                "doc_id": self.doc_id,
                "created_at": self.created_at,
                "updated_at": self.updated_at,
                "indexed": self.indexed_at is not None,
            },
        }


def _memory(row: sqlite3.Row) -> Memory:
    return Memory(
        item_id=row["item_id"], doc_id=row["doc_id"], type=row["type"], title=row["title"],
        content=row["content"], scope=row["scope"], tags=orjson.loads(row["tags_json"] or "[]"),
        metadata=orjson.loads(row["metadata_json"] or "{}"), created_at=row["created_at"],
        updated_at=row["updated_at"], indexed_at=row["indexed_at"],
    )


def redactor_for(config: Any) -> Redactor:
    """A `Redactor` that follows the context's `redaction.enabled` switch (on by default)."""
    from chinvex.redaction import Redactor

    return Redactor(config.redaction is None or config.redaction.enabled)


def default_redactor(redactor: Redactor | None) -> Redactor:
    """A writer called without a redactor still redacts (the default is on)."""
    if redactor is not None:
        return redactor
    from chinvex.redaction import Redactor

    return Redactor()


def make_memory(memory_type: str, title: str, content: str, *, scope: str, tags: list[str],
                metadata: dict[str, Any], redactor: Redactor | None = None) -> Memory:
    """A new memory with its title, content, tags and metadata (related files included)
    redacted; `redactor.counts` says what was replaced."""
    from chinvex.ids import doc_id_for

    redactor = default_redactor(redactor)
    item_id = new_memory_id(memory_type)
    stamp = now_iso()
    return Memory(
        item_id=item_id, doc_id=doc_id_for(MEMORY_SOURCE_TYPE, memory_uri(item_id)),
        type=redactor.text(memory_type), title=redactor.text(title),
        content=redactor.text(content), scope=scope, tags=redactor.value(tags),
        metadata=redactor.value(metadata), created_at=stamp, updated_at=stamp,
    )


def insert_memory(conn: sqlite3.Connection, memory: Memory) -> None:
    rows.insert_memory_row(conn, {
        "item_id": memory.item_id, "doc_id": memory.doc_id, "type": memory.type, "title": memory.title,
        "content": memory.content, "scope": memory.scope, "tags_json": orjson.dumps(memory.tags).decode(),
        "metadata_json": orjson.dumps(memory.metadata, default=str).decode(),
        "created_at": memory.created_at, "updated_at": memory.updated_at,
    })


def get_memory(conn: sqlite3.Connection, item_id: str) -> Memory | None:
    row = rows.memory_row(conn, item_id)
    return None if row is None else _memory(row)


def list_memories(conn: sqlite3.Connection, *, memory_type: str | None = None,
                  include_promoted: bool = False) -> list[Memory]:
    """The context's memories, newest first (ties by id). A promoted memory's row is only a
    pointer to the global copy (`chinvex.memory.scope`): left out unless asked for."""
    return [_memory(row) for row in rows.memory_rows(conn, item_type=memory_type,
                                                     include_promoted=include_promoted)]


def memories_for_docs(conn: sqlite3.Connection, doc_ids: Iterable[str]) -> dict[str, Memory]:
    """The memories indexed as these documents, by doc id."""
    return {memory.doc_id: memory for memory in map(_memory, rows.memory_rows_for_docs(conn, doc_ids))}


def pending_memories(conn: sqlite3.Connection, limit: int = 50) -> list[Memory]:
    """Memories stored but not indexed yet, oldest first."""
    return [_memory(row) for row in rows.pending_memory_rows(conn, limit)]


def mark_indexed(conn: sqlite3.Connection, item_ids: Iterable[str]) -> None:
    rows.mark_memories_indexed(conn, list(item_ids), now_iso())


def to_document(memory: Memory) -> Any:
    """The `memory` document that indexes a memory."""
    from chinvex.models import Document

    return Document(
        doc_id=memory.doc_id, source_type=MEMORY_SOURCE_TYPE, source_uri=memory.uri, title=memory.title,
        created_at=memory.created_at, updated_at=memory.updated_at, text=memory.document_text(),
        metadata={
            "path": f"memory/{memory.item_id}.md", "language": "markdown",
            "knowledge_id": memory.item_id, "type": memory.type, "scope": memory.scope,
            "tags": memory.tags, **memory.metadata,
        },
    )

