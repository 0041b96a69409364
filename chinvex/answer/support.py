"""Which sentence of the evidence answers the question, and is any of them good enough?

Retrieval ranks chunks; an answer is made of sentences. Every unit of the evidence (a sentence
of prose, a sentence of a dialogue turn, a code definition with its docstring) becomes a
`Candidate` scored against the question:

- *support*: the IDF-weighted share of the question's topic terms that the sentence itself
  says, plus half of what its immediate context adds (the sentence before it in the same turn or
  paragraph, the question the previous speaker asked, the file/heading path of a code or prose
  chunk). Words a unit only carries inside identifiers count for less: a function named after a
  question states nothing about its subject.
- *specific*: how much it says beyond the question (rare words the question does not use). "I'm
  off to do some research" shares the question's word and says nothing; "Researching adoption
  agencies" answers "What did she research?".
- *typed*: whether it holds the kind of thing asked for (answer_types).
- *about*: in a dialogue, whether it is about the person the question names (dialogue_units.py
  resolves "I", "you" and names).
- *names*: whether every other name the question uses (a place, a product, an identifier)
  appears with it.
- *prior*: how well retrieval ranked its chunk, times the role weight of its file (roles.py).

`judge` then decides. What is logic refuses outright: nothing retrieved, a name or subject the
question uses that no passage mentions, no sentence about the right person holding the kind of
answer asked for. Of the sentences that may answer, the best is chosen (one clearing the
hand-set support thresholds first), and the calibrated model (confidence.py) says how likely an
answer resting on it is to be right; below the refusal point it is refused. The thresholds
(`MIN_SUPPORT`, `MIN_OWN`, `CONTRAST`) are a feature of that model for conversation evidence and
still a floor for prose and code, which the model was not fitted on. These are checks of what
the cited sentences say, so the same `judge` gates every generator (service._gate).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import date

from chinvex.answer.answer_types import holds
from chinvex.answer.confidence import confidence, default_min_confidence, gate_features
from chinvex.answer.judgement import Analysis, Candidate, Verdict
from chinvex.answer.statements import forms_asked
from chinvex.answer.dates import resolve
from chinvex.answer.attribution import asked_person
from chinvex.answer.evidence import Evidence
from chinvex.answer.evidence_units import split_evidence
from chinvex.answer.question import Question
from chinvex.answer.nearest import nearest_text
from chinvex.answer.ranker import learned, ranked
from chinvex.answer.question_names import (
    USER_ROLES,
    question_names,
    speakers_of,
    subject_of,
)
from chinvex.answer.roles import grounds, role_of, role_weight
from chinvex.answer.statements import IDENTIFIER, code_prose, statements
from chinvex.answer.text import Stemmer, TermWeights
from chinvex.answer.units import Unit, checkbox_words
from chinvex.retrieval.lexical import index_text

MIN_SUPPORT = {"dialogue": 0.35, "prose": 0.45, "code": 0.45}
"""Least support of the chosen sentence, per kind of evidence."""
CONTRAST = 0.1
"""Refuse when a sentence about someone else supports the question by this much more..."""
CONFIDENT = 0.6
"""...unless the best sentence about the right person supports it at least this well: two
people can both have done what is asked (both paint, both read), and a clear statement of the
one asked about is not outweighed by a fuller one of the other."""
RELATED_COSINE = {"builtin": 0.3}
"""Per embedder, the raw cosine of the best chunk below which nothing retrieved is about the
question. Set for the built-in model between the cosines that questions about a repository
reach and those of general-knowledge questions asked against it, low enough to keep nearly all
of LoCoMo's answerable questions (bench/answers.py measures both). The provider's other model
(all-MiniLM-L6-v2-q8, the same network with integer products) shares the scale. Other embedders
have other scales and get no such gate.
A sentence that says the question clearly (support of at least `CONFIDENT`) is answered anyway:
a long chunk's embedding can sit far from a short question one of its turns answers."""
RELATED_SENTENCE_COSINE = 0.4
"""The cosine (built-in model) of the question and a sentence that may answer above which that
sentence is about the question though its whole chunk is not (`Analysis.sentence_cosine`): "How
long does a rollback take?" and "Deploys go through Argo CD; rollbacks take about 90 seconds."
in a meeting note of four topics. Higher than the chunks' point, since a short text sits nearer
to a short question; off-topic questions stay refused (bench/answers.py)."""
SENTENCES_EMBEDDED = 3
"""How many of the sentences that may answer (best first) are embedded for that check."""
OPTIONAL_SHARE = 0.5
"""How much of the question an optional term is (`Analysis.optional`, "long" of "How long…"): a
sentence not saying it still says most of the question, one saying it says more."""
CONTEXT_SHARE = 0.5
"""What the words around a sentence (previous sentence, the question it replies to, the file or
heading path) add to its support, relative to its own words."""
IDENTIFIER_SHARE = 0.4
"""What a term found only inside a code identifier adds, relative to one stated in words."""

