"""Plain-text chunking, the shared token counting, dispatch and the contract checker."""

from __future__ import annotations

import random
import statistics

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chinvex.chunking import CHUNKER_VERSION, chunk_document, detect_kind, embed_text, stable_text
from chinvex.chunking.base import MAX_TOKENS, build_header, split_exact
from chinvex.chunking.tokens import line_atoms, line_token_counts
from chinvex.chunking.validate import chunk_problems
from chinvex.embedding.tokenizer import count_tokens, count_tokens_batch
from chinvex.ids import chunk_id
from chinvex.models.documents import Chunk, Document


def doc_for(text: str, path: str = "notes/readme.txt", source_type: str = "repo", **meta) -> Document:
    return Document(
        doc_id="doc-1",
        source_type=source_type,
        source_uri=f"/abs/{path}",
        text=text,
        metadata={"path": path, **meta},
    )


def prose(n_paragraphs: int, seed: int = 1) -> str:
    rnd = random.Random(seed)
    words = "the quick brown fox jumps over a lazy dog while searching for local knowledge".split()
    paras = []
    for _ in range(n_paragraphs):
        sentences = []
        for _ in range(rnd.randint(1, 6)):
            s = " ".join(rnd.choice(words) for _ in range(rnd.randint(4, 18)))
            sentences.append(s.capitalize() + ".")
        paras.append(" ".join(sentences))
    return "\n\n".join(paras) + "\n"


# --- the checker itself must be able to fail ----------------------------------------------------


def _one_chunk(source: str, s: int, e: int, **kw) -> Chunk:
    text = source
    body = text[s:e]
    fields = dict(
        chunk_id=chunk_id("d", 0, body),
        doc_id="d",
        chunk_index=0,
        text=body,
        char_start=s,
        char_end=e,
        line_start=text.count("\n", 0, s) + 1,
        line_end=text.count("\n", 0, e - 1) + 1,
    )
    fields.update(kw)
    return Chunk(**fields)


def test_checker_reports_each_kind_of_violation():
    text = "alpha beta\ngamma delta\n"
    assert chunk_problems(text, [_one_chunk(text, 0, len(text) - 1)]) == []
    assert any("differs" in p for p in chunk_problems(text, [_one_chunk(text, 0, 22, text="x" * 22)]))
    assert any("lines" in p for p in chunk_problems(text, [_one_chunk(text, 0, 22, line_end=5)]))
    assert any("no chunk" in p for p in chunk_problems(text, [_one_chunk(text, 0, 10)]))
    assert any("chunk_id" in p for p in chunk_problems(text, [_one_chunk(text, 0, 22, chunk_id="0" * 12)]))
    long = "word " * 400
    assert any("tokens" in p for p in chunk_problems(long, [_one_chunk(long, 0, len(long) - 1)]))


# --- token counting -----------------------------------------------------------------------------

ascii_lines = st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=127), max_size=200).map(
    lambda s: s.replace("\n", " ")
)
any_lines = st.text(max_size=120).map(lambda s: s.replace("\n", " "))


@settings(max_examples=300, deadline=None)
@given(st.lists(ascii_lines, max_size=12))
def test_line_counts_match_the_tokenizer_ascii(lines):
    assert line_token_counts(lines) == count_tokens_batch(lines)


@settings(max_examples=200, deadline=None)
@given(st.lists(any_lines, max_size=12))
def test_line_counts_match_the_tokenizer_unicode(lines):
    assert line_token_counts(lines) == count_tokens_batch(lines)


def test_special_token_texts_are_counted_as_the_tokenizer_reads_them():
    # found by the ASCII property test: the tokenizer reads "[PAD]" in a text as one token
    lines = ["[PAD]", "x [SEP] y", "[pad]", "a[MASK]b", "[CLS][UNK]", "[ PAD ]"]
    assert line_token_counts(lines) == count_tokens_batch(lines)


def test_line_counts_of_real_text_match_the_tokenizer():
    import chinvex.chunking.base as src

    lines = open(src.__file__, encoding="utf-8").read().split("\n")
    lines += prose(30).split("\n") + ["x" * 250, "naïve café — “quoted” 東京 😀 e\u0301"]
    assert line_token_counts(lines) == count_tokens_batch(lines)


@settings(max_examples=200, deadline=None)
@given(st.one_of(ascii_lines, any_lines, st.just("a.b(c);d{e}f " * 200)))
def test_line_atoms_tile_the_line_and_sum_to_its_count(line):
    atoms, exact = line_atoms(line)
    assert atoms[0].start == 0 and atoms[-1].end == len(line)
    for a, b in zip(atoms, atoms[1:]):
        assert a.end == b.start
    total = sum(a.tokens for a in atoms)
    if exact:
        assert total == count_tokens(line)
        for a in atoms:
            assert a.tokens == count_tokens(line[a.start : a.end])


# --- plain text chunks --------------------------------------------------------------------------

text_strategy = st.lists(
    st.one_of(
        st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=30),
        st.sampled_from(["\n", "\r\n", "\t", " ", "\n\n", "😀", "e\u0301", "東", "word ", ". ", "\r"]),
        st.sampled_from(["def f(x):\n    return x\n", "# Title\n", "```\ncode\n```\n", "---\n"]),
    ),
    max_size=300,
).map("".join)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text_strategy, st.sampled_from(["a.txt", "b.md", "c.py", "d.js", "e.rs", "f.c", "noext"]))
def test_any_text_any_kind_keeps_the_contract(text, path):
    chunks = chunk_document(doc_for(text, path))
    assert chunk_problems(text, chunks, markdown=path.endswith(".md")) == []


