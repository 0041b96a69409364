"""Documents: the list of a context's documents (newest first, by type or path), and one
document as the index holds it: its chunks laid out on their source lines, with line numbers,
the boundary of every chunk marked, and the chunk a link pointed at (a search hit, a citation)
highlighted together with the query's words.

The text shown is the indexed text (redacted where secrets were found), not the file on disk:
that is what search matched and answers cite, and its line numbers are the ones they give. A
conversation opens in the conversation viewer instead.

A document that is a local file (a repository file, a note) also shows the agent sessions whose
edits wrote its lines, beside those lines (`chinvex.web.provenance`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from chinvex.errors import NotFoundError
from chinvex.storage import document_pages
from chinvex.web.highlight import Highlighter
from chinvex.web.pages.common import int_param, reading, selected_config, text_param
from chinvex.web.provenance import sessions_behind
from chinvex.web.render import render, segment, url

PAGE_DOCS = 50
WINDOW_LINES = 3000
"""Lines of one document shown at a time (a generated 100k-line file stays responsive)."""


@dataclass
class ChunkMark:
    chunk_id: str
    index: int
    line_start: int | None
    line_end: int | None


@dataclass
class Line:
    number: int
    text: str
    indexed: bool = True
    """False for a line no chunk holds (blank lines the chunker dropped between chunks)."""
    starts: list[ChunkMark] = field(default_factory=list)
    chunk: str | None = None


def document_lines(chunks: list[Any]) -> list[Line]:
    """The document's lines rebuilt from its chunks (rows with chunk_id, chunk_index, text,
    line_start, line_end), in chunk order. A chunk without line numbers continues after the
    previous one. Where chunks overlap, the first chunk's text of a line is kept."""
    text: dict[int, str] = {}
    owner: dict[int, str] = {}
    starts: dict[int, list[ChunkMark]] = {}
    next_line = 1
    for row in chunks:
        body = row["text"].split("\n")
        first = row["line_start"] if row["line_start"] is not None else next_line
        starts.setdefault(first, []).append(ChunkMark(row["chunk_id"], row["chunk_index"], row["line_start"], row["line_end"]))
        for offset, line in enumerate(body):
            text.setdefault(first + offset, line)
            owner.setdefault(first + offset, row["chunk_id"])
        next_line = max(next_line, first + len(body) + (0 if row["line_start"] is not None else 1))
    last = max(text) if text else 0
    return [Line(n, text.get(n, ""), n in text, starts.get(n, []), owner.get(n)) for n in range(1, last + 1)]


def document_page(request: Request) -> Response:
    """GET /document/{doc_id}?chunk=&q=: the chunk a link points at shaded, its window of lines
    served (see WINDOW_LINES)."""
    config = selected_config(request)
    doc_id = request.path_params["doc_id"]
    focus = text_param(request, "chunk", limit=200)
    query = text_param(request, "q")
    with reading(config) as conn:
        doc = document_pages.document(conn, doc_id) if conn else None
        if doc is None:
            raise NotFoundError(f"No document {doc_id!r} in context {config.name}.")
        meta = orjson.loads(doc["metadata_json"] or "{}")
        if meta.get("doc_type") == "conversation" and meta.get("thread_id"):
            return RedirectResponse(url(f"/conversation/{segment(meta['thread_id'])}", context=config.name, q=query),
                                    status_code=303)
        chunks = document_pages.document_chunks(conn, doc_id)
        lines = document_lines(chunks)
        focus_lines = [line.number for line in lines if line.chunk == focus] if focus else []
        start = int_param(request, "from", max(1, (focus_lines[0] if focus_lines else 1) - 200), low=1,
                          high=max(1, len(lines)))
        # Once per request, on this connection: git blame of the file and a few queries.
        behind = sessions_behind(conn, config, doc, lines, start=start, window=WINDOW_LINES)
    window = lines[start - 1:start - 1 + WINDOW_LINES]
    from chinvex.retrieval.lexical import query_terms

    with Highlighter(query_terms(query) if query else []) as highlight:
        return render(request, "document.html", page="documents", context=config.name, doc=doc, meta=meta,
                      lines=window, total_lines=len(lines), start=start, window=WINDOW_LINES,
                      chunk_count=len(chunks), focus=focus, query=query, highlight=highlight, behind=behind)


def documents_page(request: Request) -> Response:
    """GET /documents?type=&path=&page=: newest first, PAGE_DOCS a page."""
    from chinvex.models.documents import SOURCE_TYPES

    config = selected_config(request)
    source_type = text_param(request, "type", limit=100)
    path = text_param(request, "path", limit=500)
    page = int_param(request, "page", 1, low=1, high=1_000_000)
    pattern: str | None = None
    if path:
        from chinvex.storage.db import like_prefix

        pattern = "%" + like_prefix(path)
    rows: list[Any] = []
    total = 0
    with reading(config) as conn:
        if conn is not None:
            total, rows = document_pages.document_list(conn, source_type=source_type or None, path_pattern=pattern,
                                                       limit=PAGE_DOCS, offset=(page - 1) * PAGE_DOCS)
    pages = max(1, -(-total // PAGE_DOCS))
    return render(request, "documents.html", page="documents", context=config.name, rows=rows, total=total,
                  current_page=page, pages=pages, source_type=source_type, path=path, source_types=SOURCE_TYPES)


def routes() -> list[Route]:
    return [Route("/documents", documents_page), Route("/document/{doc_id}", document_page)]