COMMON_NAME_SHARE = 0.2
"""A name in more than this share of a context's chunks need not appear with the sentence that
answers (`_everywhere`): one chunk in five saying it is no sign of which one answers."""
COMMON_TERM_CHUNKS = 5
"""...and a term of the question (not a name) is that common only in this many chunks at least: in a
notes folder of three chunks, "meaning" in two of them still tells them apart, and "What is the
meaning of life?" must not be answered by a sentence saying "life" alone (`Analysis.common`)."""
MIN_OWN = 0.2
"""Least share of the question's terms the chosen sentence must say itself (not its context)."""
MIN_SAID_TERMS = 2
"""Least number of the question's terms (all of them when it has fewer) the chosen sentence
states in words. Shares alone let one word carry a short question: "What is the meaning of
life?" has two terms, so any sentence saying "life" covered half of it and passed. Not for a
dialogue turn: a reply leans on the turn that asked ("Did you go?" "Yes, last Friday."), which
its support already counts, and states few of the question's words itself."""
W_SPECIFIC = 0.3
W_TYPED = 0.25
W_PRIOR = 0.3
W_NAMED = 0.1
"""Bonus of a definition named for what the question asks about (its name's parts are mostly
the question's terms)."""
W_PERIOD = 0.4
"""Bonus (or penalty) when what a sentence dates falls in (or outside) the month or year asked about."""
W_TENSE = 0.3
"""Penalty for a plan ("we're thinking about going camping") answering what happened, and back."""
EXPLANATION_WORDS = 6
"""A code unit explains (answers how or why) when its docstring or comments have this many words."""
STRICT_TYPES = frozenset({"number", "place", "person", "reason", "duration", "frequency", "title"})
"""Kinds of answer a sentence must hold to answer at all (a date may come from when it was said)."""
_PLAN = re.compile(r"\b(?:going\s+to|gonna|will|\w+'ll|plan(?:s|ning)?\s+(?:to|on)|thinking\s+(?:about|of)|"
                   r"hop(?:e|ing)\s+to|want\s+to|next\s+(?:week|month|year|weekend)|can't\s+wait|soon|tomorrow)\b",
                   re.IGNORECASE)

CHECKBOX_FUNCTION_WORDS = frozenset({"done"})
"""Words of a checklist's state that are function words elsewhere ("What have you done?"): a
term of the question only when the evidence holds a checklist."""

_NOT_ALNUM = re.compile(r"[\W_]+")


def analyse(question: Question, evidence: list[Evidence], stemmer: Stemmer,
            weights_for: Callable[[Iterable[str]], TermWeights],
            said_on: Callable[[Evidence, Unit], date | None] | None = None) -> tuple[Analysis, TermWeights]:
    """Candidates for every unit of the evidence, best first, and the term weights used (read
    once for the question's terms and every word of the evidence)."""
    kinds, units = split_evidence([(item.text, item.source_type, item.metadata) for item in evidence])
    analysis, name_stems, code_terms = _read_question(question, units, stemmer)
    if not analysis.terms or not units:
        return analysis, TermWeights.uniform()
    reading = _read_evidence(analysis, evidence, kinds, units, stemmer, weights_for)
    distinctive = [forms for forms in name_stems if not _everywhere(forms[0], reading.weights)]
    analysis.common = frozenset(t for t in analysis.terms if _everywhere(frozenset({t}), reading.weights)
                                and reading.weights.df.get(t, 0) >= COMMON_TERM_CHUNKS)
    for i in range(len(units)):
        names = name_stems if reading.kinds[units[i].chunk] == "dialogue" else distinctive
        candidate = _candidate(analysis, reading, i, names, code_terms, said_on)
        if candidate is not None:
            analysis.candidates.append(candidate)
    analysis.candidates.sort(key=lambda c: (-c.score, c.unit.chunk, c.unit.order))
    return analysis, reading.weights


