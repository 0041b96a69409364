"""The default generator: offline, deterministic, and it only says what a source says.

It works below the chunk (support.py): every sentence, dialogue turn and code definition of the
evidence is scored against the question; `judge` refuses when no sentence about the right person
says enough of what is asked; otherwise the answer is the best sentence cut to the clause that
answers (compose.py), plus at most two more from other chunks when they are nearly as good
(`SECOND_SHARE`), each citing its chunk. A question asking for a span (a date, a count, a
place, a name, yes or no) is answered by that span, its sentence quoted with the citation.
Text that is not a statement (tool-call arguments, patches, listings, usage lines, checklists)
answers only questions about it.
"""

from __future__ import annotations

from datetime import date

from chinvex.answer.base import GenerationRequest, Generated
from chinvex.answer.compose import compose
from chinvex.answer.grounding import REFUSAL
from chinvex.answer.question import analyse_question
from chinvex.answer.judgement import Candidate
from chinvex.answer.support import analyse, judge
from chinvex.answer.text import Stemmer, TermWeights

MAX_SENTENCES = 3
MAX_ITEMS = 8
"""Checklist items a list answer gathers (`pick`)."""
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
            stated = statements_only(verdict.ranked, analysis.forms)
            if not stated:
                forms = sorted({c.unit.form for c in verdict.ranked})
                return Generated(text=REFUSAL, notes=notes,
                                 reason=f"The passages that say this are not statements ({', '.join(forms)}).")
            chosen = pick(verdict.best if verdict.best in stated else stated[0], stated,
                          several=analysis.question.many)
            composed = compose(chosen, terms=analysis.terms, expects=analysis.question.expects, stemmer=stemmer,
                               weights=weights, said_on=lambda c: _said_on(request, c),
                               asked_about=analysis.participants, question=analysis.question)
            return Generated(text=composed.text, notes=notes, quotes=composed.quotes)
        finally:
            stemmer.close()


def statements_only(ranked: list[Candidate], asked: frozenset[str]) -> list[Candidate]:
    """The candidates that state something, or are of a form the question asks about: a tool
    call's arguments, a patch, a file listing, a usage line or a checklist item answers only a
    question about it (units.form_of)."""
    return [c for c in ranked if not c.unit.form or c.unit.form in asked]


def pick(best: Candidate, ranked: list[Candidate], several: bool = False) -> list[Candidate]:
    """The best sentence, then up to two more from other chunks that score nearly as well. A
    question asking for several things answered from a checklist ("Which follow-ups are still
    open?") gathers its items from one chunk too, where a checklist lists them side by side (up to
    `MAX_ITEMS`). Sentences of prose or chat stay one per chunk: on LoCoMo, gathering them from
    one chunk too lowered the F1 of list answers (bench/RESULTS.md, session 23)."""
    from chinvex.answer.support import MIN_SUPPORT

    items = several and best.unit.form == "checklist"
    chosen = [best]
    for candidate in ranked:
        if len(chosen) >= (MAX_ITEMS if items else MAX_SENTENCES):
            break
        same_list = items and candidate.unit.form == "checklist"
        if candidate is best or (not same_list and any(c.item.chunk_id == candidate.item.chunk_id for c in chosen)):
            continue
        if candidate.score >= SECOND_SHARE * best.score and candidate.support >= MIN_SUPPORT[candidate.kind]:
            chosen.append(candidate)
    if items:  # a checklist's items in the order it lists them
        listed = sorted((c for c in chosen if c.unit.form == "checklist"), key=lambda c: (c.unit.chunk, c.unit.order))
        chosen = listed + [c for c in chosen if c.unit.form != "checklist"]
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
