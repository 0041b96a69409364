"""Where an evidence chunk lies in its repository, which decides the role its file plays (code,
docs, tests, sample data) when an answer is chosen. The chunker cuts a long path in a chunk's
header ("…/tasks/17469/ui_messages.json"); the document's title still holds the whole path."""

from __future__ import annotations

from chinvex.answer.evidence import path_in_repository
from chinvex.answer.roles import grounds, role_weight
from chinvex.models import Range, Scores, SearchResult

DEEP = "tests/fixtures/samples/cline/tori/saoudrizwan.claude-dev/tasks/1746979936610/ui_messages.json"


def _result(header: str, title: str | None) -> SearchResult:
    return SearchResult(
        rank=1, chunk_id="c00000000000", doc_id="d0", context="t", source_type="repo",
        source_uri=f"/home/dev/chinvex/{DEEP}", text="[]", range=Range(line_start=1, line_end=1),
        scores=Scores(fts=1.0, vector=0.5, rank=1.0, blended=1.0), title=title,
        metadata={"header": header, "kind": "text"},
    )


def test_a_cut_header_takes_the_path_from_the_documents_title():
    cut = _result("…/tasks/1746979936610/ui_messages.json", title=DEEP)
    assert path_in_repository(cut) == DEEP
    path = path_in_repository(cut)
    assert role_weight(path, "repo", about_tests=False) < 0.5  # sample data, not implementation
    assert not grounds(path, "repo", about_tests=False)


def test_a_whole_header_is_read_first_and_nothing_is_guessed():
    assert path_in_repository(_result(f"{DEEP} › item", title="another title")) == DEEP
    assert path_in_repository(_result("…/tasks/1746979936610/ui_messages.json", title=None)) is None
