"""The RECALL side of the MCP server: knowledge items, feedback, the flight recorder, and the
mapping between RECALL's vocabulary (types, scopes, ids) and chinvex's (source types, contexts,
chunk ids).

Everything stored here (items, their tags, metadata and related files, feedback notes,
flight-recorder entries, logged queries) passes a `Redactor` first: the functions that write
take one (the context's, from `redactor_for`) and redact with the default one when given none,
so a write that forgets it still redacts. `redactor_for(config)` follows
the context's `redaction.enabled` switch, as ingest does.

Knowledge items live in the context they were added to: a row in `knowledge_items` (their
source of truth) and one `memory` document written through the ingest's own writer, so they are
found by full-text and vector search at once and carried by every index operation. Their
source_uri is `memory://<item_id>` and they have no fingerprint, so an ingest never removes them.
"""

from __future__ import annotations

import re
import sqlite3
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import orjson

from chinvex.timeutil import now_iso

if TYPE_CHECKING:
    from chinvex.redaction import Redactor

JUDGE_REMINDER = (
    "Apply the retrieval-judge skill: evaluate each result for relevance before using. "
    "Log a retrieval_judgment entry via flight_recorder_log."
)
"""RECALL §12: a nudge for the consuming agent in every recall_search response."""

MEMORY_SOURCE_TYPE = "memory"
MEMORY_SCHEME = "memory://"

PREFIXES: dict[str, str] = {
    "pattern": "P", "failure": "F", "decision": "D", "context": "C", "code": "X", "doc": "O",
    "runbook": "R",
}
"""Codex's id prefixes (deep-dive §12); every other type gets `I`."""

TYPE_ALIASES: dict[str, str] = {
    "documentation": "doc", "docs": "doc", "adr": "decision", "playbook": "runbook",
    "failures": "failure", "patterns": "pattern", "decisions": "decision",
}
"""RECALL's spec and Codex name some types differently; both spellings mean the same thing."""

ITEM_ID = re.compile(r"^[PFDCXORI]-[0-9a-f]{8}$")

CONVERSATION_SOURCE_TYPES = ("codex_session", "agent_session", "chat")
TYPE_SOURCES: dict[str, tuple[str, ...]] = {
    "code": ("repo", MEMORY_SOURCE_TYPE),
    "doc": ("repo", "note", MEMORY_SOURCE_TYPE),
    "session": CONVERSATION_SOURCE_TYPES,
}
"""Which source types can hold results of a RECALL type (anything else is a memory type)."""

EDI_METADATA = {
    "EDI_SESSION_ID": "edi_session_id",
    "EDI_AGENT_MODE": "edi_agent_mode",
    "EDI_GIT_BRANCH": "edi_git_branch",
    "EDI_GIT_SHA": "edi_git_sha",
    "EDI_PROJECT_PATH": "edi_project_path",
    "EDI_PROJECT_NAME": "edi_project_name",
}
_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH", re.I)

FEEDBACK_KINDS = ("useful", "not_useful", "outdated", "duplicate")


# -- vocabulary ---------------------------------------------------------------------------------

def normalise_type(value: str) -> str:
    t = value.strip().lower().replace("-", "_").replace(" ", "_")
    return TYPE_ALIASES.get(t, t)


def prefix_for(item_type: str) -> str:
    return PREFIXES.get(normalise_type(item_type), "I")


def new_item_id(item_type: str) -> str:
    return f"{prefix_for(item_type)}-{uuid.uuid4().hex[:8]}"


def memory_uri(item_id: str) -> str:
    return f"{MEMORY_SCHEME}{item_id}"


def result_type(source_type: str, metadata: Mapping[str, Any], item: Mapping[str, Any] | None) -> str:
    """The RECALL type of a search result: a knowledge item's own type, else what the chunk is."""
    if item is not None:
        return normalise_type(str(item["type"]))
    if source_type in CONVERSATION_SOURCE_TYPES:
        return "session"
    kind = metadata.get("kind")
    if source_type == "repo":
        return "code" if kind == "code" else "doc"
    if source_type == "note":
        return "code" if kind == "code" else "doc"
    return source_type


