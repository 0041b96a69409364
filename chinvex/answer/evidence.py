"""The evidence pack: the top-k search results as an answer sees them and returns them.

Generators read `Evidence` (text plus everything needed to judge and cite it); the response
carries `EvidenceChunk`s in the seed spec's shape (§6): text, flat metadata (doc, source, ranges,
timestamps, conversation turn info, freshness) and the retrieval scores, raw and blended, so a
reader can see why each chunk was picked and whether its source has changed since indexing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from chinvex.models import Citation, EvidenceChunk, EvidencePack, EvidenceScores, Range, SearchResult

# Chunk metadata worth passing on (the rest is chunker bookkeeping).
_CHUNK_KEYS = (
    "header", "heading_path", "symbols", "language", "kind", "path",
    "thread_id", "source", "turn_start", "turn_end", "turn_ids", "roles", "ts_start", "ts_end",
    "part", "parts",
)


@dataclass
class Evidence:
    """One retrieved chunk, in evidence-pack order (`position` 1 = best)."""

    position: int
    result: SearchResult
    created_at: str | None = None

    @property
    def chunk_id(self) -> str:
        return self.result.chunk_id

    @property
    def text(self) -> str:
        return self.result.text

    @property
    def source_type(self) -> str:
        return self.result.source_type

    @property
    def source_uri(self) -> str:
        return self.result.source_uri

    @property
    def metadata(self) -> dict[str, Any]:
        return self.result.metadata or {}

    @property
    def is_code(self) -> bool:
        return self.result.range.line_start is not None and str(self.metadata.get("kind", "")) == "code"

    def relative_path(self) -> str | None:
        return self.metadata.get("path") or path_in_repository(self.result)

    def where(self) -> str:
        """How a citation names its place: `path:12-30` for files, `“Title” turns 3-4` for a
        conversation (its source is a session file or an export holding many threads)."""
        meta = self.metadata
        if meta.get("turn_start") is not None and (self.result.title or meta.get("thread_id")):
            turns = (f"turn {meta['turn_start']}" if meta.get("turn_end") in (None, meta["turn_start"])
                     else f"turns {meta['turn_start']}-{meta['turn_end']}")
            return f"“{self.result.title or meta.get('thread_id')}” {turns}"
        return self.display_path()

    def short_path(self) -> str:
        """The file, short: its path in its repository, else its last two path parts."""
        return self.relative_path() or _short_source(self.source_uri)

    def display_path(self) -> str:
        """Where the chunk comes from, short: `chinvex/retrieval/fusion.py:29-48`."""
        path = self.short_path()
        r = self.result.range
        if r.line_start is not None:
            return f"{path}:{r.line_start}-{r.line_end}"
        return str(path)


def path_in_repository(result: SearchResult) -> str | None:
    """A chunk's path relative to its repository: its header's, else its document's title (a
    repository file's title is that path), when its source ends with it. A long path is cut in
    the header ("…/tasks/17469/ui_messages.json") and then says neither where the file lies nor
    its role: a fixture deep under tests/ was weighed as implementation."""
    return (relative_path(str((result.metadata or {}).get("header") or ""), result.source_uri)
            or relative_path(str(result.title or ""), result.source_uri))


def relative_path(header: str, source_uri: str) -> str | None:
    """The relative path chunk headers start with ("chinvex/x.py · def f", "notes/a.md › H"),
    when the source ends with it."""
    first = re.split(r" [·›] ", header, maxsplit=1)[0].strip().replace("\\", "/")
    plain = source_uri.split("#", 1)[0].replace("\\", "/")
    if first and not first.startswith("/") and plain.endswith("/" + first):
        return first
    return None


def _short_source(source_uri: str) -> str:
    parts = source_uri.split("#", 1)[0].replace("\\", "/").rstrip("/").split("/")
    return "/".join(parts[-2:]) if len(parts) >= 2 else source_uri


def build_evidence(results: list[SearchResult], created: dict[str, str | None] | None = None) -> list[Evidence]:
    created = created or {}
    return [Evidence(position=i, result=r, created_at=created.get(r.doc_id)) for i, r in enumerate(results, start=1)]


def citation_range(result: SearchResult) -> Range:
    """Line range for code (and any chunk that has lines), character range otherwise (seed spec §6)."""
    r = result.range
    if r.line_start is not None and r.line_end is not None:
        return Range(line_start=r.line_start, line_end=r.line_end)
    return Range(char_start=r.char_start, char_end=r.char_end)


def citation_for(item: Evidence, quote: str | None = None) -> Citation:
    return Citation(chunk_id=item.chunk_id, source_uri=item.source_uri, range=citation_range(item.result),
                    where=item.where(), quote=quote or None)


def evidence_chunk(item: Evidence) -> EvidenceChunk:
    r = item.result
    metadata: dict[str, Any] = {
        "doc_id": r.doc_id,
        "context": r.context,
        "source_type": r.source_type,
        "source_uri": r.source_uri,
        "title": r.title,
        "char_start": r.range.char_start,
        "char_end": r.range.char_end,
        "line_start": r.range.line_start,
        "line_end": r.range.line_end,
        "timestamps": {
            "created_at": item.created_at,
            "updated_at": r.updated_at,
            "indexed_at": r.freshness.indexed_at,
        },
        "freshness": {"stale": r.freshness.stale, "reason": r.freshness.reason},
    }
    path = item.relative_path()
    if path:
        metadata["path"] = path
    for key in _CHUNK_KEYS:
        if key in item.metadata and key not in metadata:
            metadata[key] = item.metadata[key]
    scores = EvidenceScores(
        fts=r.scores.fts, vector=r.scores.vector, blended=r.scores.blended, rank=r.scores.rank,
        weight=r.scores.weight, position=item.position,
    )
    return EvidenceChunk(chunk_id=r.chunk_id, text=r.text, metadata=metadata, scores=scores)


def evidence_pack(items: list[Evidence]) -> EvidencePack:
    return EvidencePack(chunks=[evidence_chunk(item) for item in items])
