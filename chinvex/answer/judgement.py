"""What the answer gate works on: each sentence that might answer (`Candidate`, with what
support.analyse measured about it), the question read against the evidence (`Analysis`) and the
gate's decision (`Verdict`). Kept apart from support.py so that the confidence model
(confidence.py), which support.judge calls, can read them without importing the gate."""

from __future__ import annotations

from dataclasses import dataclass, field

from chinvex.answer.evidence import Evidence
from chinvex.answer.question import Question
from chinvex.answer.units import Unit


@dataclass
class Candidate:
    unit: Unit
    item: Evidence
    kind: str
    support: float
    own: float
    specific: float
    typed: bool
    about: bool
    names: bool
    prior: float
    score: float = 0.0
    others: frozenset[str] = field(default_factory=frozenset)
    following: str | None = None
    """The next sentence of the same turn or paragraph (an answer may go on there)."""
    preceding: str | None = None
    """The sentence before it in the same turn or paragraph (the title or date it speaks of may be
    there: "“Brave” means a lot to me. It's about being courageous.")."""
    said: int = 0
    """How many of the question's terms the sentence states in words (not only in a name)."""
    on_subject: bool = True
    """Its passage (the chunk) mentions everything of the question's subject."""
    said_terms: frozenset[str] = frozenset()
    """The question's terms (stems) the sentence states in words."""
    rank_value: float = 0.0
    """The learned ranker's score among the sentences that may answer (ranker.py; 0 until ranked)."""


@dataclass
class Analysis:
    question: Question
    terms: frozenset[str]
    participants: frozenset[str]
    names: tuple[str, ...]
    candidates: list[Candidate]
    subject: tuple[tuple[str, frozenset[str]], ...] = ()
    """What the question is about beyond its people (`subject_of`): each (words, stems) must be
    mentioned, by one of its stems, in the passage an answer comes from."""
    min_confidence: float | None = None
    """The refusal point `judge` uses when it is not given one (the service sets the context's or
    the caller's, so that a generator judging on its own uses it too)."""
    term_words: dict[str, str] = field(default_factory=dict)
    """Each term (stem) -> the question's word it comes from, in the question's order (what a
    refusal names)."""
    optional: frozenset[str] = frozenset()
    """Terms a sentence gains by saying but need not say: the words a question asks by ("long"
    and "last" in "How long did it last?"; Question.asked_by). They weigh `OPTIONAL_SHARE` in the
    whole the shares of the question are shares of, and a sentence's shares are capped at 1."""
    sentence_cosine: float | None = None
    """The best cosine between the question and a sentence that may answer, read (service) only
    when every chunk retrieved is far from the question: a note of several topics embeds far
    from a question one of its sentences answers."""
    common: frozenset[str] = frozenset()
    """Terms in so many of the context's chunks that saying them tells no passage from another
    (`support._everywhere`): "chinvex" in "How do I install chinvex?" asked of chinvex's own
    repository, whose README's Install section need not repeat it. A prose or code sentence need
    not say them to say enough of the question (`MIN_SAID_TERMS`)."""
    forms: frozenset[str] = frozenset()
    """The forms of text that is not a statement the question asks about (statements.forms_asked):
    a tool call, a patch or a checklist answers only such a question, whichever generator cites it."""



@dataclass
class Verdict:
    ok: bool
    best: Candidate | None
    reason: str | None
    ranked: list[Candidate]
    confidence: float | None = None
    """The calibrated probability that an answer resting on `best` is right (0 when no sentence
    may answer; confidence.py)."""
    features: dict[str, float] | None = None
    """What the model read about `best` (bench/fit_gate.py records them)."""
    pool: list[Candidate] = field(default_factory=list)
    """The sentences that may answer, which `best` was chosen from (bench/fit_ranker.py)."""
    floor: list[bool] = field(default_factory=list)
    """For each of `pool`: does it clear the hand-set support thresholds?"""