def _everywhere(stems: frozenset[str], weights: TermWeights) -> bool:
    """Is a name the question uses in so many of the context's chunks (every stem of it) that
    saying it tells no passage from another? "For which HTTP verb does Requests not follow
    redirects?" asked of the requests library: "HTTP" and "Requests" are in a large share of its
    chunks, and the sentence that answers ("By default Requests will perform location redirection
    for all verbs except HEAD") need not repeat the first. A name the index has not counted is
    taken as rare. Only for prose and code: in a conversation the names are people and the places
    they go, which the sentence that answers must be about however often they are mentioned
    (held out on LoCoMo, exempting them cost a conversation answers: bench/RESULTS.md, "Answers
    over documentation prose")."""
    return bool(stems) and all(weights.df.get(s, 0) > COMMON_NAME_SHARE * weights.total for s in stems)


def _read_question(question: Question, units: list[Unit], stemmer: Stemmer,
                   ) -> tuple[Analysis, list[tuple[frozenset[str], ...]], frozenset[str]]:
    """The question read against the evidence's speakers: its `Analysis` (no candidates yet),
    the stems of each other name it uses (in two forms: with the parts of a compound or
    camel-cased name, as the question's terms are read, and as a word of a sentence is read:
    "YouTube" is "you tube youtub" in one and "youtub" in the other), and the stems of the words
    it spells as identifiers."""
    speakers = speakers_of(units)
    words = list(question.words)
    named = [w for w in words if (w[:1].isupper() or w.lower() in speakers)
             and any(asked_person(w, s) for s in speakers)]
    participants = frozenset(s for s in speakers if any(asked_person(w, s) for w in named))
    topic = [w for w in words if w not in named]
    if any(u.form == "checklist" for u in units):
        # "Which follow-ups are done?": before a checklist, "done" asks about the ticked boxes
        topic += [w for w in re.findall(r"[A-Za-z]+", question.text) if w.lower() in CHECKBOX_FUNCTION_WORDS]
    terms = stemmer.stems(index_text(" ".join(topic))) if topic else frozenset()
    other_names = tuple(n for n in question_names(question.text)
                        if not any(asked_person(part, s) for part in n.split() for s in speakers))
    name_stems = [(stemmer.stems(index_text(n)), stemmer.stems(n)) for n in other_names]
    # words the question itself spells as identifiers ("current_node") are found in code as names
    code_terms = stemmer.stems(index_text(" ".join(IDENTIFIER.findall(question.text))))
    subject = tuple((phrase, stems) for phrase in subject_of(question.text, speakers)
                    if (stems := stemmer.stems(index_text(phrase)) & terms))
    term_words = {stem: word for word in topic for stem in sorted(stemmer.stems(index_text(word)) & terms)}
    optional = stemmer.stems(index_text(" ".join(question.asked_by))) & terms if question.asked_by else frozenset()
    return (Analysis(question, terms, participants, other_names, [], subject, forms=forms_asked(terms, stemmer, question.expects),
                     term_words=term_words, optional=optional), name_stems, code_terms)


@dataclass
class _Reading:
    """What `analyse` reads once from the evidence (per chunk and per unit) to score each unit."""

    evidence: list[Evidence]
    kinds: list[str]
    units: list[Unit]
    unit_stems: list[frozenset[str]]
    weights: TermWeights
    total: float
    headers: list[frozenset[str]]
    on_subject: list[bool]
    chunk_weight: list[float]
    chunk_grounds: list[bool]
    said_stems: list[frozenset[str]]
    defined: list[frozenset[str]]
    names_asked: list[bool]
    holding: list[bool]
    asked: dict[tuple[int, int], frozenset[str]]
    best_rank: float
    echo: str


