"""One line of a `chinvex export` file (chinvex.context.portable): the records, as a discriminated union
on `kind`. `schemas/export_record.schema.json` is generated from these models; `chinvex import`
checks every line against them before it writes anything."""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field


ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_:-]{0,127}$"
"""What chinvex writes as an id (hex digests, `P-1a2b3c4d` memory ids): an import refuses
anything else, such as `../../x`, before it writes a row."""


def _id(description: str = "", *, empty: bool = False) -> Any:
    pattern = ID_PATTERN.replace("^", "^(|", 1).replace("$", ")$") if empty else ID_PATTERN
    return Field(pattern=pattern, description=description or None)


class _Record(BaseModel):
    model_config = ConfigDict(extra="allow", defer_build=True)
    v: Literal[1] = Field(description="Record format version.")


class HeaderRecord(_Record):
    kind: Literal["header"]
    context: str
    config: dict[str, Any] | None = None
    embedder: str | None = Field(description="The embedder the vectors were made with.")
    include_vectors: bool
    chinvex: str | None = None
    exported_at: str | None = None


class SourceRecord(_Record):
    kind: Literal["source"]
    source_uri: str
    source_type: str
    doc_id: str = _id("The source's document, or empty when it holds several.", empty=True)
    parser_version: str
    chunker_version: str
    last_status: str


class DocumentRecord(_Record):
    kind: Literal["document"]
    doc_id: str = _id()
    source_type: str
    source_uri: str
    origin_uri: str
    content_hash: str | None
    title: str | None = None
    created_at: str | None = None
    updated_at: str | None = None
    metadata: dict[str, Any]
    origins: list[dict[str, Any]] = Field(default_factory=list)
    turns: list[dict[str, Any]] = Field(default_factory=list)


class ChunkRecord(_Record):
    kind: Literal["chunk"]
    chunk_id: str = _id()
    doc_id: str = _id()
    chunk_index: int
    text: str
    search_text: str
    embed_hash: str
    char_start: int | None = None
    char_end: int | None = None
    line_start: int | None = None
    line_end: int | None = None
    metadata: dict[str, Any]
    vector: list[float] | None = None


class MemoryRecord(_Record):
    """A RECALL knowledge item: a row of `knowledge_items` (its tags and metadata as the JSON
    text stored there, in `tags_json` and `metadata_json`, plus its timestamps)."""

    kind: Literal["memory"]
    item_id: str = _id("The item's id (RECALL `recall_add`).")
    doc_id: str = _id("The document the item is indexed as (one chunk per item).")
    type: str = Field(description="The RECALL item type: code, documentation, session, adr, playbook, pattern, failure, lesson, note, ...")
    title: str
    content: str
    scope: str = Field(description="project or global.")


class FeedbackRecord(_Record):
    kind: Literal["feedback"]
    feedback_id: str = _id()
    item_id: str = _id()
    session_id: str
    feedback: str
    created_at: str


class EndRecord(_Record):
    kind: Literal["end"]
    counts: dict[str, int]


ExportRecord = Annotated[Union[HeaderRecord, SourceRecord, DocumentRecord, ChunkRecord, MemoryRecord,
                               FeedbackRecord, EndRecord], Field(discriminator="kind")]


class ExportLine(BaseModel):
    """Wrapper giving the union a schema of its own."""

    record: ExportRecord