@settings(max_examples=40, deadline=None)
@given(st.integers(min_value=1, max_value=120), st.integers(min_value=0, max_value=10_000))
def test_long_prose_keeps_the_contract(n, seed):
    text = prose(n, seed)
    assert chunk_problems(text, chunk_document(doc_for(text))) == []


def test_prose_windows_overlap_and_fill_the_budget():
    text = prose(200, seed=3)
    chunks = chunk_document(doc_for(text))
    assert len(chunks) > 10
    sizes = count_tokens_batch([embed_text(c) for c in chunks])
    assert max(sizes) <= MAX_TOKENS
    assert statistics.mean(sizes[:-1]) >= 0.75 * MAX_TOKENS
    overlaps = sum(1 for a, b in zip(chunks, chunks[1:]) if b.char_start < a.char_end)
    assert overlaps >= len(chunks) // 2
    for a, b in zip(chunks, chunks[1:]):
        assert b.char_start > a.char_start and b.char_end > a.char_end
    assert all(c.metadata["header"] == "notes/readme.txt" for c in chunks)
    assert all(c.metadata["kind"] == "text" for c in chunks)


def test_one_huge_line_is_cut_by_tokens():
    text = "Sentence number %d says something about retrieval. " * 4000
    chunks = chunk_document(doc_for(text))
    assert len(chunks) > 20
    assert chunk_problems(text, chunks) == []
    assert all(c.line_start == c.line_end == 1 for c in chunks)
    # cuts fall after sentences when they can
    assert sum(c.text.endswith(".") for c in chunks[:-1]) >= 0.8 * (len(chunks) - 1)


def test_huge_lines_without_spaces_and_in_cjk():
    for text in ["x" * 300_000, "東京大学" * 5000, "a.b" * 40_000, "😀" * 3000, "é" * 50_000]:
        chunks = chunk_document(doc_for(text))
        assert chunks
        assert chunk_problems(text, chunks) == [], text[:10]


def test_crlf_tabs_and_combining_marks_keep_lines():
    text = "first line\r\n\tsecond\r\n\r\ne\u0301t\u00e9 😀\r\n" * 300
    chunks = chunk_document(doc_for(text))
    assert chunk_problems(text, chunks) == []


def test_empty_and_blank_documents_have_no_chunks():
    assert chunk_document(doc_for("")) == []
    assert chunk_document(doc_for(" \n\t\r\n  ")) == []


def test_control_characters_are_covered():
    text = "\x00\x01\x02 abc \x7f\x0b\x0c\n" * 50
    assert chunk_problems(text, chunk_document(doc_for(text))) == []


def test_deterministic():
    text = prose(80, seed=9)
    a = chunk_document(doc_for(text))
    b = chunk_document(doc_for(text))
    assert [c.model_dump() for c in a] == [c.model_dump() for c in b]


# --- dispatch, headers, embed text ----------------------------------------------------------------


def test_detect_kind():
    assert detect_kind(doc_for("", "a/b.py")) == ("code", "python")
    assert detect_kind(doc_for("", "a/b.tsx")) == ("code", "tsx")
    assert detect_kind(doc_for("", "a/b.mjs")) == ("code", "javascript")
    assert detect_kind(doc_for("", "x", language="rust")) == ("code", "rust")
    assert detect_kind(doc_for("", "a/b.md")) == ("markdown", None)
    assert detect_kind(doc_for("", "a/B.MARKDOWN")) == ("markdown", None)
    assert detect_kind(doc_for("", "notes/idea", source_type="note")) == ("markdown", None)
    assert detect_kind(doc_for("", "a/b.java")) == ("code", None)
    assert detect_kind(doc_for("", "Makefile")) == ("code", None)
    assert detect_kind(doc_for("", "a/b.txt")) == ("text", None)
    assert detect_kind(doc_for("", "LICENSE")) == ("text", None)
    assert detect_kind(doc_for("", "docs/x.rst", language="restructuredtext")) == ("text", None)
    assert detect_kind(doc_for("", "data.csv", language="csv")) == ("code", None)


def test_header_falls_back_to_source_uri_and_is_bounded():
    d = Document(doc_id="d", source_type="repo", source_uri="/abs/x.txt", text="hello world")
    assert chunk_document(d)[0].metadata["header"] == "/abs/x.txt"
    deep = "/".join(f"directory_{i}" for i in range(60)) + "/file.txt"
    h = build_header(deep, ("class " + "VeryLongName" * 30, "def f"))
    assert count_tokens(h) <= 48
    assert h.endswith("def f") and "file.txt" in h


def test_embed_text_is_header_then_text():
    c = chunk_document(doc_for("some words here"))[0]
    assert embed_text(c) == "notes/readme.txt\nsome words here"
    bare = c.model_copy(update={"metadata": {}})
    assert embed_text(bare) == "some words here"


def test_stable_text_only_touches_turn_totals():
    assert stable_text("[Turn 3 of 12] user:\nhi") == "[Turn 3] user:\nhi"
    assert stable_text("[Turn 4 of 9, part 1/3] tool (x):") == "[Turn 4, part 1/3] tool (x):"
    assert stable_text("see [Turn 3 of 12] inline") == "see [Turn 3 of 12] inline"


def test_chunker_version_is_a_string():
    assert isinstance(CHUNKER_VERSION, str) and CHUNKER_VERSION


@settings(max_examples=100, deadline=None)
@given(text_strategy, st.integers(min_value=5, max_value=60))
def test_split_exact_cuts_by_real_counts(text, limit):
    if not text:
        return
    ranges = split_exact(text, 0, len(text), limit)
    assert sorted(ranges) == ranges
    pos = 0
    for s, e in ranges:
        assert s == pos and e > s
        pos = e
        assert count_tokens(text[s:e]) <= limit
    assert pos == len(text)