def _read_evidence(analysis: Analysis, evidence: list[Evidence], kinds: list[str], units: list[Unit],
                   stemmer: Stemmer, weights_for: Callable[[Iterable[str]], TermWeights]) -> _Reading:
    """Stems, term weights, file roles and statements of the evidence, for `_candidate`."""
    question, terms = analysis.question, analysis.terms
    unit_stems = stemmer.stem_sets([u.analysed for u in units])
    weights = weights_for(frozenset(terms).union(*unit_stems))
    total = (weights.weight(terms - analysis.optional) + OPTIONAL_SHARE * weights.weight(analysis.optional)) or 1.0

    headers = stemmer.stem_sets([index_text(_header(item)) for item in evidence])
    on_subject = _mentions_subject(len(evidence), units, unit_stems, analysis.subject)
    tests = question.about_tests
    paths = [item.relative_path() for item in evidence]
    chunk_roles = [role_of(path or "") if item.source_type == "repo" else "code" for item, path in zip(evidence, paths)]
    chunk_weight = [role_weight(path, item.source_type, tests, question.how_to) for item, path in zip(evidence, paths)]
    chunk_grounds = [grounds(path, item.source_type, tests) for item, path in zip(evidence, paths)]
    roles = [chunk_roles[u.chunk] for u in units]
    said_stems, defined, names_asked = statements(units, roles, terms, stemmer, names_said=question.expects == "name",
                                                  asked_forms=analysis.forms)
    if analysis.forms & {"checklist"}:
        # a checklist item's box says whether it is open or done, as its words would
        boxes = [stemmer.stems(index_text(checkbox_words(u.text))) & terms if u.form == "checklist" else frozenset()
                 for u in units]
        unit_stems = [s | b for s, b in zip(unit_stems, boxes)]
        said_stems = [s | b for s, b in zip(said_stems, boxes)]
    holding = [holds(question.expects, u.text) for u in units]  # the kind of answer asked for
    if question.expects == "title" and question.kind_noun:
        # a title names the kind of thing asked for: "I'm reading “The Lean Startup”" says a book
        kind_stems = stemmer.stems(question.kind_noun) & terms
        unit_stems = [s | kind_stems if t else s for s, t in zip(unit_stems, holding)]
        said_stems = [s | kind_stems if t else s for s, t in zip(said_stems, holding)]
    asked = _asked_before(units, unit_stems)
    best_rank = max((item.result.scores.rank for item in evidence), default=0.0) or 1.0
    return _Reading(evidence, kinds, units, unit_stems, weights, total, headers, on_subject, chunk_weight,
                    chunk_grounds, said_stems, defined, names_asked, holding, asked, best_rank,
                    echo=_normalised(question.text))


