"""The default generator: offline, deterministic, and it only says what a source says.

It works below the chunk (support.py): every sentence, dialogue turn and code definition of the
evidence is scored against the question; `judge` refuses when no sentence about the right person
says enough of what is asked; otherwise the answer is the best sentence cut to the clause that
answers (compose.py; for "when", the date it points to), plus at most two more from other chunks when they are nearly as good
(`SECOND_SHARE`), each citing its chunk. A "when" answer carries the date its words point to,
resolved against the day they were said.
"""

from __future__ import annotations

from datetime import date

from chinvex.answer.base import GenerationRequest, Generated
from chinvex.answer.compose import compose
from chinvex.answer.grounding import REFUSAL
from chinvex.answer.question import analyse_question
from chinvex.answer.support import Candidate, analyse, judge
from chinvex.answer.text import Stemmer, TermWeights

MAX_SENTENCES = 3
SECOND_SHARE = 0.9
"""A further sentence joins the answer when its score is at least this share of the best one's."""


class ExtractiveGenerator:
    name = "extractive"

    @classmethod
    def from_settings(cls, *, model: str | None, host: str | None) -> ExtractiveGenerator:
        """Offline and model-free: the settings don't apply."""
        return cls()

    def generate(self, request: GenerationRequest) -> Generated:
        stemmer = Stemmer()
        try:
            question = analyse_question(request.query)
            analysis, weights = request.analysis, request.weights_used
            if analysis is None or weights is None:
                analysis, weights = analyse(question, request.evidence, stemmer, request.weights, request.said_on)
            verdict = judge(analysis, request.evidence, min_cosine=request.min_cosine)
            notes = _notes(analysis, verdict.best)
            if not verdict.ok or verdict.best is None:
                return Generated(text=REFUSAL, reason=verdict.reason, notes=notes)
            chosen = pick(verdict.best, verdict.ranked)
            composed = compose(chosen, terms=analysis.terms, expects=analysis.question.expects, stemmer=stemmer,
                               weights=weights, said_on=lambda c: _said_on(request, c),
                               asked_about=analysis.participants)
            return Generated(text=composed.text, notes=notes, quotes=composed.quotes)
        finally:
            stemmer.close()


def pick(best: Candidate, ranked: list[Candidate]) -> list[Candidate]:
    """The best sentence, then up to two more from other chunks that score nearly as well."""
    from chinvex.answer.support import MIN_SUPPORT

    chosen = [best]
    for candidate in ranked:
        if len(chosen) >= MAX_SENTENCES:
            break
        if candidate is best or any(c.item.chunk_id == candidate.item.chunk_id for c in chosen):
            continue
        if candidate.score >= SECOND_SHARE * best.score and candidate.support >= MIN_SUPPORT[candidate.kind]:
            chosen.append(candidate)
    return chosen


def _said_on(request: GenerationRequest, candidate: Candidate) -> date | None:
    if request.said_on is None:
        return None
    return request.said_on(candidate.item, candidate.unit)


def _notes(analysis, best: Candidate | None) -> dict[str, object]:
    notes: dict[str, object] = {
        "expects": analysis.question.expects,
        "terms": sorted(analysis.terms),
        "participants": sorted(analysis.participants),
        "names": list(analysis.names),
    }
    if best is not None:
        notes.update(support=round(best.support, 3), score=round(best.score, 3), chunk=best.item.chunk_id)
    return notes


__all__ = ["ExtractiveGenerator", "TermWeights"]
