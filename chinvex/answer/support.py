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
- *about*: in a dialogue, whether it is about the person the question names (units.py resolves
  "I", "you" and names).
- *names*: whether every other name the question uses (a place, a product, an identifier)
  appears with it.
- *prior*: how well retrieval ranked its chunk, times the role weight of its file (roles.py).

`judge` then decides. The best candidate about the right person, with every name, must say
enough of the question (`MIN_SUPPORT`); and when the evidence says clearly more about the same
thing of someone else, the question is about the wrong person and is refused. These are checks
of what the cited sentences say, so the same `judge` gates every generator (see gate.py).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import date

from chinvex.answer.answer_types import holds
from chinvex.answer.dates import resolve
from chinvex.answer.evidence import Evidence
from chinvex.answer.question import Question
from chinvex.answer.roles import grounds, role_of, role_weight
from chinvex.answer.text import Stemmer, TermWeights
from chinvex.answer.units import DEFINED, SQL_CREATE, Unit, _same_person, split_evidence
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
question. Measured for the built-in model: questions about a repository (this one's golden set)
reach at least 0.37, general-knowledge questions against it at most 0.30, and 3 of LoCoMo's 231
answerable questions fall below 0.3. The provider's other model (all-MiniLM-L6-v2-q8, the same
network with integer products) shares the scale: its vectors sit at cosine ~0.995 to the default
model's. Other embedders have other scales and get no such gate.
A sentence that says the question clearly (support of at least `CONFIDENT`) is answered anyway:
a long chunk's embedding can sit far from a short question one of its turns answers."""
CONTEXT_SHARE = 0.5
"""What the words around a sentence (previous sentence, the question it replies to, the file or
heading path) add to its support, relative to its own words."""
IDENTIFIER_SHARE = 0.4
"""What a term found only inside a code identifier adds, relative to one stated in words."""

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
AUTHORED_ROLES = frozenset({"code", "docs", "config"})
"""Files whose words and names are their authors' statements; tests, fixtures and benchmarks
quote inputs and name behaviour checked elsewhere."""
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

USER_ROLES = frozenset({"user", "human", "you", "me", "prompt"})
REPLY_ROLES = frozenset({"assistant", "ai", "model", "chatgpt", "claude", "bot", "tool", "response"})
"""Role labels of chat transcripts: they are not people a question names."""

_NAME = re.compile(r"(?<![\w'’])(?:[A-Z][\w'’.-]*[A-Za-z0-9]|[A-Z])(?:\s+[A-Z][\w'’.-]*[A-Za-z0-9])*")
_IDENTIFIER = re.compile(r"\b(?:[a-z]+_[a-z0-9_]+|[a-z]+[A-Z]\w*|\w+\.\w+\(?\)?|\w+\(\))")
_CODE_PROSE = re.compile(
    r'#(.*)$|//(.*)$|^\s*--\s(.*)$|/\*(.*?)(?:\*/|\Z)|"""(.*?)(?:"""|\Z)|\'\'\'(.*?)(?:\'\'\'|\Z)|'
    r'^\s*(' + SQL_CREATE + r'[^\n(]*)|'
    r'"([^"\n]{12,})"',
    re.M | re.S)
"""What code says in words: comments, docstrings, the header of a SQL schema statement
("CREATE TRIGGER chunks_ad AFTER DELETE ON chunks" is declarative: it reads as what it does),
and string literals (the last group; see prose_literal)."""
_PROSE_LITERAL = re.compile(r"^(?!.*\b(?:SELECT|INSERT|UPDATE|DELETE|FROM|WHERE|CREATE|VALUES)\b)[^{}()=<>\[\]]*$")
_PLACEHOLDER = re.compile(r"\{[^{}\n]*\}|%[sdr]")
_ADJACENT_LITERALS = re.compile(r'"[ \t]*\n\s*[frbuFRBU]{0,2}"')
_POSSESSIVE_PHRASE = re.compile(r"\b(\w+)['’]s\s+([\w-]+)(?:\s+([\w-]+))?")
KIND_NOUNS = frozenset("""reaction reactions attitude attitudes suggestion suggestions opinion opinions feeling feelings
    thought thoughts view views idea ideas plan plans reason reasons goal goals advice take impression impressions
    response responses approach way ways motivation inspiration hope hopes identity status experience experiences""".split())