def _candidate(analysis: Analysis, r: _Reading, i: int, name_stems: list[tuple[frozenset[str], ...]],
               code_terms: frozenset[str], said_on: Callable[[Evidence, Unit], date | None] | None,
               ) -> Candidate | None:
    """Unit `i` scored against the question (None for a unit that cannot answer at all)."""
    question, terms, participants = analysis.question, analysis.terms, analysis.participants
    units, unit_stems, weights, total = r.units, r.unit_stems, r.weights, r.total
    u, stems = units[i], unit_stems[i]
    if u.question or u.heading or not u.text.strip():
        return None
    if r.echo and len(u.text) >= len(r.echo) and r.echo in _normalised(u.text):
        return None  # a golden file or a test quoting the question does not answer it
    item = r.evidence[u.chunk]
    kind = r.kinds[u.chunk]
    said = stems & (r.said_stems[i] | r.defined[i] | code_terms)
    own = min(1.0, (weights.weight(terms & said) + IDENTIFIER_SHARE * weights.weight(terms & (stems - said))) / total)
    context: set[str] = set()
    if i > 0 and units[i - 1].chunk == u.chunk and units[i - 1].block == u.block:
        context |= unit_stems[i - 1]
    if kind == "dialogue":
        context |= r.asked.get((u.chunk, u.block - 1), frozenset())
    else:
        context |= r.headers[u.chunk]
    around = weights.weight((terms & context) - stems) / total
    support = min(1.0, own + CONTEXT_SHARE * around)
    new = [s for s in stems - terms if len(s) > 2 and not s.isdigit()]
    specific = min(1.0, sum(sorted((weights.idf(s) for s in new), reverse=True)[:4]) / 6.0)
    near = stems | context | r.headers[u.chunk]
    has_names = all(any(ns and ns <= near for ns in forms) for forms in name_stems)
    same_turn = i > 0 and units[i - 1].chunk == u.chunk and units[i - 1].block == u.block
    preceding = units[i - 1].text if same_turn else None
    if kind == "code" and question.expects in ("manner", "reason"):
        # how or why something is done is said in words (a docstring, a comment), not in code
        typed = len(code_prose(u.text, literals=False).split()) >= EXPLANATION_WORDS
    else:
        typed = r.holding[i] or (same_turn and r.holding[i - 1])
    timing = _timing(question, u, item, said_on)
    about = ((not participants) or kind != "dialogue" or bool(u.about & participants)) and \
        r.chunk_grounds[u.chunk]
    others = frozenset(u.about - participants) if participants and kind == "dialogue" else frozenset()
    prior = (item.result.scores.rank / r.best_rank) * r.chunk_weight[u.chunk]
    nxt = units[i + 1] if i + 1 < len(units) else None
    following = nxt.text if nxt is not None and nxt.chunk == u.chunk and nxt.block == u.block else None
    candidate = Candidate(u, item, kind, support, own, specific, typed, about, has_names, prior,
                          others=others, following=following, preceding=preceding, said=len(terms & said),
                          said_terms=frozenset(terms & said),
                          on_subject=r.on_subject[u.chunk])
    candidate.score = r.chunk_weight[u.chunk] * (
        support + W_SPECIFIC * specific + W_TYPED * typed + W_PRIOR * prior + W_NAMED * r.names_asked[i]) + timing
    return candidate


def _asked_before(units: list[Unit], unit_stems: list[frozenset[str]]) -> dict[tuple[int, int], frozenset[str]]:
    """What each turn asked, by (chunk, block): its questions, or all of it when it is a chat
    request ("Suggest a trip near Lisbon." is answered by "Sintra is forty minutes away.")."""
    asked: dict[tuple[int, int], frozenset[str]] = {}
    for u, stems in zip(units, unit_stems):
        if u.question or (u.speaker or "").lower() in USER_ROLES:
            asked[(u.chunk, u.block)] = asked.get((u.chunk, u.block), frozenset()) | stems
    return asked


def _mentions_subject(chunks: int, units: list[Unit], unit_stems: list[frozenset[str]],
                      subject: tuple[tuple[str, frozenset[str]], ...]) -> list[bool]:
    """Per chunk: does it mention every part of the question's subject (by one of its stems)?"""
    mentioned: list[set[str]] = [set() for _ in range(chunks)]
    for u, stems in zip(units, unit_stems):
        mentioned[u.chunk] |= stems
    return [all(stems & words for _, stems in subject) for words in mentioned]


