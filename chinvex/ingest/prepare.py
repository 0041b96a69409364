"""Turn one parsed document into the rows the writer stores: redacted, chunked, with the exact
text each chunk is embedded and full-text indexed as. Pure: no I/O here.

Whatever an adapter yields (a third-party one included) is first made storable by
`sanitize_document`: SQLite, orjson, pydantic's JSON and the tokenizer all refuse lone
surrogates, and orjson refuses integers beyond 64 bits; one such value must cost one character,
never the document.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from chinvex.ids import sha256_hex
from chinvex.jsonio import jsonable
from chinvex.models import Chunk, ConversationDoc, Document, Turn
from chinvex.retrieval.lexical import index_text
from chinvex.files.text import clean_str, replace_surrogates
from chinvex.timeutil import iso_z


@dataclass
class PreparedChunk:
    chunk: Chunk
    embed_text: str
    embed_hash: str
    search_text: str


@dataclass
class PreparedDoc:
    doc_id: str
    source_type: str
    source_uri: str
    origin_uri: str
    title: str | None
    created_at: str | None
    updated_at: str | None
    metadata: dict[str, Any]
    content_hash: str
    chunks: list[PreparedChunk]
    turns: list[Turn] | None = None
    turns_from: int = 0
    """Conversation turns to store start at this index (earlier ones are already stored)."""
    redactions: Counter[str] = field(default_factory=Counter)
    messages_cut: int = 0
    """Messages longer than MAX_MESSAGE_CHARS, cut to it (see `cap_messages`)."""


MAX_MESSAGE_CHARS = 256 * 1024
"""The most of one conversation message that is indexed, like the per-file cap of file sources:
a message over it is almost always a pasted log or data dump, and indexing all of a 400 MB one
would hold the context's lock for hours."""


def cap_messages(doc: ConversationDoc, limit: int = MAX_MESSAGE_CHARS) -> tuple[ConversationDoc, int]:
    """`doc` with every turn's text cut to `limit` characters, a marker saying how much was left
    out at the cut (and `meta.cut_from_chars`), and how many turns were cut."""
    cut = 0
    turns = []
    for turn in doc.turns:
        if len(turn.text) > limit:
            cut += 1
            marker = f"\n[... {len(turn.text) - limit:,} more characters not indexed: the message is over the " \
                     f"{limit // 1024} KB per-message limit]"
            turn = turn.model_copy(update={"text": turn.text[:limit] + marker,
                                           "meta": {**turn.meta, "cut_from_chars": len(turn.text)}})
        turns.append(turn)
    return (doc.model_copy(update={"turns": turns}) if cut else doc), cut


def sanitize_document(doc: Document | ConversationDoc) -> Document | ConversationDoc:
    """`doc` with every stored value made storable (see `chinvex.jsonio.jsonable`): lone
    surrogates become U+FFFD in the text, title, metadata (keys included), links and, per turn,
    in its id, text, tool call, attachments and meta; integers beyond 64 bits become strings.

    Runs before redaction and chunking, so secrets are matched and tokens counted on the text
    that is stored. Returns `doc` itself when nothing needs a change (the common case costs one
    `isascii()` per string); the input is never modified. Identity fields (doc_id, source_uri,
    thread_id) are the pipeline's keys and are left as they are.
    """
    update: dict[str, Any] = {}
    if doc.title is not None:
        _put(update, "title", doc.title, clean_str(doc.title))
    _put(update, "metadata", doc.metadata, jsonable(doc.metadata))
    if isinstance(doc, Document):
        # Offsets into a document's text (chunk ranges, an adapter's `body_start`) must stay
        # valid: one U+FFFD per surrogate code point, the length kept.
        _put(update, "text", doc.text, replace_surrogates(doc.text))
    else:
        turns = [_sanitize_turn(turn) for turn in doc.turns]
        if any(new is not old for new, old in zip(turns, doc.turns)):
            update["turns"] = turns
        _put(update, "links", doc.links, _sanitize_model(doc.links))
    return doc.model_copy(update=update) if update else doc


def _put(update: dict[str, Any], name: str, old: Any, new: Any) -> None:
    if new is not old:
        update[name] = new


def _sanitize_turn(turn: Turn) -> Turn:
    update: dict[str, Any] = {}
    _put(update, "turn_id", turn.turn_id, clean_str(turn.turn_id))
    _put(update, "text", turn.text, clean_str(turn.text))
    if turn.tool is not None:
        _put(update, "tool", turn.tool, _sanitize_model(turn.tool))
    if turn.attachments:
        attachments = [_sanitize_model(a) for a in turn.attachments]
        if any(new is not old for new, old in zip(attachments, turn.attachments)):
            update["attachments"] = attachments
    if turn.meta:
        _put(update, "meta", turn.meta, jsonable(turn.meta))
    return turn.model_copy(update=update) if update else turn


def _sanitize_model(model: BaseModel) -> Any:
    """A small model of plain fields (ToolCall, Attachment, ConversationLinks), extras included."""
    update: dict[str, Any] = {}
    for name in type(model).model_fields:
        value = getattr(model, name)
        _put(update, name, value, jsonable(value))
    extra = model.__pydantic_extra__
    if extra:
        new_extra = jsonable(extra)
        if new_extra is not extra:  # keys may change too: rebuild rather than update
            fields = {name: getattr(model, name) for name in type(model).model_fields}
            return type(model).model_validate({**new_extra, **fields, **update})
    return model.model_copy(update=update) if update else model


