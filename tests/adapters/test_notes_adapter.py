"""NotesAdapter on real note files: front matter, Obsidian tags and links, titles, encodings."""

from __future__ import annotations

import json
import os
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chinvex.files.frontmatter import split_front_matter
from chinvex.ids import doc_id_for
from chinvex.models import Document
from chinvex.models.sources import Adapter, AdapterOptions, ParseReport, SkippedSource, SourceCandidate, SourceError
from chinvex_adapters.notes import NotesAdapter
from chinvex_adapters.notes.obsidian import inline_tags, mask_code, wikilinks
from helpers import FIXTURES, enumerated, run_cli_in_process, write



def options(**kw) -> AdapterOptions:
    return AdapterOptions(context_name="test", **kw)


def enumerate_map(root: Path, **kw) -> tuple[dict[str, SourceCandidate], dict[str, SkippedSource]]:
    return enumerated(NotesAdapter(), root, options(**kw))


def note(root: Path, rel: str, data: bytes | str, **kw) -> tuple[Document, ParseReport]:
    """Write one note into a fresh vault, enumerate it and parse it."""
    write(root, rel, data)
    cands, _ = enumerate_map(root, **kw)
    report = ParseReport()
    docs = list(NotesAdapter().parse(cands[rel], report, None))
    assert len(docs) == 1
    json.dumps(docs[0].model_dump(mode="json"))  # everything is storable
    return docs[0], report


# ------------------------------------------------------------------------- front matter


def test_valid_front_matter(tmp_path: Path) -> None:
    text = (
        "---\n"
        "title: Release plan\n"
        "tags: [project/chinvex, '#release']\n"
        "aliases: [Plan, Roadmap 2026]\n"
        "created: 2026-01-05\n"
        "updated: 2026-02-01T10:30:00+02:00\n"
        "rating: 4.5\n"
        "published: true\n"
        "nested: {when: 2026-03-01, list: [1, two]}\n"
        "---\n"
        "# Not the title\n"
        "Body with #inline tag.\n"
    )
    doc, report = note(tmp_path, "plan.md", text)
    assert report.warnings == []
    assert doc.doc_id == doc_id_for("note", str(tmp_path / "plan.md"))
    assert doc.source_type == "note" and doc.source_uri == str(tmp_path / "plan.md")
    assert doc.text == text  # front matter included: offsets are file offsets
    assert doc.title == "Release plan"
    fm = doc.metadata["front_matter"]
    assert fm["created"] == "2026-01-05"
    assert fm["updated"] == "2026-02-01T10:30:00+02:00"
    assert fm["nested"] == {"when": "2026-03-01", "list": [1, "two"]}
    assert fm["rating"] == 4.5 and fm["published"] is True
    assert doc.metadata["tags"] == ["project/chinvex", "release", "inline"]
    assert doc.metadata["aliases"] == ["Plan", "Roadmap 2026"]
    assert doc.created_at == datetime(2026, 1, 5, tzinfo=timezone.utc)
    assert doc.updated_at == datetime(2026, 2, 1, 8, 30, tzinfo=timezone.utc)
    assert doc.metadata["language"] == "markdown"
    assert doc.metadata["path"] == "plan.md"
    assert doc.text[doc.metadata["body_start"]:].startswith("# Not the title")


def test_tags_as_string_and_singular_keys(tmp_path: Path) -> None:
    doc, _ = note(tmp_path, "a.md", "---\ntags: alpha, beta gamma\ntag: '#delta'\nalias: Other name\n---\ntext\n")
    assert doc.metadata["tags"] == ["alpha", "beta", "gamma", "delta"]
    assert doc.metadata["aliases"] == ["Other name"]


def test_invalid_yaml_is_a_warning_not_an_abort(tmp_path: Path) -> None:
    text = "---\ntitle: [unclosed\ntags: x\n---\n# Heading Title\nbody #kept\n"
    doc, report = note(tmp_path, "bad.md", text)
    assert doc.title == "Heading Title"
    assert doc.metadata["front_matter"] == {}
    assert doc.metadata["tags"] == ["kept"]
    assert doc.text == text
    assert len(report.warnings) == 1
    assert report.warnings[0].startswith(f"{tmp_path / 'bad.md'}: invalid YAML front matter")
    assert "line 3" in report.warnings[0]  # counted in lines of the note
    assert report.counts["front_matter_invalid"] == 1


