"""Markdown chunking: sections and heading paths, fences, lists, front matter as header
properties, real files."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chinvex.chunking import chunk_document, embed_text
from chinvex.chunking.base import HEADER_MAX_TOKENS, MAX_TOKENS
from chinvex.chunking.markdown import PROPERTIES_TOKENS, properties_summary
from chinvex.chunking.validate import chunk_problems
from chinvex.embedding.tokenizer import count_tokens_batch
from chinvex.models.documents import Document
from helpers import REPO_ROOT



def doc_for(text: str, path: str = "notes/guide.md", source_type: str = "note") -> Document:
    return Document(
        doc_id="md-doc",
        source_type=source_type,
        source_uri=f"/vault/{path}",
        text=text,
        metadata={"path": path},
    )


def test_empty_front_matter_is_properties_and_the_rest_is_covered():
    # found by the property test of every text kind: `---` closed by `...` or `---` with
    # nothing between is an empty mapping, left out like any other properties
    for text in ("---\n...\n0", "---\n---\nbody text\n"):
        chunks = chunk_document(doc_for(text, "notes/empty.md"))
        assert chunk_problems(text, chunks, markdown=True) == []
        assert [c.text for c in chunks] == [text.split("\n")[2].strip() or text.split("\n")[2]]
    # the exemption is the front matter's alone: body text left out is still reported
    text = "---\n---\nkept\n"
    chunks = chunk_document(doc_for(text, "notes/empty.md"))
    assert chunk_problems(text + "lost", chunks, markdown=True) != []


def chunks_of(text: str, path: str = "notes/guide.md"):
    chunks = chunk_document(doc_for(text, path))
    assert chunk_problems(text, chunks, markdown=True) == []
    return chunks


def para(seed: int, sentences: int = 5) -> str:
    words = ["index", "query", "chunk", "vector", "search", "local", "notes", "answer", "cite", "rank"]
    out = []
    for s in range(sentences):
        out.append(" ".join(words[(seed * 7 + s * 3 + k) % len(words)] for k in range(12)).capitalize() + ".")
    return " ".join(out)


def test_heading_paths_and_headers():
    text = (
        "# Guide\n\nIntro " + para(1) + "\n\n"
        "## Install\n\n" + "\n\n".join(para(i) for i in range(6)) + "\n\n"
        "### From source\n\n" + "\n\n".join(para(i) for i in range(6, 12)) + "\n\n"
        "## Usage\n\n" + "\n\n".join(para(i) for i in range(12, 18)) + "\n"
    )
    chunks = chunks_of(text)
    paths = [c.metadata["heading_path"] for c in chunks]
    assert ["Guide", "Install"] in paths
    assert ["Guide", "Install", "From source"] in paths
    assert ["Guide", "Usage"] in paths
    for c in chunks:
        hp = c.metadata["heading_path"]
        expected = "notes/guide.md" + "".join(f" › {h}" for h in hp)
        assert c.metadata["header"] == expected
        assert c.metadata["kind"] == "markdown"
    # content of a subsection is under its full path
    sub = [c for c in chunks if c.metadata["heading_path"] == ["Guide", "Install", "From source"]]
    assert any(para(8) in c.text for c in sub)
    # the long sections were split between paragraphs, never inside one (they all fit)
    whole = {para(i) for i in range(18)} | {"Intro " + para(1)}
    for c in chunks:
        for segment in c.text.split("\n\n"):
            assert segment.startswith("#") or segment in whole, segment[:60]


def test_small_sections_are_merged_under_their_common_path():
    text = "# Title\n\n" + "".join(f"## S{i}\n\nShort text {i}.\n\n" for i in range(6))
    chunks = chunks_of(text)
    assert len(chunks) == 1
    assert chunks[0].metadata["heading_path"] == ["Title"]
    assert chunks[0].text.startswith("# Title") and "## S5" in chunks[0].text


def test_code_fences_are_not_cut_when_they_fit():
    fence = "```python\n" + "\n".join(f"result_{i} = compute({i})" for i in range(16)) + "\n```"
    blocks = []
    for i in range(10):
        blocks.append(para(i, 3))
        blocks.append(fence.replace("compute", f"compute{i}"))
    text = "# Code\n\n" + "\n\n".join(blocks) + "\n"
    chunks = chunks_of(text)
    assert len(chunks) > 3
    for c in chunks:
        assert c.text.count("```") % 2 == 0, c.text
    for i in range(10):
        f = fence.replace("compute", f"compute{i}")
        assert any(f in c.text for c in chunks)


def test_a_fence_larger_than_the_budget_becomes_windows():
    fence = "```\n" + "\n".join(f"line {i} of a very long listing with words" for i in range(400)) + "\n```\n"
    text = "# Listing\n\nBefore.\n\n" + fence + "\nAfter.\n"
    chunks = chunks_of(text)
    assert len(chunks) > 5
    sizes = count_tokens_batch([embed_text(c) for c in chunks])
    assert max(sizes) <= MAX_TOKENS
    assert all(c.metadata["heading_path"] == ["Listing"] for c in chunks)
    # the heading joins the first window instead of standing alone
    assert chunks[0].text.startswith("# Listing\n\nBefore.\n\n```")


def test_long_lists_are_cut_between_items():
    items = "\n".join(f"- item {i}: " + para(i, 1) for i in range(150))
    text = "# Tasks\n\n" + items + "\n"
    chunks = chunks_of(text)
    assert len(chunks) > 5
    for c in chunks:
        first = c.text.split("\n", 1)[0]
        assert first.startswith("- item") or first.startswith("# Tasks")
        assert c.text.split("\n")[-1].startswith("- item")


def test_front_matter_is_in_every_header_and_in_no_chunk():
    text = (
        "---\ntitle: Release plan\ntags: [project/atlas, '#release']\naliases: [Roadmap]\n"
        "description: How the quarterly release is cut\ncreated: 2026-01-05\nstatus: draft\n---\n"
        "# Heading\n\n" + "\n\n".join(para(i) for i in range(8)) + "\n\n## Later\n\n"
        + "\n\n".join(para(i) for i in range(8, 16)) + "\n"
    )
    chunks = chunks_of(text)
    assert len(chunks) > 2
    summary = ("Release plan · aliases: Roadmap · tags: project/atlas, release · "
               "How the quarterly release is cut · status: draft")
    for c in chunks:
        assert "---" not in c.text and "title:" not in c.text and "description:" not in c.text
        assert c.metadata["header"].endswith(" · " + summary), c.metadata["header"]
        assert "front_matter" not in c.metadata
        assert "2026" not in c.metadata["header"]  # dates are document metadata, not words
    assert chunks[0].text.startswith("# Heading")
    assert chunks[0].metadata["header"] == "notes/guide.md › Heading · " + summary
    assert chunks[0].char_start == text.index("# Heading")
    assert any(c.metadata["heading_path"] == ["Heading", "Later"] for c in chunks)
    # the header is embedded and full-text indexed with every passage of the note
    assert all("project/atlas" in embed_text(c) for c in chunks)


def test_front_matter_is_not_a_setext_heading_and_unclosed_is_not_front_matter():
    text = "---\ntitle: x\n---\nplain paragraph\n"
    chunks = chunks_of(text)
    assert [c.text for c in chunks] == ["plain paragraph"]
    assert chunks[0].metadata["header"] == "notes/guide.md · x"
    assert all("title: x" not in h for c in chunks for h in c.metadata["heading_path"])
    text = "---\nnot closed\n\nParagraph.\n"
    chunks = chunks_of(text)
    assert chunks[0].text.startswith("---\nnot closed") and chunks[0].metadata["header"] == "notes/guide.md"


def test_front_matter_with_bom_and_crlf():
    text = "\ufeff---\r\ntitle: x\r\n---\r\n# H\r\n\r\ntext\r\n"
    chunks = chunks_of(text)
    assert [c.text for c in chunks] == ["# H\r\n\r\ntext"]
    assert chunks[0].metadata["heading_path"] == ["H"]
    assert chunks[0].metadata["header"] == "notes/guide.md › H · x"


@pytest.mark.parametrize("front", [
    "---\ntitle: [unclosed\ntags: x\n---\n",  # invalid YAML
    "---\n- a list\n- not properties\n---\n",  # YAML, but not a mapping
    "---\nJust a sentence between rules.\n---\n",  # a scalar: prose between thematic breaks
])
def test_front_matter_that_is_not_properties_is_text_of_the_first_chunk(front):
    text = front + "# Heading Title\n\nbody text\n"
    chunks = chunks_of(text)
    assert len(chunks) == 1  # joined with what follows, never a chunk of its own
    assert chunks[0].char_start == 0 and chunks[0].text.endswith("body text")
    # its closing '---' did not make a setext heading of the line above it
    assert chunks[0].metadata["heading_path"] == ["Heading Title"]


def test_a_note_of_nothing_but_properties_is_one_chunk():
    text = "---\ntitle: Contact\ntags: [people]\nphone: 555-0100\n---\n\n"
    chunks = chunks_of(text)
    assert [c.text for c in chunks] == [text.strip()]
    assert chunks[0].metadata["header"] == "notes/guide.md · Contact · tags: people · phone: 555-0100"


def test_empty_front_matter_leaves_no_trace():
    chunks = chunks_of("---\n---\n# A\n\nbody\n")
    assert [(c.text, c.metadata["header"]) for c in chunks] == [("# A\n\nbody", "notes/guide.md › A")]


def test_properties_summary_is_bounded_and_most_telling_first():
    data = {
        "Title": "Plan", "tag": "#solo", "keywords": ["k1", "k2"], "summary": "word " * 200,
        "publish": True, "cssclasses": ["wide"], "updated": "2026-02-01", "nested": {"a": 1},
        "rating": 4.5, "empty": None, "list_of_lists": [[1, 2]],
    }
    summary = properties_summary(data)
    assert summary.startswith("Plan · tags: solo, k1, k2 · word word")
    assert summary.endswith("…")
    assert count_tokens_batch([summary])[0] <= PROPERTIES_TOKENS
    for left_out in ("True", "wide", "2026", "nested", "empty", "list_of_lists"):
        assert left_out not in summary
    assert properties_summary({}) == ""
    assert properties_summary({"x": {"deep": 1}, "draft": True}) == ""
    many = properties_summary({f"key{i}": "value " * 100 for i in range(5000)})
    assert count_tokens_batch([many])[0] <= PROPERTIES_TOKENS


def test_long_properties_and_paths_keep_every_chunk_in_budget():
    front = "---\ntitle: " + "very long title " * 30 + "\ndescription: " + "words " * 300 + "\n---\n"
    path = "/".join(f"folder{i}" for i in range(30)) + "/note.md"
    text = front + "# " + "Heading " * 40 + "\n\n" + "\n\n".join(para(i) for i in range(20)) + "\n"
    chunks = chunks_of(text, path)
    headers = count_tokens_batch([c.metadata["header"] for c in chunks])
    assert max(headers) <= HEADER_MAX_TOKENS + 1 + PROPERTIES_TOKENS
    assert max(count_tokens_batch([embed_text(c) for c in chunks])) <= MAX_TOKENS


def test_lone_carriage_returns_do_not_shift_lines():
    text = "# A\r\rline\rwith\rCR\n\n## B\n\ntext under b\n"
    chunks = chunks_of(text)
    # "\r" alone is not a line break for chinvex (lines are "\n"): it reads as a space
    assert chunks[0].metadata["heading_path"] == ["A line with CR"]
    assert "text under b" in chunks[-1].text


def test_setext_headings_and_deep_levels():
    text = "Title\n=====\n\n" + para(1) + "\n\nPart\n----\n\n#### Deep\n\n" + para(2) + "\n"
    chunks = chunks_of(text)
    assert {tuple(c.metadata["heading_path"]) for c in chunks} <= {("Title",), ("Title", "Part"), ("Title", "Part", "Deep")}


def test_tables_are_cut_between_rows():
    rows = "\n".join(f"| {i} | {para(i, 1)} |" for i in range(120))
    text = "# Data\n\n| n | text |\n|---|---|\n" + rows + "\n"
    chunks = chunks_of(text)
    assert len(chunks) > 5
    for c in chunks[1:]:
        assert c.text.startswith("| ")
        assert c.text.endswith("|")


def test_heading_without_body_and_empty_sections():
    assert chunks_of("# Only a heading\n")[0].metadata["heading_path"] == ["Only a heading"]
    chunks = chunks_of("# A\n# B\n# C\n")
    assert len(chunks) == 1


def test_link_reference_definitions_are_covered():
    text = "# Links\n\nSee [x].\n\n[x]: https://example.com/a\n[y]: https://example.com/b\n"
    chunks_of(text)


md_pieces = st.sampled_from(
    [
        "# H1\n", "## H2\n", "### H3\n", "Setext\n===\n", "- item\n", "  - nested\n", "1. one\n",
        "> quote\n", "```\n", "~~~py\n", "    indented code\n", "| a | b |\n|---|---|\n| 1 | 2 |\n",
        "---\n", "\n", "\n\n", "text with *emphasis* and `code`\n", "<div>\n", "</div>\n",
        "[ref]: http://x\n", "\r\n", "\r", "😀 東京 e\u0301\n", "word " * 30 + "\n", "\t- tab item\n",
    ]
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(md_pieces, st.text(max_size=40)), max_size=120).map("".join))
def test_random_markdown_keeps_the_contract(text):
    chunks_of(text)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(md_pieces, min_size=200, max_size=600).map("".join))
def test_long_random_markdown_keeps_the_contract(text):
    chunks_of(text)


def _repo_markdown() -> list[Path]:
    """The repository's own markdown: README, docs, bench notes and results (tables), fixture
    provenance, LoCoMo transcripts. Hidden folders (.venv, .cache) and build output are left out."""
    skip = {"out", "build", "dist", "node_modules"}
    return sorted(p for p in REPO_ROOT.rglob("*.md")
                  if not any(part.startswith(".") or part in skip
                             for part in p.relative_to(REPO_ROOT).parts[:-1]))


def test_real_markdown_files():
    paths = _repo_markdown()
    assert REPO_ROOT / "README.md" in paths and len(paths) > 20
    for p in paths:
        text = p.read_text(encoding="utf-8", errors="replace")
        chunks = chunk_document(doc_for(text, p.name))
        assert chunk_problems(text, chunks, markdown=True) == [], p


def test_architecture_md_sections():
    """The repository's longest prose document: every chunk's heading path is made of the file's
    own headings, down to the ### subsections, and merged sections keep chunks well filled."""
    text = (REPO_ROOT / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    chunks = chunks_of(text, "ARCHITECTURE.md")
    headings = {line.lstrip("#").strip() for line in text.splitlines() if re.match(r"#{1,6} ", line)}
    paths = [c.metadata["heading_path"] for c in chunks]
    assert all(path and set(path) <= headings for path in paths)
    assert any(len(path) == 3 for path in paths) and len({tuple(path) for path in paths}) >= 5
    sizes = count_tokens_batch([embed_text(c) for c in chunks])
    assert sum(sizes) / len(sizes) > 0.55 * MAX_TOKENS
