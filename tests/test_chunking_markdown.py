"""Markdown chunking: sections and heading paths, fences, lists, front matter, real files."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chinvex.chunking import chunk_document, embed_text
from chinvex.chunking.base import MAX_TOKENS
from chinvex.chunking.validate import chunk_problems
from chinvex.embedding.tokenizer import count_tokens_batch
from chinvex.models.documents import Document

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED = REPO_ROOT.parent / "shared"


def doc_for(text: str, path: str = "notes/guide.md", source_type: str = "note") -> Document:
    return Document(
        doc_id="md-doc",
        source_type=source_type,
        source_uri=f"/vault/{path}",
        text=text,
        metadata={"path": path},
    )


def chunks_of(text: str, path: str = "notes/guide.md"):
    chunks = chunk_document(doc_for(text, path))
    assert chunk_problems(text, chunks) == []
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


def test_front_matter_is_its_own_first_chunk():
    text = "---\ntitle: My note\ntags: [a, b]\n---\n# Heading\n\nBody text.\n"
    chunks = chunks_of(text)
    assert chunks[0].metadata.get("front_matter") is True
    assert chunks[0].text == "---\ntitle: My note\ntags: [a, b]\n---"
    assert chunks[0].metadata["heading_path"] == []
    assert chunks[1].metadata["heading_path"] == ["Heading"]
    assert chunks[1].text.startswith("# Heading")


def test_front_matter_is_not_a_setext_heading_and_unclosed_is_not_front_matter():
    text = "---\ntitle: x\n---\nplain paragraph\n"
    chunks = chunks_of(text)
    assert chunks[0].metadata.get("front_matter") is True
    assert all("title: x" not in h for c in chunks for h in c.metadata["heading_path"])
    text = "---\nnot closed\n\nParagraph.\n"
    chunks = chunks_of(text)
    assert not any(c.metadata.get("front_matter") for c in chunks)


def test_front_matter_with_bom_and_crlf():
    text = "\ufeff---\r\ntitle: x\r\n---\r\n# H\r\n\r\ntext\r\n"
    chunks = chunks_of(text)
    assert chunks[0].metadata.get("front_matter") is True
    assert chunks[-1].metadata["heading_path"] == ["H"]


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


def _shared_markdown() -> list[Path]:
    if not SHARED.is_dir():
        return []
    return sorted(SHARED.rglob("*.md"))


def test_real_markdown_files():
    paths = _shared_markdown()
    if not paths:
        pytest.skip("shared docs not present")
    for p in paths:
        text = p.read_text(encoding="utf-8", errors="replace")
        chunks = chunk_document(doc_for(text, p.name))
        assert chunk_problems(text, chunks) == [], p


def test_design_md_sections():
    path = SHARED / "DESIGN.md"
    if not path.is_file():
        pytest.skip("shared docs not present")
    text = path.read_text(encoding="utf-8")
    chunks = chunks_of(text, "DESIGN.md")
    titles = {c.metadata["heading_path"][-1] for c in chunks if c.metadata["heading_path"]}
    assert any(t.startswith("6. Retrieval") for t in titles)
    sizes = count_tokens_batch([embed_text(c) for c in chunks])
    assert sum(sizes) / len(sizes) > 0.55 * MAX_TOKENS