def judge(analysis: Analysis, evidence: list[Evidence], restrict: Callable[[Candidate], bool] | None = None,
          min_cosine: float | None = None, min_confidence: float | None = None) -> Verdict:
    """Is there a sentence that answers, and how likely is an answer resting on it to be right?
    `restrict` limits the sentences that may (the gate of an LLM answer only looks at the chunks
    it cites). The refusal point is `min_confidence`, else the analysis's, else the model's
    default (confidence.py)."""
    pool = [c for c in analysis.candidates if restrict is None or restrict(c)]
    refused = _refused_outright(analysis, evidence, pool)
    if refused is not None:
        return refused
    # What the evidence as a whole offers (the same for an answer from any of its chunks): the
    # features of the chosen sentence do not depend on which chunks an answer cites.
    everywhere = [c for c in analysis.candidates if _may_answer(analysis, c)]
    fitting = [c for c in everywhere if restrict is None or restrict(c)]
    cosines = [e.result.scores.vector for e in evidence if e.result.scores.vector is not None]
    unrelated = far_chunks(evidence, min_cosine) and \
        (analysis.sentence_cosine is None or analysis.sentence_cosine < RELATED_SENTENCE_COSINE)
    strongest = max(everywhere, key=lambda c: (c.support if c.own >= MIN_OWN else 0.0, c.score), default=None)
    have = strongest.support if strongest is not None and strongest.own >= MIN_OWN else 0.0
    rival = _rival(analysis, analysis.candidates)
    if unrelated and have < CONFIDENT:
        # Whole chunks far from the question in meaning, and no sentence that clearly says it.
        return Verdict(False, None, f"Nothing retrieved is about this question (best similarity "
                                    f"{max(cosines):.2f} < {min_cosine}).", [], confidence=0.0)
    if not fitting:
        return Verdict(False, None, _why_none(analysis, pool, _rival(analysis, pool)), [], confidence=0.0)
    contrasted = rival is not None and rival.support >= have + CONTRAST and have < CONFIDENT
    floor = [_passes_floor(c) for c in fitting]
    eligible = [c for c, passes in zip(fitting, floor) if passes] if not contrasted else []
    order = ranked(fitting, analysis, floor)
    # the learned ranker weighs the thresholds itself; the hand-weighted score takes a sentence
    # clearing them first
    firsts = {id(c) for c in eligible} if not learned(fitting) else set()
    best = next((c for c in order if id(c) in firsts), order[0])
    features = gate_features(best, analysis, evidence, everywhere, min_cosine=min_cosine,
                             strict=analysis.question.expects in STRICT_TYPES, passes_rules=bool(eligible))
    p = confidence(features)
    threshold = next((t for t in (min_confidence, analysis.min_confidence) if t is not None), None)
    threshold = default_min_confidence() if threshold is None else threshold
    if p < threshold:
        reason = _why_unsure(analysis, best, rival, p, threshold)
        return Verdict(False, best, reason, [], confidence=p, features=features, pool=fitting, floor=floor)
    rest = [c for c in order if c is not best]
    return Verdict(True, best, None, [best, *rest], confidence=p, features=features, pool=fitting, floor=floor)


def far_chunks(evidence: list[Evidence], min_cosine: float | None) -> bool:
    """Is every chunk retrieved far from the question in meaning (below the embedder's point)?"""
    cosines = [e.result.scores.vector for e in evidence if e.result.scores.vector is not None]
    return min_cosine is not None and bool(cosines) and max(cosines) < min_cosine


def sentences_to_embed(analysis: Analysis) -> list[str]:
    """The sentences that may answer whose closeness to the question is read when the chunks are
    far (`Analysis.sentence_cosine`): the best few by score."""
    fitting = [c for c in analysis.candidates if _may_answer(analysis, c)]
    return [c.unit.text for c in fitting[:SENTENCES_EMBEDDED]]


def _may_answer(analysis: Analysis, c: Candidate) -> bool:
    """A sentence about the right person, with every name, on the subject, holding the kind of
    answer where it must; a prose or code one also stating enough of the question in words."""
    need_said = min(MIN_SAID_TERMS, len(analysis.terms - analysis.optional),
                    max(1, len(analysis.terms - analysis.optional - analysis.common)))
    return (c.about and c.names and c.on_subject and (c.typed or analysis.question.expects not in STRICT_TYPES)
            and (not c.unit.form or c.unit.form in analysis.forms)
            and (c.kind == "dialogue" or (c.said >= need_said and _passes_floor(c))))


def _passes_floor(candidate: Candidate) -> bool:
    """The hand-set support thresholds the gate had before the model: still what a prose or code
    sentence must clear (the model was fitted on conversations only), and a feature of it."""
    return candidate.own >= MIN_OWN and candidate.support >= MIN_SUPPORT[candidate.kind]


