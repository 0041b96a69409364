"""Why nothing retrieved answers, said with what was retrieved: the nearest passages, where they
are, and which of the question's words they state and which they leave out.

A refusal that says only "the best covers 0 % of its terms" hides that passages were found and
how close they came (a sentence naming "hybrid" and "scores" but not "combine"); a reader
checking the refusal wants those places, and an agent wants to know which word to ask about
instead. Pure: reads the candidates `support.analyse` scored.
"""

from __future__ import annotations

from chinvex.answer.judgement import Analysis, Candidate

NEAREST = 2
"""How many passages (of different chunks) a refusal names."""


def nearest(analysis: Analysis, pool: list[Candidate], limit: int = NEAREST) -> list[Candidate]:
    """The sentences saying the most of the question in their own words, one per chunk, best
    first (statements before tool calls, listings and other text that is not one)."""
    ordered = sorted(pool, key=lambda c: (bool(c.unit.form), -len(c.said_terms), -c.support, c.unit.chunk,
                                          c.unit.order))
    chosen: list[Candidate] = []
    for candidate in ordered:
        if not candidate.said_terms and chosen:
            break
        if candidate.said_terms and all(c.item.chunk_id != candidate.item.chunk_id for c in chosen):
            chosen.append(candidate)
        if len(chosen) >= limit:
            break
    return chosen


def nearest_text(analysis: Analysis, pool: list[Candidate]) -> str:
    """"the nearest, docs/A.md:3-9, says “hybrid” but not “combine” or “scores”; …", or "" when no
    retrieved sentence states any of the question's words."""
    parts = []
    for candidate in nearest(analysis, pool):
        said = _words(analysis, candidate.said_terms)
        missing = _words(analysis, analysis.terms - candidate.said_terms)
        what = f"says {_listed(said, 'and')}" + (f" but not {_listed(missing, 'or')}" if missing else "")
        form = f" (a {candidate.unit.form}, not a statement)" if candidate.unit.form else ""
        parts.append(f"{candidate.item.where()} {what}{form}")
    if not parts:
        return ""
    return ("the nearest, " if len(parts) == 1 else "the nearest: ") + "; ".join(parts)


def _words(analysis: Analysis, stems: frozenset[str]) -> list[str]:
    """The question's own words for `stems`, in the question's order."""
    words = [analysis.term_words.get(s, s) for s in stems]
    order = {w: i for i, w in enumerate(analysis.term_words.values())}
    return sorted(dict.fromkeys(words), key=lambda w: order.get(w, len(order)))


def _listed(words: list[str], conjunction: str) -> str:
    quoted = [f"“{w}”" for w in words]
    if len(quoted) <= 1:
        return "".join(quoted)
    return f"{', '.join(quoted[:-1])} {conjunction} {quoted[-1]}"