"""Nouns that name the kind of answer asked for rather than a thing the sources must mention:
"Jon's attitude towards the festival" is answered by "Glad to be part of it"."""
_NOT_ALNUM = re.compile(r"[\W_]+")
_NOT_NAMES = frozenset(
    """what when where who whom whose why how which is are was were do does did has have had can could
    would will should shall may might must am i the a an in on at of for to and or but if not no yes
    please tell show give list explain describe compare""".split()
)
_MONTHS = frozenset(
    """january february march april may june july august september october november december monday
    tuesday wednesday thursday friday saturday sunday""".split()
)


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



@dataclass
class Verdict:
    ok: bool
    best: Candidate | None
    reason: str | None
    ranked: list[Candidate]


def speakers_of(units: Iterable[Unit]) -> set[str]:
    names = {u.speaker.lower() for u in units if u.speaker} - USER_ROLES - REPLY_ROLES - {"system"}
    return {s for s in names if s.split(" ")[0] not in REPLY_ROLES}


def question_names(text: str) -> list[str]:
    """Names the question uses: capitalised words past its first word, and code identifiers.
    These must appear in what answers it ("What is the capital of Australia?" needs Australia)."""
    found: list[str] = []
    stripped = text.strip()
    for match in _NAME.finditer(stripped):
        if match.start() == 0:
            words = match.group(0).split()
            rest = " ".join(words[1:])
            if not rest:
                continue
            candidate = rest
        else:
            candidate = match.group(0)
        words = [re.sub(r"['’]s?$", "", w) for w in candidate.split()]
        words = [w for w in words if w.lower().strip(".") not in _NOT_NAMES | _MONTHS]
        if words:
            found.append(" ".join(words))
    found.extend(m.group(0) for m in _IDENTIFIER.finditer(stripped))
    return list(dict.fromkeys(found))


def subject_of(text: str, speakers: Iterable[str]) -> list[str]:
    """What a question asks about through a possessive: "grandpa's gift" names grandpa (not a
    participant of the talk) and a gift; "Caroline's youth center" a youth center, found by
    either word. Each returned phrase must be mentioned, by one of its words, in the passage
    that answers: "What was grandpa's gift to Caroline?" is not answered by a gift from her
    grandma. Participants are checked elsewhere (whom a sentence is about), and nouns naming
    the kind of answer (`KIND_NOUNS`: "Jon's attitude") are not things to find."""
    people = [s.lower() for s in speakers]
    phrases: list[str] = []
    for match in _POSSESSIVE_PHRASE.finditer(text):
        owner, head, after = match.group(1), match.group(2), match.group(3)
        if owner.lower() not in _NOT_NAMES and not any(_same_person(owner, p) for p in people):
            phrases.append(owner)
        if head.lower() not in KIND_NOUNS and head.lower() not in _NOT_NAMES:
            phrases.append(f"{head} {after}" if after and after.lower() not in _NOT_NAMES else head)
    return phrases