def test_front_matter_that_is_not_a_mapping(tmp_path: Path) -> None:
    doc, report = note(tmp_path, "list.md", "---\n- a\n- b\n---\nbody\n")
    assert doc.metadata["front_matter"] == {}
    assert "not a mapping" in report.warnings[0]


def test_front_matter_only_at_byte_zero(tmp_path: Path) -> None:
    text = "\n---\ntitle: nope\n---\nbody\n"
    doc, _ = note(tmp_path, "late.md", text)
    assert doc.metadata["front_matter"] == {}
    assert doc.title == "late"
    assert doc.metadata["body_start"] == 0
    # an unclosed opening line is a thematic break, not front matter
    assert split_front_matter("---\ntitle: x\nno end\n").present is False


def test_unparseable_dates_fall_back_to_mtime(tmp_path: Path) -> None:
    doc, report = note(tmp_path, "d.md", "---\ncreated: next tuesday\ndate: 2024\nupdated: soon\n---\nx\n")
    assert report.warnings == []
    assert doc.created_at is None
    mtime = os.stat(tmp_path / "d.md").st_mtime_ns
    # int / int is correctly rounded; `mtime / 1e9` first rounds the int to a float and can land
    # one microsecond off.
    assert doc.updated_at == datetime.fromtimestamp(mtime / 1_000_000_000, timezone.utc)
    assert doc.metadata["front_matter"]["date"] == 2024


def test_date_key_gives_created(tmp_path: Path) -> None:
    doc, _ = note(tmp_path, "d.md", "---\ndate: 2023-07-14 09:15\n---\nx\n")
    assert doc.created_at == datetime(2023, 7, 14, 9, 15, tzinfo=timezone.utc)


