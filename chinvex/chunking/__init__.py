"""chinvex.chunking: documents and conversations into chunks that fit the embedder's window.

Pure functions, no I/O. Guarantees for every chunk of every chunker:

- `chunk.text == source[chunk.char_start:chunk.char_end]` (the document text, or for a
  conversation the transcript `render_conversation` returns), and `chunk_id` is
  `chinvex.ids.chunk_id(doc_id, chunk_index, text)` with chunk_index 0..n-1 in order;
- `count_tokens(embed_text(chunk)) <= MAX_CONTENT_TOKENS`;
- every non-whitespace character of a document lies in at least one chunk, except markdown
  front matter read as properties (it is summarised in every chunk's header instead);
- line_start/line_end are the 1-based lines of the first and last character (None for
  conversations).

Kinds: code in a tree-sitter language (python, javascript, typescript, tsx, go, rust) by syntax,
falling back to paragraphs and line windows when it does not parse; markdown by sections;
other code and config files by paragraphs; everything else as plain text windows.
"""

from __future__ import annotations

from chinvex.models.documents import Chunk, Document

from .base import LineIndex, build_header, embed_text, finalize, stable_text
from .code import code_drafts
from .conversation import render_conversation
from .fallback import fallback_drafts
from .languages import language_for
from .markdown import markdown_drafts
from .text import text_drafts

__all__ = [
    "CHUNKER_VERSION",
    "chunk_document",
    "detect_kind",
    "embed_text",
    "render_conversation",
    "stable_text",
]

CHUNKER_VERSION = "chunkers-v3"  # v3: markdown front matter is header properties, not a chunk
"""Changes whenever any chunker's output (text, ranges, ids, metadata, embed_text) changes."""

MARKDOWN_EXTENSIONS = frozenset({".md", ".markdown", ".mdx", ".mdown", ".mkd"})
MARKDOWN_LANGUAGES = frozenset({"markdown", "md", "mdx"})
TEXT_LANGUAGES = frozenset(
    {"text", "plaintext", "plain", "txt", "restructuredtext", "rst", "asciidoc", "org", "latex", "tex"}
)
"""Prose formats: windows at paragraph/sentence boundaries rather than code paragraphs."""

# Code and configuration without a grammar here: chunked like unparseable code.
OTHER_CODE_EXTENSIONS = frozenset(
    {
        ".c", ".h", ".cc", ".cpp", ".cxx", ".hpp", ".hh", ".m", ".mm", ".java", ".kt", ".kts",
        ".scala", ".groovy", ".gradle", ".swift", ".cs", ".fs", ".vb", ".rb", ".php", ".pl",
        ".pm", ".lua", ".r", ".jl", ".dart", ".ex", ".exs", ".erl", ".hrl", ".clj", ".cljs",
        ".hs", ".ml", ".mli", ".elm", ".zig", ".nim", ".v", ".sv", ".vhd", ".sol", ".sh",
        ".bash", ".zsh", ".fish", ".ps1", ".psm1", ".bat", ".cmd", ".sql", ".proto",
        ".graphql", ".gql", ".tf", ".hcl", ".nix", ".cmake", ".mk", ".make", ".dockerfile",
        ".vue", ".svelte", ".astro", ".html", ".htm", ".xml", ".xsl", ".svg", ".css", ".scss",
        ".sass", ".less", ".json", ".jsonc", ".json5", ".jsonl", ".ndjson", ".yaml", ".yml",
        ".toml", ".ini", ".cfg", ".conf", ".env", ".properties", ".lock", ".ipynb",
    }
)
OTHER_CODE_NAMES = frozenset({"makefile", "dockerfile", "justfile", "rakefile", "gemfile"})


def _doc_path(doc: Document) -> str:
    path = doc.metadata.get("path")
    return str(path) if path else doc.source_uri


def _extension(path: str) -> str:
    name = path.replace("\\", "/").rsplit("/", 1)[-1].lower()
    dot = name.rfind(".")
    return name[dot:] if dot > 0 else ""


def detect_kind(doc: Document) -> tuple[str, str | None]:
    """(kind, tree-sitter language): kind is "code", "markdown" or "text"."""
    path = _doc_path(doc)
    declared = doc.metadata.get("language")
    declared = str(declared).strip().lower() if declared else None
    lang = language_for(declared, path)
    if lang is not None:
        return "code", lang
    ext = _extension(path)
    if declared in MARKDOWN_LANGUAGES or ext in MARKDOWN_EXTENSIONS:
        return "markdown", None
    if declared in TEXT_LANGUAGES or ext in (".txt", ".rst", ".adoc", ".org", ".tex"):
        return "text", None
    if declared or ext in OTHER_CODE_EXTENSIONS:
        return "code", None
    name = path.replace("\\", "/").rsplit("/", 1)[-1].lower()
    if name in OTHER_CODE_NAMES:
        return "code", None
    if doc.source_type == "note" and not ext:
        return "markdown", None
    return "text", None


def chunk_document(doc: Document) -> list[Chunk]:
    """Chunks of a file-like document (see the module docstring for the guarantees)."""
    path = _doc_path(doc)
    kind, lang = detect_kind(doc)
    idx = LineIndex(doc.text)
    if idx.first_nonblank(0, idx.n) is None:
        return []
    if kind == "code":
        declared = doc.metadata.get("language")
        language = lang or (str(declared).lower() if declared else None) or _extension(path)[1:] or None
        drafts = None
        reason = "no_grammar"
        if lang is not None:
            try:
                drafts = code_drafts(idx, lang, path)
                reason = "syntax_error"
            except (RecursionError, ValueError, RuntimeError, MemoryError):
                # a parser or tree walk that gives up is a parse failure like any other
                reason = "parser_error"
        meta = {"kind": "code", "language": language, "chunker": "tree-sitter"}
        if drafts is None:
            meta.update({"chunker": "fallback", "fallback_reason": reason})
            drafts = fallback_drafts(idx, build_header(path), {})
        for d in drafts:
            d.meta.update(meta)
            d.meta.setdefault("symbols", [])
    elif kind == "markdown":
        drafts = markdown_drafts(idx, path)
        for d in drafts:
            d.meta["kind"] = "markdown"
    else:
        drafts = text_drafts(idx, build_header(path), {})
        for d in drafts:
            d.meta["kind"] = "text"
    return finalize(doc.doc_id, idx, drafts)