def analyse(question: Question, evidence: list[Evidence], stemmer: Stemmer,
            weights_for: Callable[[Iterable[str]], TermWeights],
            said_on: Callable[[Evidence, Unit], date | None] | None = None) -> tuple[Analysis, TermWeights]:
    """Candidates for every unit of the evidence, best first, and the term weights used (read
    once for the question's terms and every word of the evidence)."""
    kinds, units = split_evidence([(item.text, item.source_type, item.metadata) for item in evidence])
    speakers = speakers_of(units)
    words = list(question.words)
    named = [w for w in words if (w[:1].isupper() or w.lower() in speakers)
             and any(_same_person(w, s) for s in speakers)]
    participants = frozenset(s for s in speakers if any(_same_person(w, s) for w in named))
    topic = [w for w in words if w not in named]
    terms = stemmer.stems(index_text(" ".join(topic))) if topic else frozenset()
    other_names = tuple(n for n in question_names(question.text)
                        if not any(_same_person(part, s) for part in n.split() for s in speakers))
    name_stems = [stemmer.stems(index_text(n)) for n in other_names]
    # words the question itself spells as identifiers ("current_node") are found in code as names
    code_terms = stemmer.stems(index_text(" ".join(_IDENTIFIER.findall(question.text))))
    subject = tuple((phrase, stems) for phrase in subject_of(question.text, speakers)
                    if (stems := stemmer.stems(index_text(phrase)) & terms))
    analysis = Analysis(question, terms, participants, other_names, [], subject)
    if not terms or not units:
        return analysis, TermWeights.uniform()

    unit_stems = stemmer.stem_sets([u.analysed for u in units])
    weights = weights_for(frozenset(terms).union(*unit_stems))
    total = weights.weight(terms) or 1.0

    headers = stemmer.stem_sets([index_text(_header(item)) for item in evidence])
    on_subject = _mentions_subject(len(evidence), units, unit_stems, subject)
    tests = question.about_tests
    paths = [item.relative_path() for item in evidence]
    chunk_roles = [role_of(path or "") if item.source_type == "repo" else "code" for item, path in zip(evidence, paths)]
    chunk_weight = [role_weight(path, item.source_type, tests, question.how_to) for item, path in zip(evidence, paths)]
    chunk_grounds = [grounds(path, item.source_type, tests) for item, path in zip(evidence, paths)]
    roles = [chunk_roles[u.chunk] for u in units]
    said_stems, defined, names_asked = _statements(units, roles, terms, stemmer, names_said=question.expects == "name")
    holding = [holds(question.expects, u.text) for u in units]  # the kind of answer asked for
    if question.expects == "title" and question.kind_noun:
        # a title names the kind of thing asked for: "I'm reading “The Lean Startup”" says a book
        kind_stems = stemmer.stems(question.kind_noun) & terms
        unit_stems = [s | kind_stems if t else s for s, t in zip(unit_stems, holding)]
        said_stems = [s | kind_stems if t else s for s, t in zip(said_stems, holding)]
    asked = _asked_before(units, unit_stems)
    best_rank = max((item.result.scores.rank for item in evidence), default=0.0) or 1.0
    echo = _normalised(question.text)

    for i, (u, stems) in enumerate(zip(units, unit_stems)):
        if u.question or u.heading or not u.text.strip():
            continue
        if echo and len(u.text) >= len(echo) and echo in _normalised(u.text):
            continue  # a golden file or a test quoting the question does not answer it
        item = evidence[u.chunk]
        kind = kinds[u.chunk]
        said = stems & (said_stems[i] | defined[i] | code_terms)
        own = (weights.weight(terms & said) + IDENTIFIER_SHARE * weights.weight(terms & (stems - said))) / total
        context: set[str] = set()
        if i > 0 and units[i - 1].chunk == u.chunk and units[i - 1].block == u.block:
            context |= unit_stems[i - 1]
        if kind == "dialogue":
            context |= asked.get((u.chunk, u.block - 1), frozenset())
        else:
            context |= headers[u.chunk]
        around = weights.weight((terms & context) - stems) / total
        support = min(1.0, own + CONTEXT_SHARE * around)
        new = [s for s in stems - terms if len(s) > 2 and not s.isdigit()]
        specific = min(1.0, sum(sorted((weights.idf(s) for s in new), reverse=True)[:4]) / 6.0)
        near = stems | context | headers[u.chunk]
        has_names = all(ns and ns <= near for ns in name_stems)
        same_turn = i > 0 and units[i - 1].chunk == u.chunk and units[i - 1].block == u.block
        preceding = units[i - 1].text if same_turn else None
        if kind == "code" and question.expects in ("manner", "reason"):
            # how or why something is done is said in words (a docstring, a comment), not in code
            typed = len(_code_prose(u.text, literals=False).split()) >= EXPLANATION_WORDS
        else:
            typed = holding[i] or (same_turn and holding[i - 1])
        timing = _timing(question, u, item, said_on)
        about = ((not participants) or kind != "dialogue" or bool(u.about & participants)) and \
            chunk_grounds[u.chunk]
        others = frozenset(u.about - participants) if participants and kind == "dialogue" else frozenset()
        prior = (item.result.scores.rank / best_rank) * chunk_weight[u.chunk]
        nxt = units[i + 1] if i + 1 < len(units) else None
        following = nxt.text if nxt is not None and nxt.chunk == u.chunk and nxt.block == u.block else None
        candidate = Candidate(u, item, kind, support, own, specific, typed, about, has_names, prior,
                              others=others, following=following, preceding=preceding, said=len(terms & said),
                              on_subject=on_subject[u.chunk])
        candidate.score = chunk_weight[u.chunk] * (
            support + W_SPECIFIC * specific + W_TYPED * typed + W_PRIOR * prior + W_NAMED * names_asked[i]) + timing
        analysis.candidates.append(candidate)
    analysis.candidates.sort(key=lambda c: (-c.score, c.unit.chunk, c.unit.order))
    return analysis, weights