def redact_document(doc: Document | ConversationDoc, *, stored_turns: int = 0) -> tuple[Any, Counter[str]]:
    """Replace secrets in everything of `doc` that is stored, embedded or shown, before any of
    it is: the text (each turn's text, tool call, attachments and meta), the title (a Codex
    session's is its first message, cut at 80 characters: what the cut left of a key goes too),
    the metadata and links (a file's relative path, front matter), and the source uri (a
    file's name). Identity fields the adapters derive from content they control (doc_id,
    thread_id, turn ids) are kept. Turns before `stored_turns` came from the index and were
    redacted when first stored. Returns the document and the counts per kind."""
    from chinvex.redaction import Redactor

    r = Redactor(remember=True)
    update: dict[str, Any] = {"source_uri": r.uri(doc.source_uri),
                              "metadata": r.value(doc.metadata)}
    if isinstance(doc, Document):
        update["text"] = r.text(doc.text)
    else:
        update["turns"] = [turn if index < stored_turns else _redact_turn(r, turn)
                           for index, turn in enumerate(doc.turns)]
        update["links"] = _redact_model(r, doc.links)
    update["title"] = r.title(doc.title)  # last: it may end in a cut-off secret seen above
    return doc.model_copy(update=update), r.counts


def _redact_turn(r: Any, turn: Turn) -> Turn:
    update: dict[str, Any] = {"text": r.text(turn.text)}
    if turn.tool is not None:
        tool = turn.tool
        tool_update = {"name": r.text(tool.name), "input": r.value(tool.input),
                       "output": r.value(tool.output)}
        if any(tool_update[k] is not getattr(tool, k) for k in tool_update):
            update["tool"] = tool.model_copy(update=tool_update)
    if turn.attachments:
        update["attachments"] = [_redact_model(r, a) for a in turn.attachments]
    if turn.meta:
        update["meta"] = r.value(turn.meta)
    return turn.model_copy(update=update)


def _redact_model(r: Any, model: BaseModel) -> Any:
    """A small model of plain fields (Attachment, ConversationLinks), extras included."""
    data = model.model_dump()
    cleaned = r.value(data)
    return model if cleaned is data else type(model).model_validate(cleaned)


def _content_hash(doc: Document | ConversationDoc) -> str:
    return sha256_hex(doc.model_dump_json())


def prepare(
    doc: Document | ConversationDoc,
    *,
    origin_uri: str,
    redact: bool,
    stored_turns: list[Turn] | None = None,
    append_from: int | None = None,
    content_hash: str | None = None,
) -> PreparedDoc:
    """`stored_turns` + `append_from`: `doc.turns` holds only turns from `append_from` on; the
    earlier ones come from the index (append-aware re-ingest of a growing session).

    `content_hash`: the document's hash as the caller computed it already (the ingest pipeline's,
    of the parsed document and the versions that made it), stored as it is; without one, the
    hash of the prepared document is computed here."""
    from chinvex.chunking import chunk_document, embed_text, render_conversation

    counts: Counter[str] = Counter()
    turns_from = 0
    messages_cut = 0
    if isinstance(doc, ConversationDoc):  # first: nothing below should walk a huge message
        doc, messages_cut = cap_messages(doc)
    doc = sanitize_document(doc)  # before merging: stored turns were sanitised when stored
    if isinstance(doc, ConversationDoc) and append_from is not None:
        prior = (stored_turns or [])[:append_from]
        doc = doc.model_copy(update={"turns": prior + list(doc.turns)})
        turns_from = append_from
    if redact:
        from chinvex.redaction import redact_uri

        doc, counts = redact_document(doc, stored_turns=turns_from)
        origin_uri = redact_uri(origin_uri)  # the pipeline passes its redacted uri already

    if isinstance(doc, ConversationDoc):
        _, chunks = render_conversation(doc)
        metadata = {
            **doc.metadata,
            "doc_type": "conversation",
            "source": doc.source,
            "thread_id": doc.thread_id,
            "links": doc.links.model_dump(mode="json"),
            "turn_count": len(doc.turns),
        }
        turns = list(doc.turns)
    else:
        chunks = chunk_document(doc)
        metadata = dict(doc.metadata)
        turns = None

    prepared: list[PreparedChunk] = []
    for chunk in chunks:
        chunk_metadata = jsonable(chunk.metadata)
        if chunk_metadata is not chunk.metadata:
            chunk = chunk.model_copy(update={"metadata": chunk_metadata})
        text = embed_text(chunk)
        prepared.append(PreparedChunk(chunk=chunk, embed_text=text, embed_hash=sha256_hex(text),
                                      search_text=index_text(text)))
    return PreparedDoc(
        doc_id=doc.doc_id,
        source_type=doc.source_type,
        source_uri=doc.source_uri,
        origin_uri=origin_uri,
        title=doc.title,
        created_at=iso_z(doc.created_at),
        updated_at=iso_z(doc.updated_at),
        metadata=metadata,
        content_hash=content_hash if content_hash is not None else _content_hash(doc),
        chunks=prepared,
        turns=turns,
        turns_from=turns_from,
        redactions=counts,
        messages_cut=messages_cut,
    )