def source_types_for(types: Sequence[str]) -> list[str] | None:
    """Source types worth searching for the requested RECALL types (None: all of them).

    A chinvex source type given as a type (`repo`, `note`, ...) is accepted too.
    """
    from chinvex.models.documents import SOURCE_TYPES

    wanted: dict[str, None] = {}
    for t in types:
        t = normalise_type(t)
        if t in TYPE_SOURCES:
            wanted.update(dict.fromkeys(TYPE_SOURCES[t]))
        elif t in SOURCE_TYPES:
            wanted[t] = None
        else:
            wanted[MEMORY_SOURCE_TYPE] = None
    return list(wanted) or None


def type_matches(result_type_: str, source_type: str, types: Sequence[str]) -> bool:
    wanted = {normalise_type(t) for t in types}
    return result_type_ in wanted or source_type in wanted


def edi_metadata(env: Mapping[str, str]) -> dict[str, str]:
    """EDI's session and git context, so every item records where it came from (Codex injects
    the six documented variables; other EDI_* variables are kept too, secrets excepted)."""
    out: dict[str, str] = {}
    for name, value in sorted(env.items()):
        if not name.startswith("EDI_") or not value.strip() or _SECRET_NAME.search(name):
            continue
        key = EDI_METADATA.get(name, name.lower())
        out[key] = value.strip()[:1024]
    return out


# -- knowledge items ----------------------------------------------------------------------------

@dataclass
class KnowledgeItem:
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


def _item(row: sqlite3.Row) -> KnowledgeItem:
    return KnowledgeItem(
        item_id=row["item_id"], doc_id=row["doc_id"], type=row["type"], title=row["title"],
        content=row["content"], scope=row["scope"], tags=orjson.loads(row["tags_json"] or "[]"),
        metadata=orjson.loads(row["metadata_json"] or "{}"), created_at=row["created_at"],
        updated_at=row["updated_at"], indexed_at=row["indexed_at"],
    )


def redactor_for(config: Any) -> Redactor:
    """A `Redactor` that follows the context's `redaction.enabled` switch (on by default)."""
    from chinvex.redaction import Redactor

    return Redactor(config.redaction is None or config.redaction.enabled)


def _default(redactor: Redactor | None) -> Redactor:
    """A writer called without a redactor still redacts (the default is on)."""
    if redactor is not None:
        return redactor
    from chinvex.redaction import Redactor

    return Redactor()


def make_item(item_type: str, title: str, content: str, *, scope: str, tags: list[str],
              metadata: dict[str, Any], redactor: Redactor | None = None) -> KnowledgeItem:
    """A new knowledge item with its title, content, tags and metadata (related files
    included) redacted; `redactor.counts` says what was replaced."""
    from chinvex.ids import doc_id_for

    redactor = _default(redactor)

    item_id = new_item_id(item_type)
    stamp = now_iso()
    return KnowledgeItem(
        item_id=item_id, doc_id=doc_id_for(MEMORY_SOURCE_TYPE, memory_uri(item_id)),
        type=redactor.text(item_type), title=redactor.text(title),
        content=redactor.text(content), scope=scope, tags=redactor.value(tags),
        metadata=redactor.value(metadata), created_at=stamp, updated_at=stamp,
    )


def insert_item(conn: sqlite3.Connection, item: KnowledgeItem) -> None:
    conn.execute(
        """INSERT INTO knowledge_items(item_id, doc_id, type, title, content, scope, tags_json,
               metadata_json, created_at, updated_at, indexed_at)
           VALUES(?,?,?,?,?,?,?,?,?,?,NULL)""",
        (item.item_id, item.doc_id, item.type, item.title, item.content, item.scope,
         orjson.dumps(item.tags).decode(), orjson.dumps(item.metadata, default=str).decode(),
         item.created_at, item.updated_at),
    )


def get_item(conn: sqlite3.Connection, item_id: str) -> KnowledgeItem | None:
    row = conn.execute("SELECT * FROM knowledge_items WHERE item_id=?", (item_id,)).fetchone()
    return None if row is None else _item(row)


