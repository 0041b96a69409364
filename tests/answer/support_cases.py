"""Evidence built by hand for the answer-support tests: search results made from text (real
models, no index), and the verdict and composed answer the extractive path gives for them."""

from __future__ import annotations

from datetime import date

from chinvex.answer.compose import compose
from chinvex.answer.evidence import build_evidence
from chinvex.answer.question import analyse_question
from chinvex.answer.support import analyse, judge
from chinvex.answer.text import Stemmer, TermWeights
from chinvex.models import Range, Scores, SearchResult


def result(text: str, *, path: str = "notes/talk.md", rank: float = 1.0, vector: float | None = 0.6,
           header: str | None = None, n: int = 0) -> SearchResult:
    source_type = "repo" if path.endswith(".py") else "note"
    return SearchResult(
        rank=n + 1, chunk_id=f"c{n:011d}", doc_id=f"d{n}", context="t", source_type=source_type,
        source_uri=f"/root-of-source/{path}", text=text, range=Range(line_start=1, line_end=text.count("\n") + 1),
        scores=Scores(fts=1.0, vector=vector, rank=rank, blended=rank),
        metadata={"header": header or path, "kind": "code" if path.endswith(".py") else "text",
                  "language": "python" if path.endswith(".py") else "markdown"},
    )


def verdict_for(question: str, results: list[SearchResult], said_on: date | None = None, min_cosine=None):
    evidence = build_evidence(results)
    stemmer = Stemmer()
    analysis, weights = analyse(analyse_question(question), evidence, stemmer, lambda stems: TermWeights.uniform(),
                                (lambda item, unit: said_on) if said_on else None)
    return analysis, weights, judge(analysis, evidence, min_cosine=min_cosine), stemmer


def composed_answer(question: str, results: list[SearchResult], said_on: date | None = None):
    """The answer the extractive generator composes from `results`, as asked (spans, names,
    phrases): the statements among the ranked sentences, the best and those nearly as good."""
    from chinvex.answer.generators.extractive import pick, statements_only

    analysis, weights, verdict, stemmer = verdict_for(question, results, said_on=said_on)
    try:
        assert verdict.ok, verdict.reason
        stated = statements_only(verdict.ranked, analysis.forms)
        chosen = pick(verdict.best if verdict.best in stated else stated[0], stated,
                      several=analysis.question.many)
        return compose(chosen, terms=analysis.terms, expects=analysis.question.expects, stemmer=stemmer,
                       weights=weights, said_on=lambda c: said_on, asked_about=analysis.participants,
                       question=analysis.question)
    finally:
        stemmer.close()


def answered(question: str, talk: str):
    """The composed answer from the best sentence of `talk` (which must answer `question`)."""
    analysis, weights, verdict, stemmer = verdict_for(question, [result(talk)])
    assert verdict.ok, verdict.reason
    return compose([verdict.best], terms=analysis.terms, expects=analysis.question.expects, stemmer=stemmer,
                   weights=weights, said_on=lambda c: None, asked_about=analysis.participants)


TALK = (
    "**[D1:1] Caroline:** Hey Mel! Good to see you!\n\n"
    "**[D1:2] Melanie:** Hey Caroline! I'm swamped with the kids & work.\n\n"
    "**[D1:3] Caroline:** I went to a LGBTQ support group yesterday and it was so powerful.\n\n"
    "**[D1:4] Melanie:** Wow! I ran a charity race for mental health last Saturday, it made me realize "
    "how much self-care matters.\n\n"
    "**[D1:5] Caroline:** That charity race sounds great, Mel!"
)
