"""Words typed together are found together (issue 41): "quoted phrases" are required as phrases
in every result (when no chunk holds one, the search says so and matches its words apart), and a token typed as one (a dotted name, a path, a flag) counts as a rare term
when the whole of it is rare, even if each of its parts is common."""

from __future__ import annotations

from pathlib import Path

import pytest

from chinvex.retrieval.lexical import compound_terms, quoted_phrases
from helpers import run_cli, run_cli_in_process


def test_the_phrases_and_compounds_of_a_query():
    assert quoted_phrases('why is "cache zanzibar" slow and "x"') == ("cache zanzibar", "x")
    assert quoted_phrases('unbalanced "quote here') == () and quoted_phrases('empty "" and "  "') == ()
    assert compound_terms("requests.exceptions.InvalidJSONError") == ["requests.exceptions.invalidjsonerror"]
    assert compound_terms('flag --no-progress in src/api/x.py "a b"') == ["a b", "no-progress", "src/api/x.py"]
    assert compound_terms("plain words") == []


@pytest.fixture
def notes_context(tmp_path: Path, chinvex_home: Path) -> str:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("# Cache\n\nThe cache zanzibar mode keeps entries warm.\n")
    (notes / "b.md").write_text("# Island\n\nZanzibar is an island. The mode of the cache is cold.\n")
    (notes / "c.md").write_text("# Other\n\nNothing about islands or caches here.\n")
    assert run_cli_in_process("context", "create", "Q", "--note-root", str(notes)).code == 0
    assert run_cli_in_process("ingest", "--context", "Q", "--quiet").code == 0
    return "Q"


def _files(*args: str) -> list[str]:
    result = run_cli("search", *args, "--json")
    assert result.code == 0, result
    return [r["source_uri"].rsplit("/", 1)[-1] for r in result.json["results"]]


def test_a_quoted_phrase_is_required_in_every_mode(notes_context: str):
    assert set(_files("cache zanzibar", "--context", notes_context)) >= {"a.md", "b.md"}
    for mode in ("hybrid", "fts", "vector"):
        assert _files('"cache zanzibar"', "--context", notes_context, "--mode", mode) == ["a.md"], mode
    # The other filters still hold when the phrase is not found within them (its words are).
    assert _files('"cache zanzibar"', "--context", notes_context, "--path", "b.md") == ["b.md"]


def test_a_phrase_nothing_holds_falls_back_to_its_words_and_says_so(notes_context: str):
    result = run_cli("search", '"zanzibar cache"', "--context", notes_context, "--json")
    assert result.code == 0 and {r["source_uri"].rsplit("/", 1)[-1] for r in result.json["results"]} >= {"a.md", "b.md"}
    assert any('no chunk holds "zanzibar cache" as a phrase' in w for w in result.json["stats"]["warnings"])


def test_a_rare_dotted_name_is_kept_though_its_parts_are_common(tmp_path: Path, chinvex_home: Path):
    from chinvex.context.registry import Registry
    from chinvex.retrieval.request import SearchRequest
    from chinvex.retrieval.search import Searcher

    notes = tmp_path / "notes"
    notes.mkdir()
    for i in range(12):  # the parts, many times each (the last one alone in five): these outrank the holder
        last = "InvalidJSONError is what it raises. " * 3 if i < 5 else ""
        (notes / f"noise{i:02d}.md").write_text(
            f"# Errors {i}\n\n{last}" + "Requests raises exceptions on an invalid JSON error. " * 6 + "\n")
    (notes / "holder.md").write_text(  # the one holder, in a longer text: lower on BM25 than each part's
        "# Parsing\n\n" + "Our parser module reads the HTTP response body and hands it on; the retry loop lives "
        "elsewhere, and logging happens in the caller. " * 4 + "We catch requests.exceptions.InvalidJSONError when "
        "the body is not JSON.\n")
    assert run_cli_in_process("context", "create", "D", "--note-root", str(notes)).code == 0
    assert run_cli_in_process("ingest", "--context", "D", "--quiet").code == 0
    searcher = Searcher()
    try:
        config = Registry().resolve("D")
        found = searcher.search([config], SearchRequest(query="requests.exceptions.InvalidJSONError", k=3))
        assert any(r.source_uri.endswith("holder.md") for r in found.results), [r.source_uri for r in found.results]
    finally:
        searcher.close()