def list_items(conn: sqlite3.Connection, *, item_type: str | None = None,
                include_promoted: bool = False) -> list[KnowledgeItem]:
    """The context's knowledge items, newest first (ties by id). A promoted item's row is only a
    pointer to the global copy (`chinvex.memory`): left out unless asked for."""
    where = ["1"]
    params: list[Any] = []
    if item_type is not None:
        where.append("type = ?")
        params.append(item_type)
    if not include_promoted:
        where.append("scope != 'promoted'")
    rows = conn.execute(f"SELECT * FROM knowledge_items WHERE {' AND '.join(where)} "
                        "ORDER BY updated_at DESC, item_id", params).fetchall()
    return [_item(row) for row in rows]


def items_for_docs(conn: sqlite3.Connection, doc_ids: Iterable[str]) -> dict[str, KnowledgeItem]:
    ids = list(dict.fromkeys(doc_ids))
    out: dict[str, KnowledgeItem] = {}
    for start in range(0, len(ids), 500):
        part = ids[start:start + 500]
        marks = ",".join("?" * len(part))
        for row in conn.execute(f"SELECT * FROM knowledge_items WHERE doc_id IN ({marks})", part):
            item = _item(row)
            out[item.doc_id] = item
    return out


def pending_items(conn: sqlite3.Connection, limit: int = 50) -> list[KnowledgeItem]:
    rows = conn.execute(
        "SELECT * FROM knowledge_items WHERE indexed_at IS NULL ORDER BY created_at LIMIT ?", (limit,))
    return [_item(row) for row in rows]


def mark_indexed(conn: sqlite3.Connection, item_ids: Iterable[str]) -> None:
    stamp = now_iso()
    conn.executemany("UPDATE knowledge_items SET indexed_at=? WHERE item_id=?",
                     [(stamp, item_id) for item_id in item_ids])


def to_document(item: KnowledgeItem) -> Any:
    from chinvex.models import Document

    return Document(
        doc_id=item.doc_id, source_type=MEMORY_SOURCE_TYPE, source_uri=item.uri, title=item.title,
        created_at=item.created_at, updated_at=item.updated_at, text=item.document_text(),
        metadata={
            "path": f"memory/{item.item_id}.md", "language": "markdown",
            "knowledge_id": item.item_id, "type": item.type, "scope": item.scope,
            "tags": item.tags, **item.metadata,
        },
    )


class _Precomputed:
    """An embedder that answers from vectors computed before the index was locked, so the
    slow part of an add never holds the context's connection."""

    def __init__(self, vectors: dict[str, Any]):
        self.vectors = vectors

    def embed_documents(self, texts: list[str]) -> Any:
        import numpy as np

        return np.stack([self.vectors[t] for t in texts]).astype(np.float32)


def prepare_items(items: Sequence[KnowledgeItem], embedder: Any, *,
                  redact: bool = True) -> tuple[list[Any], dict[str, Any]]:
    """Chunk the items' documents and embed their chunks (outside any lock). Items were
    redacted when made; `redact` passes them through the ingest's redaction again (a no-op on
    redacted text) so that nothing indexed bypasses it, items stored by an older version
    included."""
    from chinvex.ingest.prepare import prepare

    prepared = [prepare(to_document(item), origin_uri=item.uri, redact=redact) for item in items]
    texts = list(dict.fromkeys(c.embed_text for p in prepared for c in p.chunks))
    vectors = dict(zip(texts, embedder.embed_documents(texts))) if texts else {}
    return prepared, vectors


def write_prepared(conn: sqlite3.Connection, store: Any, prepared: Sequence[Any],
                   vectors: dict[str, Any]) -> int:
    """Write memory documents through the ingest's writer (Chroma first, then one SQLite
    transaction), so they follow the same consistency rules as every other document."""
    from chinvex.storage.writer import IndexWriter

    writer = IndexWriter(conn, lambda: store, lambda: _Precomputed(vectors))
    for doc in prepared:
        writer.add(doc)
    writer.flush()
    return sum(len(p.chunks) for p in prepared)


