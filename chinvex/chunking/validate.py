"""Check chunks against the chunking contract (for tests, `doctor`-style self-checks, debugging).

The contract: ids and indices as chinvex.ids defines them, `text` equal to its slice of the
source, lines that match the slice, every embed text within the embedder's window, and no
non-whitespace character of the source outside every chunk — except a markdown note's front
matter when it was read as properties (chinvex.chunking.markdown: its summary is in every
chunk's header instead).
"""

from __future__ import annotations

from collections.abc import Sequence

from chinvex.embedding.tokenizer import MAX_CONTENT_TOKENS, count_tokens_batch
from chinvex.ids import chunk_id
from chinvex.models.documents import Chunk

from .base import embed_text


def chunk_problems(
    source: str,
    chunks: Sequence[Chunk],
    *,
    lines: bool = True,
    coverage: bool = True,
    max_tokens: int = MAX_CONTENT_TOKENS,
    markdown: bool = False,
) -> list[str]:
    """Every way `chunks` break the contract for `source` (empty when they keep it). With
    `markdown`, front matter read as properties may be in no chunk."""
    problems: list[str] = []
    for k, c in enumerate(chunks):
        where = f"chunk {k}"
        if c.chunk_index != k:
            problems.append(f"{where}: chunk_index {c.chunk_index}")
        if c.chunk_id != chunk_id(c.doc_id, c.chunk_index, c.text):
            problems.append(f"{where}: chunk_id does not match doc_id/index/text")
        if not (0 <= c.char_start < c.char_end <= len(source)):
            problems.append(f"{where}: range [{c.char_start}, {c.char_end}) outside the source")
            continue
        if source[c.char_start : c.char_end] != c.text:
            problems.append(f"{where}: text differs from source[{c.char_start}:{c.char_end}]")
        if not c.text.strip():
            problems.append(f"{where}: whitespace only")
        if lines:
            want_start = source.count("\n", 0, c.char_start) + 1
            want_end = source.count("\n", 0, c.char_end - 1) + 1
            if (c.line_start, c.line_end) != (want_start, want_end):
                problems.append(
                    f"{where}: lines {c.line_start}-{c.line_end}, expected {want_start}-{want_end}"
                )
    if chunks:
        counts = count_tokens_batch([embed_text(c) for c in chunks])
        for k, n in enumerate(counts):
            if n > max_tokens:
                problems.append(f"chunk {k}: {n} tokens > {max_tokens}")
    if coverage:
        if markdown:
            source = without_properties(source, chunks)
        spans = sorted((c.char_start, c.char_end) for c in chunks)
        pos = 0
        for s, e in [*spans, (len(source), len(source))]:
            if s > pos:
                gap = source[pos:s]
                if gap.strip():
                    off = pos + len(gap) - len(gap.lstrip())
                    problems.append(f"text at char {off} is in no chunk: {source[off:off + 40]!r}")
            pos = max(pos, e)
    return problems


def without_properties(text: str, chunks: Sequence[Chunk]) -> str:
    """`text` with its front matter blanked (same length, newlines kept) when the chunker read it
    as properties and left it out of the chunks: the one text the coverage rule exempts."""
    from .base import LineIndex
    from .markdown import front_matter_block

    idx = LineIndex(text)
    fm = front_matter_block(idx)
    end = idx.end_of(fm.lines - 1) if fm.lines else 0
    if not fm.properties or any(c.char_start < end for c in chunks):
        return text
    return "".join(ch if ch in "\r\n" else " " for ch in text[:end]) + text[end:]