def _refused_outright(analysis: Analysis, evidence: list[Evidence], pool: list[Candidate]) -> Verdict | None:
    """The refusals that are logic, not degree: nothing retrieved, nothing to look for, a name
    or subject the question uses that no passage mentions."""
    if not evidence:
        return Verdict(False, None, "Nothing was retrieved for this query.", [], confidence=0.0)
    if not analysis.terms:
        return Verdict(False, None, "The question has no content words to look for.", [], confidence=0.0)
    if analysis.names and not any(c.names for c in pool):
        missing = ", ".join(analysis.names)
        return Verdict(False, None, f"No retrieved passage mentions {missing} together with what the "
                                    f"question asks.", [], confidence=0.0)
    subject = " and ".join(phrase for phrase, _ in analysis.subject)
    if subject and not any(c.on_subject for c in pool):
        return Verdict(False, None, f"No retrieved passage mentions {subject}.", [], confidence=0.0)
    return None


def _rival(analysis: Analysis, pool: list[Candidate]) -> Candidate | None:
    """The sentence that says most of the question about someone other than the one asked about."""
    if not analysis.participants:
        return None
    return max((c for c in pool if c.others and not c.about and c.names and c.own >= MIN_OWN),
               key=lambda c: c.support, default=None)


def _why_none(analysis: Analysis, pool: list[Candidate], rival: Candidate | None) -> str:
    """Why no sentence may answer at all."""
    who = ", ".join(sorted(analysis.participants))
    subject = " and ".join(phrase for phrase, _ in analysis.subject)
    if rival is not None and rival.support >= MIN_SUPPORT[rival.kind]:
        return f"The sources say this about someone other than {who}."
    if any(not c.on_subject and c.own >= MIN_OWN and c.support >= MIN_SUPPORT[c.kind] for c in pool):
        return f"The passages that say this do not mention {subject}."
    near = nearest_text(analysis, pool)
    if near:
        return f"No retrieved passage states what the question asks: {near}."
    return "No retrieved passage states any of the question's words."


def _why_unsure(analysis: Analysis, best: Candidate, rival: Candidate | None, p: float, threshold: float) -> str:
    """Why the best sentence is not trusted enough, in the terms a reader can check."""
    sure = f"confidence {p:.2f} < {threshold:.2f}"
    if rival is not None and rival.support > best.support:
        who = ", ".join(sorted(analysis.participants))
        return (f"The sources say this about someone other than {who} ({rival.support:.0%} vs "
                f"{best.support:.0%} of its terms; {sure}).")
    return (f"No retrieved passage says clearly enough what the question asks (the best covers "
            f"{_percent_below(best.support)} of its terms; {sure}).")


def _percent_below(share: float) -> str:
    """A share as a whole percentage rounded down, so that a share just under a threshold never
    reads as equal to it ("covers 35%, needs 35%")."""
    return f"{int(share * 100 + 1e-9)}%"


def _timing(question: Question, unit: Unit, item: Evidence,
            said_on: Callable[[Evidence, Unit], date | None] | None) -> float:
    """Score adjustment from time: a "when did" question is answered by what happened, not by a
    plan; one confined to a month or year by what falls in it (dated by the words' own time
    expression, resolved against the day they were said, or by that day)."""
    adjust = 0.0
    if question.expects == "date" and question.wh == "when":
        planned = bool(_PLAN.search(unit.text))
        if planned != question.future:
            adjust -= W_TENSE
    year, month = question.period
    if (year or month) and said_on is not None:
        day = said_on(item, unit)
        if day is not None:
            found = resolve(unit.text, day)
            when = found.around if found is not None else day
            inside = (year is None or when.year == year) and (month is None or when.month == month)
            adjust += W_PERIOD if inside else -W_PERIOD
    return adjust


def _header(item: Evidence) -> str:
    meta = item.metadata
    parts = [str(meta.get("header") or ""), str(item.result.title or "")]
    if meta.get("path"):
        parts.append(str(meta["path"]))
    return " ".join(p for p in parts if p)


def _normalised(text: str) -> str:
    return " ".join(_NOT_ALNUM.split(text.lower())).strip()