# -- feedback -----------------------------------------------------------------------------------

def record_feedback(conn: sqlite3.Connection, *, item_id: str, session_id: str, kind: str,
                    context: str | None, duplicate_of: str | None,
                    redactor: Redactor | None = None) -> str:
    """Store one feedback row; its free-text `context` note is redacted."""
    feedback_id = uuid.uuid4().hex
    context = _default(redactor).optional(context)
    stamp = now_iso()
    useful = {"useful": 1, "not_useful": 0}.get(kind)
    column = f"{kind}_count"
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute(
            """INSERT INTO feedback(feedback_id, item_id, session_id, feedback, useful, context,
                   duplicate_of, created_at) VALUES(?,?,?,?,?,?,?,?)""",
            (feedback_id, item_id, session_id, kind, useful, context, duplicate_of, stamp),
        )
        conn.execute("INSERT INTO item_stats(item_id) VALUES(?) ON CONFLICT(item_id) DO NOTHING", (item_id,))
        conn.execute(
            f"UPDATE item_stats SET {column} = {column} + 1, last_feedback_at=?, "
            "flagged_duplicate_of=COALESCE(?, flagged_duplicate_of) WHERE item_id=?",
            (stamp, duplicate_of if kind == "duplicate" else None, item_id),
        )
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    return feedback_id


def count_retrievals(conn: sqlite3.Connection, item_ids: Sequence[str]) -> None:
    if not item_ids:
        return
    stamp = now_iso()
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.executemany(
            """INSERT INTO item_stats(item_id, retrieval_count, last_retrieved_at) VALUES(?, 1, ?)
               ON CONFLICT(item_id) DO UPDATE SET retrieval_count = retrieval_count + 1,
                   last_retrieved_at = excluded.last_retrieved_at""",
            [(item_id, stamp) for item_id in dict.fromkeys(item_ids)],
        )
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def item_stats(conn: sqlite3.Connection, item_id: str) -> dict[str, Any]:
    row = conn.execute("SELECT * FROM item_stats WHERE item_id=?", (item_id,)).fetchone()
    counts = {key: (row[key] if row else 0) for key in (
        "retrieval_count", "useful_count", "not_useful_count", "outdated_count", "duplicate_count")}
    judged = counts["useful_count"] + counts["not_useful_count"] + counts["outdated_count"] + counts["duplicate_count"]
    # RECALL defines the rate as useful / retrievals; feedback without a counted retrieval (an
    # id from recall_get, or judged twice) must not push it above 1.
    denominator = max(counts["retrieval_count"], judged)
    return {
        **counts,
        "usefulness_rate": round(counts["useful_count"] / denominator, 4) if denominator else None,
        "flagged_outdated": counts["outdated_count"] > 0,
        "flagged_duplicate_of": row["flagged_duplicate_of"] if row else None,
    }


# -- flight recorder ----------------------------------------------------------------------------

def log_event(conn: sqlite3.Connection, *, session_id: str, event_type: str, content: str,
              redactor: Redactor | None = None, rationale: str | None = None,
              metadata: Mapping[str, Any] | None = None) -> dict[str, str]:
    """Append one flight-recorder entry (an agent's log, or a query recall_search answered),
    every text of it redacted: type, content, rationale and metadata (related files, the
    query, EDI's variables)."""
    redactor = _default(redactor)
    entry_id = uuid.uuid4().hex
    stamp = now_iso()
    # `default=str` turns what JSON cannot hold into text first, so that text is redacted too.
    meta = redactor.value(orjson.loads(orjson.dumps(dict(metadata or {}), default=str)))
    conn.execute(
        """INSERT INTO flight_recorder(entry_id, session_id, type, content, rationale,
               metadata_json, created_at) VALUES(?,?,?,?,?,?,?)""",
        (entry_id, redactor.text(session_id), redactor.text(event_type), redactor.text(content),
         redactor.optional(rationale), orjson.dumps(meta).decode(), stamp),
    )
    return {"event_id": entry_id, "timestamp": stamp}