def test_alias_bomb_is_cut_not_hung(tmp_path: Path) -> None:
    lines = ["a: &a [x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 9):
        prev = chr(ord("a") + i - 1)
        cur = chr(ord("a") + i)
        lines.append(f"{cur}: &{cur} [*{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}]")
    started = time.monotonic()
    doc, report = note(tmp_path, "bomb.md", "---\n" + "\n".join(lines) + "\n---\nbody\n")
    assert time.monotonic() - started < 10
    assert any("too large" in w for w in report.warnings)
    assert doc.text.endswith("body\n")


# --------------------------------------------------------------------- tags and links


def test_inline_tags_exclude_code_headings_numbers_and_links() -> None:
    body = (
        "# Heading is not a tag\n"
        "## #real-in-heading\n"
        "Text #alpha and #parent/child, #café, #123 and #2024/05 are numbers.\n"
        "Inline `#notatag` and ``code with ` #nope``.\n"
        "```python\n#include <nope>\n# comment #nope\n```\n"
        "~~~\n#tilde-nope\n~~~\n"
        "A link [[Note#Heading]] and [x](#anchor) and https://example.org/#frag.\n"
        "%% #commented %% and <!-- #html-comment -->\n"
        "End #alpha again #under_score #a1\n"
    )
    assert inline_tags(mask_code(body)) == [
        "real-in-heading", "alpha", "parent/child", "café", "under_score", "a1",
    ]


def test_unclosed_fence_runs_to_the_end() -> None:
    assert inline_tags(mask_code("#before\n```\n#inside\n")) == ["before"]


def test_wikilinks_of_every_form() -> None:
    body = (
        "[[Note]] [[Note|alias]] [[Other Note#Heading]] [[Third#^block1]] "
        "![[image.png|300]] ![[Embedded Note]] [[folder/Deep Note|shown]] [[#Local heading]] "
        "[[Note]] `[[in code]]` [[ Spaced ]] [[Table\\|alias]]\n"
        "```\n[[fenced]]\n```\n"
    )
    assert wikilinks(mask_code(body)) == [
        "Note", "Other Note", "Third", "image.png", "Embedded Note", "folder/Deep Note",
        "Spaced", "Table",
    ]


def test_note_metadata_end_to_end(tmp_path: Path) -> None:
    doc, _ = note(tmp_path, "dir/n.md", "See [[Alpha]] and ![[pic.png]] #todo\n`[[no]]` #todo\n")
    assert doc.metadata["wikilinks"] == ["Alpha", "pic.png"]
    assert doc.metadata["tags"] == ["todo"]
    assert doc.metadata["path"] == "dir/n.md"
    assert doc.title == "n"


# --------------------------------------------------------------------------- titles


@pytest.mark.parametrize(
    ("text", "title"),
    [
        ("---\ntitle: From FM\n---\n# From H1\n", "From FM"),
        ("---\ntitle: ''\n---\n# From H1\n", "From H1"),
        ("---\ntags: [x]\n---\nintro\n## H2 first\n# From H1 #tag ##\n", "From H1 #tag"),
        ("```\n# in code\n```\n#nospace\n", "stem name"),
        ("plain text only\n", "stem name"),
        ("# `code` in title\n", "`code` in title"),
    ],
)
def test_title_fallback_order(tmp_path: Path, text: str, title: str) -> None:
    doc, _ = note(tmp_path, "stem name.md", text)
    assert doc.title == title


def test_crlf_and_bom(tmp_path: Path) -> None:
    raw = "\ufeff---\r\ntitle: Windows note\r\ntags: [win]\r\n---\r\n# H\r\nline #crlf\r\n".encode()
    doc, report = note(tmp_path, "win.md", raw)
    assert report.warnings == []
    assert doc.text == "---\r\ntitle: Windows note\r\ntags: [win]\r\n---\r\n# H\r\nline #crlf\r\n"
    assert doc.title == "Windows note"
    assert doc.metadata["tags"] == ["win", "crlf"]
    assert doc.metadata["encoding"] == "utf-8-sig"
    doc2, _ = note(tmp_path / "v2", "h.md", b"# Heading\r\n\r\ntext\r\n")
    assert doc2.title == "Heading"  # no trailing \r


def test_txt_notes_and_invalid_bytes(tmp_path: Path) -> None:
    doc, report = note(tmp_path, "plain.txt", b"caf\xe9 #idea [[Link]]\n" + b"more text\n" * 10)
    assert doc.metadata["language"] == "text"
    assert doc.metadata["tags"] == ["idea"] and doc.metadata["wikilinks"] == ["Link"]
    assert doc.text.startswith("caf\ufffd")
    assert "1 invalid" in report.warnings[0]


# ------------------------------------------------------------------------- enumerate


def test_enumerate_vault(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    write(vault, "a.md", "a\n")
    write(vault, "b.markdown", "b\n")
    write(vault, "c.TXT", "c\n")
    write(vault, "sub/d.md", "d\n")
    write(vault, "image.png", b"\x89PNG\r\n\x1a\n")
    write(vault, ".obsidian/workspace.md", "x\n")
    write(vault, ".trash/old.md", "x\n")
    write(vault, ".hidden/e.md", "x\n")
    write(vault, ".dotnote.md", "x\n")
    write(vault, "node_modules/x.md", "x\n")
    write(vault, ".gitignore", "drafts/\n*.tmp.md\n")
    write(vault, "drafts/f.md", "x\n")
    write(vault, "g.tmp.md", "x\n")
    write(vault, "private/h.md", "x\n")
    write(vault, "empty.md", "")
    write(vault, "fake.md", b"\x00\x01\x02binary")
    write(vault, "huge.md", "x" * 5000)
    cands, skips = enumerate_map(vault, excludes=["private/"], max_file_bytes=4000)
    assert set(cands) == {"a.md", "b.markdown", "c.TXT", "sub/d.md"}
    assert {k: v.reason for k, v in skips.items()} == {
        "image.png": "not_supported",
        ".obsidian": "excluded_dir",
        ".trash": "excluded_dir",
        ".hidden": "hidden",
        ".dotnote.md": "hidden",
        ".gitignore": "hidden",
        "node_modules": "excluded_dir",
        "private": "excluded",
        "empty.md": "empty",
        "fake.md": "binary",
        "huge.md": "too_large",
    }
    assert all(c.source_type == "note" and c.adapter == "notes" for c in cands.values())


def test_enumerate_missing_root(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match=f"{tmp_path / 'gone'}: note folder path does not exist"):
        list(NotesAdapter().enumerate(tmp_path / "gone", options()))


def test_parse_vanished_note(tmp_path: Path) -> None:
    write(tmp_path, "x.md", "x\n")
    cands, _ = enumerate_map(tmp_path)
    (tmp_path / "x.md").unlink()
    with pytest.raises(SourceError, match="x.md: disappeared"):
        list(NotesAdapter().parse(cands["x.md"], ParseReport(), None))


def test_adapter_satisfies_the_protocol() -> None:
    adapter = NotesAdapter()
    assert isinstance(adapter, Adapter)
    assert (adapter.name, adapter.source_type, adapter.parser_version) == ("notes", "note", "notes_v1")


def test_shared_fixtures_as_a_vault() -> None:
    """The fixture folder read as notes: its markdown files parse; the rest is reported."""
    cands, skips = enumerate_map(FIXTURES)
    assert "PROVENANCE.md" in cands
    assert skips and all(s.reason in {"not_supported", "too_large", "binary", "empty", "hidden"}
                         for s in skips.values())
    for cand in cands.values():
        docs = list(NotesAdapter().parse(cand, ParseReport(), None))
        assert docs[0].text and docs[0].title


# -------------------------------------------------------------------------- property test

_names = st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters="/\x00", min_codepoint=32),
    min_size=1, max_size=15,
).map(lambda n: n + ".md")
_bodies = st.one_of(
    st.binary(max_size=200),
    st.text(max_size=300).map(lambda t: ("---\n" + t + "\n---\n" + t).encode("utf-8", "surrogatepass")),
    st.text(alphabet="-#[]|!`~\n\r :{}*&abc0123", max_size=200).map(str.encode),
)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(files=st.dictionaries(_names, _bodies, min_size=1, max_size=5))
def test_random_notes_never_crash(files: dict[str, bytes]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        vault = Path(tmp) / "v"
        vault.mkdir()
        for name, data in files.items():
            try:
                (vault / name).write_bytes(data)
            except OSError:
                continue
        adapter = NotesAdapter()
        for item in adapter.enumerate(vault, options()):
            if isinstance(item, SkippedSource):
                continue
            try:
                for doc in adapter.parse(item, ParseReport(), None):
                    json.dumps(doc.model_dump(mode="json"))
                    assert doc.title
            except SourceError:
                pass


# ------------------------------------------------------------------------- hostile notes

def test_a_blank_file_name_and_blank_body_still_give_a_title(tmp_path: Path) -> None:
    doc, _ = note(tmp_path, " .md", "\t")
    assert doc.title == ".md"
    doc, _ = note(tmp_path / "b", "   .txt", "   \n\n")
    assert doc.title.strip() == doc.title and doc.title


def test_front_matter_date_out_of_range_is_a_warning(tmp_path: Path) -> None:
    doc, report = note(tmp_path, "d.md", "---\ncreated: 2024-13-45\n---\n\ndatebody text\n")
    assert "datebody" in doc.text and doc.metadata["front_matter"] == {}
    assert any("front matter" in w for w in report.warnings)


@pytest.mark.parametrize("yaml_text", [
    "x: " + "[" * 100_000 + "]" * 100_000,
    "x: " + "{a: " * 50_000 + "1" + "}" * 50_000,
    "x:\n" + "- " * 100_000 + "a",
    "".join(" " * i + f"k{i}:\n" for i in range(600)),
])
def test_pathological_yaml_nesting_is_refused_before_parsing(tmp_path: Path, yaml_text: str) -> None:
    started = time.monotonic()
    fm = split_front_matter(f"---\n{yaml_text}\n---\nbody\n")
    assert fm.present and fm.data == {} and "nests more than" in (fm.error or "")
    assert time.monotonic() - started < 2


_yaml_values = st.recursive(
    st.none() | st.integers() | st.text(alphabet="ab -:?[]{}#'\"\n", max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(alphabet="k -:[", max_size=3),
                                                                  inner, max_size=3),
    max_leaves=40)


def _yaml_depth(value) -> int:
    if isinstance(value, dict):
        return 1 + max((_yaml_depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((_yaml_depth(v) for v in value), default=0)
    return 0


@settings(max_examples=300, deadline=None)
@given(value=_yaml_values, flow=st.none() | st.booleans(), indent=st.integers(2, 6))
def test_yaml_nesting_bound_is_never_below_the_real_depth(value, flow, indent) -> None:
    """The pre-parse bound that protects libyaml must hold for every style YAML can be
    written in (block, flow, mixed), or a deep document could slip through to the C parser."""
    import yaml

    from chinvex.files.frontmatter import nesting_bound

    text = yaml.safe_dump(value, default_flow_style=flow, indent=indent, allow_unicode=True)
    assert nesting_bound(text) >= _yaml_depth(yaml.safe_load(text))


# ------------------------------------------------------- front matter as searchable metadata


def test_name_and_description_are_title_and_metadata(tmp_path: Path) -> None:
    text = "---\nname: Deploy checklist\ndescription: Steps before a production deploy\n---\n# Steps\n"
    doc, report = note(tmp_path, "deploy.md", text)
    assert report.warnings == []
    assert doc.title == "Deploy checklist"  # `name` (Claude Code memory files) before the H1
    assert doc.metadata["description"] == "Steps before a production deploy"
    doc, _ = note(tmp_path / "b", "t.md", "---\ntitle: Title wins\nname: n\ndescription: [not, text]\n---\n")
    assert doc.title == "Title wins" and "description" not in doc.metadata


def test_front_matter_is_found_with_the_note_not_as_a_chunk(tmp_path: Path) -> None:
    """Through the real CLI: the note's tag, alias and description exist only in its front
    matter, and each finds the note's body chunk; no chunk's text is front matter."""
    import sqlite3

    from helpers import assert_no_traceback, run_cli

    vault = tmp_path / "vault"
    write(vault, "ops/rotation.md", (
        "---\ntitle: On-call rotation\ntags: [pagerduty, sre/oncall]\naliases: [Pager schedule]\n"
        "description: Who carries the pager each week\ncreated: 2026-01-05\n---\n"
        "# Rotation\n\nEach engineer takes one week in turn; swaps go through the team channel.\n"))
    write(vault, "other.md", "# Groceries\n\nApples, bread and coffee beans.\n")
    assert run_cli_in_process("context", "create", "Vault", "--note-root", str(vault)).code == 0
    ingest = run_cli_in_process("ingest", "--context", "Vault", "--json")
    assert_no_traceback(ingest)
    assert ingest.code == 0, ingest
    for query in ("pagerduty", "Pager schedule", "who carries the pager"):
        result = run_cli("search", "--context", "Vault", query, "--k", "3", "--json")
        assert result.code == 0, result
        top = result.json["results"][0]
        assert top["source_uri"] == str(vault / "ops/rotation.md"), (query, top)
        assert top["title"] == "On-call rotation"
        assert top["text"].startswith("# Rotation") and "pagerduty" not in top["text"]
    home = Path(os.environ["CHINVEX_HOME"])
    with sqlite3.connect(home / "indexes" / "Vault" / "hybrid.db") as conn:
        rows = conn.execute("SELECT c.text, c.search_text FROM chunks c JOIN documents d USING (doc_id) "
                            "WHERE d.source_uri = ?", (str(vault / "ops/rotation.md"),)).fetchall()
    assert len(rows) == 1
    text, search_text = rows[0]
    assert not text.startswith("---") and "title:" not in text
    assert "pagerduty" in search_text and "On-call rotation" in search_text