def _statements(units: list[Unit], roles: list[str], terms: frozenset[str], stemmer: Stemmer,
                names_said: bool = False) -> tuple[list[frozenset[str]], list[frozenset[str]], list[bool]]:
    """Per unit: the stems it states in words, the stems of the names its definitions give, and
    whether one of those names is what the question asks about.

    What a unit states in words: for code, its comments, docstrings and (outside tests and
    sample data, whose literals are inputs) string literals; for prose, its text without code
    spans and identifiers. The name a definition gives states what it is ("def chunk_id"
    defines chunk ids), except in tests, fixtures and benchmarks, whose names describe behaviour
    checked elsewhere; and a definition named for what is asked ("def chunk_id" for "how are
    chunk ids computed") is the thing itself, not talk about it. When the question asks for a
    name (`names_said`: "which environment variables…"), the names a sentence gives are what it
    says: "`CHINVEX_CONTEXTS_ROOT` moves the contexts root" names the variable asked for."""
    naming = _names_of(terms, stemmer)
    keep = (lambda name: True) if names_said else naming
    authored = [u.kind == "code" and role in AUTHORED_ROLES for u, role in zip(units, roles)]
    said = stemmer.stem_sets([
        _words_only(_code_prose(u.extent or u.text, literals=role in AUTHORED_ROLES)
                    if u.kind == "code" else u.analysed, keep=keep)
        for u, role in zip(units, roles)])
    names = [[name for match in DEFINED.findall(u.text) for name in match if name] if own else []
             for u, own in zip(units, authored)]
    defined = stemmer.stem_sets([index_text(" ".join(found)) for found in names])
    return said, defined, [any(naming(name) for name in found) for found in names]


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
          min_cosine: float | None = None) -> Verdict:
    """Is there a sentence that answers? `restrict` limits the sentences that may (the gate of
    an LLM answer only looks at the chunks it cites)."""
    pool = [c for c in analysis.candidates if restrict is None or restrict(c)]
    if not evidence:
        return Verdict(False, None, "Nothing was retrieved for this query.", [])
    if not analysis.terms:
        return Verdict(False, None, "The question has no content words to look for.", [])
    cosines = [e.result.scores.vector for e in evidence if e.result.scores.vector is not None]
    unrelated = min_cosine is not None and bool(cosines) and max(cosines) < min_cosine
    expects = analysis.question.expects
    if analysis.names and not any(c.names for c in pool):
        missing = ", ".join(analysis.names)
        return Verdict(False, None, f"No retrieved passage mentions {missing} together with what the "
                                    f"question asks.", [])
    subject = " and ".join(phrase for phrase, _ in analysis.subject)
    if subject and not any(c.on_subject for c in pool):
        return Verdict(False, None, f"No retrieved passage mentions {subject}.", [])
    need_said = min(MIN_SAID_TERMS, len(analysis.terms))
    fitting = [c for c in pool if c.about and c.names and c.on_subject and (c.typed or expects not in STRICT_TYPES)
               and (c.kind == "dialogue" or c.said >= need_said)]
    strongest = max(fitting, key=lambda c: (c.support if c.own >= MIN_OWN else 0.0, c.score), default=None)
    have = strongest.support if strongest is not None and strongest.own >= MIN_OWN else 0.0
    rival = None
    if analysis.participants:
        rival = max((c for c in pool if c.others and not c.about and c.names and c.own >= MIN_OWN),
                    key=lambda c: c.support, default=None)
    who = ", ".join(sorted(analysis.participants))
    if unrelated and have < CONFIDENT:
        # Whole chunks far from the question in meaning, and no sentence that clearly says it.
        return Verdict(False, None, f"Nothing retrieved is about this question (best similarity "
                                    f"{max(cosines):.2f} < {min_cosine}).", [])
    if strongest is None or have < MIN_SUPPORT[strongest.kind]:
        if rival is not None and rival.support >= MIN_SUPPORT[rival.kind]:
            return Verdict(False, strongest, f"The sources say this about someone other than {who}.", [])
        if any(not c.on_subject and c.own >= MIN_OWN and c.support >= MIN_SUPPORT[c.kind] for c in pool):
            return Verdict(False, strongest, f"The passages that say this do not mention {subject}.", [])
        need = MIN_SUPPORT[strongest.kind] if strongest else MIN_SUPPORT["prose"]
        return Verdict(False, strongest, f"No retrieved passage says what the question asks (the best "
                                         f"covers {_percent_below(have)} of its terms, needs {need:.0%}).", [])
    if rival is not None and rival.support >= have + CONTRAST and have < CONFIDENT:
        return Verdict(False, strongest, f"The sources say this about someone other than {who} "
                                         f"({rival.support:.0%} vs {have:.0%} of its terms).", [])
    eligible = [c for c in fitting if c.own >= MIN_OWN and c.support >= MIN_SUPPORT[c.kind]]
    eligible.sort(key=lambda c: (-c.score, c.unit.chunk, c.unit.order))
    best = eligible[0]
    return Verdict(True, best, None, eligible)


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


