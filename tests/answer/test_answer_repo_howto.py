"""A developer's first question of their own repository, "How do I install it?", answered end to
end: a real repository folder ingested into a real index (SQLite, Chroma, the built-in embedder)
and asked through `answer()` as the CLI and the MCP tool ask.

Two things stood in the way, each pinned here:
- the project's name is in most of its chunks, so the embedder ranks passages that merely mention
  it above the README's Install section, which says "install" and little else: the pool's best
  lexical match must reach the evidence (`service.with_best_lexical`);
- the Install section never repeats the project's name, which a prose sentence had to say (two of
  the question's terms): a term in a large share of the context's chunks tells no passage from
  another and need not be said (`Analysis.common`).
"""

from __future__ import annotations

import pytest
from indexed import ingested

README = """# acme

acme keeps a ledger of the invoices your team sends. acme reads invoices from a folder and writes
a ledger file beside them.

## Install

```bash
python3 -m venv .venv && .venv/bin/pip install -e .
```

## Ledger format

Each line of the ledger holds an invoice number, a customer and an amount in cents.
"""

DOCS = {
    "docs/overview.md": "# Overview of acme\n\nacme is a small tool. acme has a command line and a library. "
                        "The acme library is what the acme command line calls.\n",
    "docs/commands.md": "# acme commands\n\n`acme scan` reads a folder. `acme report` prints the ledger. "
                        "`acme check` verifies it. Every acme command takes --folder.\n",
    "docs/design.md": "# acme design\n\nacme keeps one ledger per folder; acme never edits an invoice. "
                      "The acme ledger is append-only.\n",
    "acme/cli.py": '"""The acme command line: acme scan, acme report and acme check."""\n\n\n'
                   'def main() -> int:\n    """Run the acme command named on the command line."""\n    return 0\n',
    "acme/ledger.py": '"""The acme ledger: one line per invoice."""\n\n\n'
                      'def append(line: str) -> None:\n    """Append one invoice line to the acme ledger."""\n',
}


@pytest.fixture(scope="module")
def repository(tmp_path_factory):
    folder = tmp_path_factory.mktemp("acme")
    (folder / "README.md").write_text(README, "utf-8")
    for path, text in DOCS.items():
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        (folder / path).write_text(text, "utf-8")
    return ingested(tmp_path_factory.mktemp("repo_home"), "acme", {"repos": [str(folder)]})


def test_how_to_install_is_answered_from_the_readme_install_section(repository):
    from chinvex.answer.service import answer

    response = answer(repository, "How do I install acme?", generator="extractive")
    assert response.grounded, response.errors
    # the command, shown as code
    assert response.answer.startswith("`python3 -m venv .venv && .venv/bin/pip install -e .` [chunk:"), response.answer
    assert response.citations[0].source_uri.endswith("README.md")


def test_a_question_about_something_the_repository_never_says_is_still_refused(repository):
    from chinvex.answer.service import answer

    response = answer(repository, "How do I uninstall acme?", generator="extractive")
    assert not response.grounded, response.answer
    response = answer(repository, "Who is the CEO of acme?", generator="extractive")
    assert not response.grounded, response.answer


def _result(n: int, *, fts: float | None, blended: float, path: str = "docs/a.md"):
    from chinvex.models import SearchResult
    from chinvex.models.responses import Range, Scores

    return SearchResult(rank=n + 1, chunk_id=f"c{n:011d}", doc_id=f"d{n}", context="t", source_type="repo",
                        source_uri=f"/repo/{path}", text="text", range=Range(line_start=1, line_end=1),
                        scores=Scores(fts=fts, blended=blended, rank=blended), metadata={"header": path})


def test_the_best_lexical_match_of_the_pool_takes_the_last_place_of_the_evidence():
    from chinvex.answer.service import with_best_lexical

    pool = [_result(i, fts=1.0, blended=1 - i / 100) for i in range(6)] + [_result(6, fts=9.0, blended=0.5)]
    chosen = with_best_lexical(pool, 4, about_tests=False)
    assert [r.chunk_id for r in chosen] == [pool[0].chunk_id, pool[1].chunk_id, pool[2].chunk_id, pool[6].chunk_id]
    # already among the first k: nothing changes
    assert with_best_lexical(pool[:3] + pool[6:], 4, about_tests=False) == pool[:3] + pool[6:]
    # its BM25 weighs by role as the blend does: sample data does not push out the docs
    fixture = [*pool[:6], _result(7, fts=2.0, blended=0.5, path="tests/fixtures/sample.json")]
    assert with_best_lexical(fixture, 4, about_tests=False) == fixture[:4]
    # no lexical match at all (a vector-only pool): the blend's order
    vectors = [_result(i, fts=None, blended=1 - i / 100) for i in range(6)]
    assert with_best_lexical(vectors, 4, about_tests=False) == vectors[:4]



def test_a_term_is_common_only_in_a_fifth_of_the_chunks_and_in_five_of_them_at_least():
    """"meaning" in two chunks of three still tells them apart: a sentence saying only "life" must
    not answer "What is the meaning of life?" in a small notes folder. In 10 chunks of 20 it does
    not."""
    from support_cases import result

    from chinvex.answer.evidence import build_evidence
    from chinvex.answer.question import analyse_question
    from chinvex.answer.support import analyse
    from chinvex.answer.text import Stemmer, TermWeights

    stemmer = Stemmer()
    meaning, life = sorted(stemmer.stems("meaning")), sorted(stemmer.stems("life"))
    evidence = build_evidence([result("The tomatoes have a short life after picking.", path="notes/garden.md")])

    def common(df: int, total: int) -> frozenset[str]:
        counts = {**{s: df for s in meaning}, **{s: 1 for s in life}}
        analysis, _ = analyse(analyse_question("What is the meaning of life?"), evidence, stemmer,
                              lambda stems: TermWeights(counts, total))
        return analysis.common

    assert common(2, 3) == frozenset()
    assert common(10, 20) == frozenset(meaning)