def _words_only(text: str, keep: Callable[[str], bool] = lambda name: False) -> str:
    """Prose without its code: `code spans` and identifiers (snake_case, camelCase, dotted) are
    names, not statements, unless the name is the thing asked about (`keep`): "`chunk_id` = …"
    states how chunk ids are made; `test_meaning_of_life_is_refused` says nothing of life."""
    def drop(match: re.Match[str]) -> str:
        return match.group(0) if keep(match.group(0)) else " "

    text = re.sub(r"`[^`\n]*`", drop, text)
    return _IDENTIFIER.sub(drop, text)


def _names_of(terms: frozenset[str], stemmer: Stemmer) -> Callable[[str], bool]:
    """Is an identifier a name of what the question asks about: at least two thirds of its
    parts are the question's terms?"""
    cache: dict[str, bool] = {}

    def naming(name: str) -> bool:
        if name not in cache:
            parts = [p for p in re.split(r"[^A-Za-z0-9]+|(?<=[a-z0-9])(?=[A-Z])", name.strip("`")) if p]
            stems = [stemmer.stems(p.lower()) for p in parts]
            hits = sum(1 for s in stems if s & terms)
            cache[name] = bool(parts) and hits * 3 >= 2 * len(parts)
        return cache[name]

    return naming


def _code_prose(text: str, *, literals: bool = True) -> str:
    """The words a code unit states: comments, docstrings and string literals (a literal that
    asks a question, as tests often hold, states nothing; in tests every literal is an input)."""
    pieces = []
    for match in _CODE_PROSE.finditer(join_literals(text)):
        piece = next(g for g in match.groups() if g is not None)
        if piece.startswith("!") or piece.rstrip().endswith("?"):
            continue  # a shebang; a literal that asks
        if match.group(len(match.groups())) is not None:
            piece = prose_literal(piece) if literals else None
            if piece is None:
                continue  # a string literal holding code (SQL, a format template), or a test's input
        pieces.append(piece)
    return "\n".join(pieces)


def join_literals(code: str) -> str:
    """`code` with implicitly concatenated string literals joined: a message spelled over three
    lines ("... cannot be " / f"mixed. Run ...") is one statement."""
    return _ADJACENT_LITERALS.sub("", code)


def prose_literal(literal: str) -> str | None:
    """A string literal's words when it reads as a statement (an error or help message), with
    its format placeholders taken out ("vectors of two models cannot be mixed for {current}"
    says what the code refuses); None for code held in a string (SQL, a template, a pattern)."""
    words = _PLACEHOLDER.sub(" ", literal)
    return words if _PROSE_LITERAL.match(words) and len(words.split()) >= 3 else None


def _normalised(text: str) -> str:
    return " ".join(_NOT_ALNUM.split(text.lower())).strip()
