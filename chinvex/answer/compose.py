"""Short answers from chosen sentences: the clause that answers, who said it, when, and where.

An answer is read by a person or an agent who asked one thing, so it says that thing and stops:
one to three short sentences, each the clause of an evidence sentence that carries the question's
terms (a sentence of chat is often three thoughts joined by commas and dashes), each citing its
chunk. A code answer names the definition, where it is, and the first sentence of its docstring.
A "when" answer is the date the words point to, resolved against the day they were said (or the
day itself, "By <day>", when the words carry no time): the date is what was asked, and the words
it rests on go with its citation as a quote (`Composed.quotes`), where a reader checks them.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date

from chinvex.answer.answer_types import CODE_SPAN, holds, titles
from chinvex.answer.code_names import asked_name
from chinvex.answer.code_units import defined_name
from chinvex.answer.dialogue_units import same_person as _same_person
from chinvex.answer.grounding import cite
from chinvex.answer.phrases import answer_phrase
from chinvex.answer.question import Question
from chinvex.answer.spans import item, span, yes_or_no
from chinvex.answer.statements import join_literals, prose_literal
from chinvex.answer.judgement import Candidate
from chinvex.answer.text import Stemmer, TermWeights
from chinvex.answer.when import SAID_BY, asks_present, time_before, when_answer
from chinvex.retrieval.lexical import index_text

MAX_CLAUSE_WORDS = 28
MIN_CLAUSE_WORDS = 3
SUMMARY_WORDS = 15
"""A docstring sentence shorter than this is a summary line; the answer adds the next one."""
MAX_STATEMENT_WORDS = 48
MAX_CODE_WORDS = 30
MAX_QUOTE_WORDS = 40
MAX_BLOCK_LINES = 12
_BOUNDARY = re.compile(
    r"\s*(?:;|(?<![\d:]):(?![\d/\\:])|:(?=\s)|(?<!\d)[—–]|[—–](?!\d)|,(?!\d)|\s-\s|\.\.\.|…)\s*|"
    r"\s+(?=(?:but|because|which|while|though|although|"
    r"whereas|cause)\s)",
    re.IGNORECASE,
)
_FILLER = re.compile(
    r"^(?:yeah|yes|yep|yup|no|nope|wow|oh|ah|aw+|hey|hi|hello|haha|lol|well|ok|okay|so|thanks|thank you|"
    r"totally|sure|great|cool|awesome|omg|hmm|right)\b[!.,]*\s*",
    re.IGNORECASE,
)
ECHO_NEW_WORDS = 2
_LIGHT = frozenset("""the and you your but just got get went go going was were have has had with this that
    for from are all out our its it's about really some very too also been being did does done""".split())
_DOC_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z`\"'(])|\s+(?=:(?:param|parameter|arg|argument|key|keyword|type|"
                           r"returns?|rtype|raises?|except|exception|var|ivar|cvar|yields?)\b)")
"""Where a docstring's sentences end: after a full stop before a capital, and before each field
of a reST field list (":param params: …", ":rtype: dict"), which say one thing each."""


def clause(text: str, terms: frozenset[str], expects: str, stemmer: Stemmer, weights: TermWeights,
           after: str | None = None) -> str:
    """The part of `text` that answers: the clause carrying most of the question's terms (and the
    kind of thing asked for), grown by its neighbours while it is too short to stand alone. A
    clause that only echoes the question ("I went to a counseling workshop" for "What was
    discussed at the workshop?") is followed by the next one, or by the sentence `after` it:
    the answer is what is said next to the question's words, not the words themselves."""
    one = " ".join(text.split())
    parts = [p.strip(" ,") for p in _top_level_parts(one) if p and p.strip(" ,")]
    parts = [_FILLER.sub("", p).strip() or p for p in parts]
    if len(parts) <= 1:
        kept = _cap(_FILLER.sub("", one).strip() or one)
        if after and _echoes(kept, terms, expects, stemmer):
            kept = _cap(f"{kept.rstrip('.!')}. {clause(after, terms, expects, stemmer, weights)}")
        return kept
    stems = stemmer.stem_sets([index_text(p) for p in parts])

    def value(i: int) -> float:
        return weights.weight(terms & stems[i]) + (0.5 if expects != "thing" and holds(expects, parts[i]) else 0.0)

    best = max(range(len(parts)), key=lambda i: (value(i), -i))
    lo = hi = best
    while len(" ".join(parts[lo:hi + 1]).split()) < MIN_CLAUSE_WORDS and (lo > 0 or hi < len(parts) - 1):
        if hi < len(parts) - 1:
            hi += 1
        else:
            lo -= 1
    if expects != "thing" and not any(holds(expects, p) for p in parts[lo:hi + 1]):
        for j in (hi + 1, lo - 1):
            if 0 <= j < len(parts) and holds(expects, parts[j]):
                lo, hi = min(lo, j), max(hi, j)
                break
    if _echoes(" ".join(parts[lo:hi + 1]), terms, expects, stemmer):
        if hi + 1 < len(parts):
            hi += 1
        elif after:
            return _cap(f"{' '.join(parts[lo:hi + 1]).rstrip('.!')}. {clause(after, terms, expects, stemmer, weights)}")
    return _cap(" ".join(parts[lo:hi + 1]))


def _top_level_parts(text: str) -> list[str]:
    """`text` cut at its clause boundaries outside parentheses, braces and `code spans`: an aside in
    parentheses is a clause of its own or part of one, never cut in two, and neither is a code
    span or a brace list ("{provider builtin|ollama, model, host}") (square brackets are cut: a chat's "[shares an
    image: a photo of…]" answers with its caption) ("(…, for another reason: a kill … keeps the first
    commits)" would give "a kill … keeps the first commits)")."""
    depth, cuts, in_code = 0, [], False
    marks = {m.start(): m for m in _BOUNDARY.finditer(text)}
    for i, char in enumerate(text):
        if i in marks and depth == 0 and not in_code:
            cuts.append(marks[i])
        if char == "`":
            in_code = not in_code
        elif in_code:
            continue
        elif char in "({":
            depth += 1
        elif char in ")}" and depth:
            depth -= 1
    parts, start = [], 0
    for mark in cuts:
        parts.append(text[start:mark.start()])
        start = mark.end()
    parts.append(text[start:])
    return parts


def _echoes(text: str, terms: frozenset[str], expects: str, stemmer: Stemmer) -> bool:
    """Does `text` say little beyond the question's own words? (Holding the kind of thing asked
    for, a date for "when", is saying something.)"""
    if expects != "thing" and holds(expects, text):
        return False
    new = {s for s in stemmer.stems(index_text(text)) - terms if len(s) > 2 and s not in _LIGHT}
    return len(new) < ECHO_NEW_WORDS


def _cap(text: str, limit: int = 0) -> str:
    limit = limit or MAX_CLAUSE_WORDS
    words = text.split()
    text = " ".join(words[:limit]) + ("…" if len(words) > limit else "")
    return _unbracketed(text.rstrip(" ,;:"))


def _unbracketed(text: str) -> str:
    """Without a bracket its clause was cut from: "a photo of a sunset]" is the end of "[shares an
    image: a photo of a sunset]", and the answer shows the caption, not half of its brackets."""
    if text.endswith("]") and text.count("[") < text.count("]"):
        text = text[:-1].rstrip()
    if text.startswith("[") and text.count("[") > text.count("]"):
        text = text[1:].lstrip()
    return text


@dataclass
class Composed:
    text: str
    quotes: dict[str, str] = field(default_factory=dict)
    """Chunk id -> the words of that chunk the answer rests on (`Speaker: “…”` for a turn), shown
    with its citation."""


def sentence(candidate: Candidate, text: str, expects: str, said_on: date | None,
             asked_about: frozenset[str] = frozenset(), present: bool = False) -> str:
    """One answer sentence for a chosen candidate (`text`: its clause, or for code what its
    docstring says), without its citation. A "when" answer is the date alone, a "what book"
    answer the titles its clause names. A turn's words
    are prefixed with who said them unless that is the person the question asks about
    (`asked_about`, lower-case): then it goes without saying, and the citation's quote names them."""
    unit = candidate.unit
    if candidate.kind == "code":
        return _code_sentence(candidate, text)
    when = when_answer(unit.text, expects, said_on, present, candidate.preceding)
    if when is not None:
        return when
    named = (titles(text) or titles(candidate.preceding or "")) if expects == "title" else []
    if named:  # "What book is Jon reading?" is answered by the book; the citation quotes the rest
        return ", ".join(f"“{t}”" for t in named)
    if unit.fenced and "`" not in text:  # a command or a config line is shown as code
        return f"`{text.strip()}`"
    quoted = f"“{text}”"
    if unit.kind == "dialogue" and unit.speaker and not any(_same_person(unit.speaker.lower(), p) for p in asked_about):
        return f"{unit.speaker}: {quoted}"
    return quoted


def quote(candidate: Candidate, lead: bool = False) -> str:
    """The words a chosen candidate's answer rests on: its whole sentence (or for code, the
    definition's location and docstring are the answer itself, so nothing more), with the
    speaker of a turn; `lead`: after the sentence before it, whose time the answer gives."""
    unit = candidate.unit
    if candidate.kind == "code":
        return ""
    text = f"{candidate.preceding} {unit.text}" if lead and candidate.preceding else unit.text
    words = _FILLER.sub("", " ".join(text.split())).strip() or text
    words = _cap(words, MAX_QUOTE_WORDS)
    return f"{unit.speaker}: “{words}”" if unit.kind == "dialogue" and unit.speaker else f"“{words}”"


def _code_sentence(candidate: Candidate, summary: str) -> str:
    item = candidate.item
    symbol = defined_name(candidate.unit.text) or _symbol(item.metadata.get("header"))
    r = item.result.range
    path = item.short_path()  # the lines are the definition's, below
    start = (r.line_start or 1) + (candidate.unit.line_start or 1) - 1
    end = (r.line_start or 1) + (candidate.unit.line_end or candidate.unit.line_start or 1) - 1
    where = f"{path}:{start}-{end}" if r.line_start is not None else path
    name = f"`{symbol}` in " if symbol else ""
    tail = f": {summary}" if summary else ""
    return f"{name}`{where}`{tail}"


def code_statement(code: str, terms: frozenset[str], stemmer: Stemmer, weights: TermWeights) -> str:
    """What a code unit says about the question: the sentence of its docstring or comments that
    carries most of the question's terms (the first on a tie: a docstring opens with its
    summary), else its first code line."""
    doc = re.search(r'"""\s*(.+?)(?:"""|\Z)|\'\'\'\s*(.+?)(?:\'\'\'|\Z)', code, re.S)
    if doc:
        body = " ".join((doc.group(1) or doc.group(2) or "").split())
    else:
        comments = [m.group(1).strip() for m in re.finditer(r"^\s*(?:#(?!!)|//|--)\s?(.*)$", code, re.M)]
        body = " ".join(" ".join(comments).split())
    if not body:  # no docstring or comment: what its longer string literals (help texts, messages) say
        literals = [m.group(1) for m in re.finditer(r'"([^"\n]{12,})"', join_literals(code))
                    if not m.group(1).rstrip().endswith("?") and prose_literal(m.group(1))]
        body = " ".join(" ".join(f"{s.strip().rstrip('.')}." for s in literals).split())
    if not body:  # nothing said in words: the code itself, on one line
        flat = " ".join(code.split())
        return f"`{_cap(flat, MAX_CODE_WORDS)}`" if flat else ""
    sentences = [s for s in _DOC_SENTENCE.split(body) if s.strip()]
    stems = stemmer.stem_sets([index_text(s) for s in sentences])
    best = max(range(len(sentences)), key=lambda i: (weights.weight(terms & stems[i]), -i))
    chosen = sentences[best]
    following = range(best + 1, min(best + 4, len(sentences)))
    if len(chosen.split()) < SUMMARY_WORDS and following:
        # a one-line summary names the subject; one of the sentences after it says how
        after = max(following, key=lambda i: (weights.weight(terms & stems[i]), -i))
        chosen = f"{chosen} {sentences[after]}"
    return _cap(chosen, MAX_STATEMENT_WORDS)


def _symbol(header: object) -> str:
    """"fuse" from a code chunk's header "chinvex/retrieval/fusion.py · def fuse"."""
    text = str(header or "")
    if " · " not in text:
        return ""
    last = text.split(" · ")[-1].strip()
    return re.sub(r"^(?:async\s+)?(?:def|class|fn|func|function|interface|struct|impl|trait|enum|type)\s+", "", last)


def _introduced_block(candidate: Candidate) -> str:
    """The fenced block a prose sentence ending in ":" introduces ("add to config.toml:"): the
    instructions are the block, so the answer shows it (up to `MAX_BLOCK_LINES` lines)."""
    if candidate.kind != "prose" or not candidate.unit.extent:
        return ""
    lines = candidate.unit.extent.splitlines()
    if len(lines) > MAX_BLOCK_LINES + 2:
        lines = [*lines[:MAX_BLOCK_LINES + 1], "…", lines[-1]]
    return "\n".join(lines)


def compose(chosen: list[Candidate], *, terms: frozenset[str], expects: str, stemmer: Stemmer,
            weights: TermWeights, said_on: Callable[[Candidate], date | None],
            asked_about: frozenset[str] = frozenset(), question: Question | None = None) -> Composed:
    """The answer: the span the question asks for when it asks for one (`question`: a date, a
    count, a place, a name, yes or no; several, comma-separated, when it asks for several), else
    one sentence per chosen candidate, best first (a sentence saying what an earlier one said, as
    two turns giving the same date do, is left out); and the quote each citation rests on. A
    question asking a second thing after "and" gets that too, or is told it is not stated."""
    composed = None
    if question is not None and chosen:
        composed = asked_span(chosen, question, terms, stemmer, said_on, asked_about, weights)
    if composed is None:
        composed = _sentences(chosen, terms, expects, stemmer, weights, said_on, asked_about, question)
    if question is not None and question.also and chosen:
        composed = _also(composed, chosen, question, terms, stemmer, said_on, asked_about)
    return composed


def _sentences(chosen: list[Candidate], terms: frozenset[str], expects: str, stemmer: Stemmer,
               weights: TermWeights, said_on: Callable[[Candidate], date | None],
               asked_about: frozenset[str], question: Question | None = None) -> Composed:
    """One answer sentence per chosen candidate, each citing its chunk: the clause that answers,
    or for a "what"/"which" question the phrase of it that does (phrases.py)."""
    lines: list[str] = []
    seen: set[str] = set()
    quotes: dict[str, str] = {}
    for candidate in chosen:
        if candidate.kind == "code":
            text = code_statement(candidate.unit.extent or candidate.unit.text, terms, stemmer, weights)
        else:
            text = clause(candidate.unit.text, terms, expects, stemmer, weights, after=candidate.following)
            if question is not None and _asks_phrase(question, text, candidate):
                text = (_whole(answer_phrase(question, text, terms, stemmer), text)
                        or _whole(answer_phrase(question, candidate.unit.text, terms, stemmer), candidate.unit.text)
                        or text)
        said = sentence(candidate, text, expects, said_on(candidate), asked_about, asks_present(question))
        if said.casefold() in seen:
            continue
        seen.add(said.casefold())
        block = _introduced_block(candidate)
        lines.append(f"{said} {cite(candidate.item.chunk_id)}" + (f"\n{block}" if block else ""))
        words = quote(candidate, expects == "date" and _leads(candidate, said_on))
        if words:
            quotes[candidate.item.chunk_id] = words
    return Composed("\n\n".join(lines), quotes)


def _whole(phrase: str | None, source: str) -> str | None:
    """`phrase` when it can stand as an answer cut from `source`: it neither cuts a `code span`
    of it in two ("/default" out of `chinvex/context/default.py`, a lone backtick) nor is made
    of symbols only; else None (the clause is the answer). Technical prose names things in code
    spans, and a phrase read off around the question's words must keep each name whole."""
    if not phrase or sum(ch.isalnum() for ch in phrase) < 2 or phrase.count("`") % 2:
        return None
    at = source.find(phrase)
    if at < 0:
        return phrase
    end = at + len(phrase)
    for code in CODE_SPAN.finditer(source):
        if code.start() < at < code.end() or code.start() < end < code.end():
            return None
    return phrase


def _asks_phrase(question: Question, text: str, candidate: Candidate) -> bool:
    """A "what"/"which" question asking for one thing (not a list, a date or a code name), and
    not a title the clause or the sentence before it names (the answer is then the title)."""
    if question.wh not in ("what", "which") or question.many or question.expects not in ("thing", "title"):
        return False
    if candidate.kind != "dialogue":
        return False
    return question.expects != "title" or not (titles(text) or titles(candidate.preceding or ""))


SPAN_KINDS = frozenset({"date", "number", "duration", "frequency", "place", "person"})
"""Kinds of answer that are a span of a sentence rather than the sentence (spans.py)."""
_LABELS = {"date": "When", "duration": "How long", "place": "Where", "person": "Who", "number": "How many",
           "frequency": "How often", "reason": "Why", "manner": "How"}


def asked_span(chosen: list[Candidate], question: Question, terms: frozenset[str], stemmer: Stemmer,
               said_on: Callable[[Candidate], date | None], asked_about: frozenset[str],
               weights: TermWeights | None = None) -> Composed | None:
    """The answer as the span asked for, each part citing its chunk and quoting its sentence;
    None when the question asks for no span or no chosen sentence holds one (the answer is then
    the sentences themselves). A yes/no question is answered "Yes" or "No" by the best sentence."""
    if chosen[0].kind == "code":
        return None
    if question.wh == "yesno":
        said = yes_or_no(question, chosen[0].unit.text)
        agreeing = [c for c in chosen if c.kind != "code" and yes_or_no(question, c.unit.text) == said]
        return Composed(_cited(said, agreeing), _quoted(agreeing))
    if question.expects == "name" and not question.many:
        return _named(chosen, question, terms, stemmer, weights or TermWeights.uniform())
    if question.expects not in SPAN_KINDS:
        return _items(chosen, question, terms, stemmer, weights) if question.many and question.expects == "thing" \
            else None
    parts = _spans_of(chosen, question, terms, stemmer, said_on, asked_about)
    if not parts:
        return None
    # several things asked: one list; one thing asked: the best span first, and a different span
    # another chosen sentence gives after it, as the sentences were before (each its own line)
    text = (", " if question.many else "\n\n").join(_cited(said, backing) for said, backing in parts)
    return Composed(text, _quoted([c for _, backing in parts for c in backing],
                                  said_on if question.expects == "date" else None))


def _named(chosen: list[Candidate], question: Question, terms: frozenset[str], stemmer: Stemmer,
           weights: TermWeights) -> Composed | None:
    """A singular name question's answer: the name the best sentence's answering clause gives
    (code_names.py), cited by every chosen sentence giving the same name; None when the clause
    gives none the question singles out (the sentences are then the answer). The clause, not the
    whole sentence: a sentence of documentation names many things besides the one asked for."""
    def name_in(candidate: Candidate) -> str | None:
        text = clause(candidate.unit.text, terms, question.expects, stemmer, weights, after=candidate.following)
        return asked_name(question, text, stemmer)

    said = name_in(chosen[0])
    if not said:
        return None
    backing = [chosen[0]] + [c for c in chosen[1:] if c.kind != "code" and name_in(c) == said]
    return Composed(_cited(f"`{said}`", backing), _quoted(backing))


def _items(chosen: list[Candidate], question: Question, terms: frozenset[str], stemmer: Stemmer,
           weights: TermWeights | None) -> Composed | None:
    """A list answer ("What activities has she done…"): the item each chosen sentence names,
    comma-separated, each citing its chunk."""
    parts: dict[str, tuple[str, list[Candidate]]] = {}
    for candidate in chosen:
        if candidate.kind == "code":
            return None
        text = clause(candidate.unit.text, terms, question.expects, stemmer, weights or TermWeights.uniform(),
                      after=candidate.following)
        named = _unbracketed(item(text))
        if named:
            parts.setdefault(named.casefold(), (named, []))[1].append(candidate)
    if not parts:
        return None
    return Composed(", ".join(_cited(named, backing) for named, backing in parts.values()),
                    _quoted([c for _, backing in parts.values() for c in backing]))


def _spans_of(chosen: list[Candidate], question: Question, terms: frozenset[str], stemmer: Stemmer,
              said_on: Callable[[Candidate], date | None], asked_about: frozenset[str],
              ) -> list[tuple[str, list[Candidate]]]:
    """(span, the candidates holding it) for each distinct span of the asked kind the chosen
    candidates hold, best first: two turns giving the same date both back it."""
    parts: dict[str, tuple[str, list[Candidate]]] = {}
    for candidate in chosen:
        if candidate.kind == "code":
            continue
        unit = candidate.unit
        speaker = unit.speaker if unit.kind == "dialogue" else None
        if question.expects == "date":
            said = when_answer(unit.text, "date", said_on(candidate), asks_present(question), candidate.preceding)
        else:
            said = span(question, unit.text, speaker, terms, stemmer, asked_about)
        if said:
            said = said[0].upper() + said[1:] if question.expects == "date" else said
            parts.setdefault(said.casefold(), (said, []))[1].append(candidate)
    # "By <day>" only says the words were said by then: a date the words state comes first
    return sorted(parts.values(), key=lambda part: part[0].startswith(SAID_BY))


def _cited(said: str, candidates: list[Candidate]) -> str:
    return f"{said} " + "".join(cite(c.item.chunk_id) for c in candidates)


def _also(composed: Composed, chosen: list[Candidate], question: Question, terms: frozenset[str],
          stemmer: Stemmer, said_on: Callable[[Candidate], date | None], asked_about: frozenset[str]) -> Composed:
    """The further things a question asks after "and": the span of each from the chosen
    sentences, cited, or a line saying it is not stated."""
    from dataclasses import replace

    lines = [composed.text]
    quotes = dict(composed.quotes)
    for wh, expects in question.also:
        part = replace(question, wh=wh, expects=expects, also=(), many=False)
        found = _spans_of(chosen, part, terms, stemmer, said_on, asked_about) if expects in SPAN_KINDS else []
        label = _LABELS.get(expects, "The rest")
        if found:
            said, backing = found[0]
            lines.append(f"{label}: {_cited(said, backing)}")
            dated = said_on if expects == "date" else None
            quotes.update({k: v for k, v in _quoted(backing, dated).items() if k not in quotes})
        else:
            lines.append(f"{label}: not stated in the retrieved sources.")
    return Composed("\n\n".join(lines), quotes)


def _leads(candidate: Candidate, said_on: Callable[[Candidate], date | None]) -> bool:
    """Does a date answer from `candidate` come from the sentence before it (`when.time_before`)?"""
    return time_before(candidate.unit.text, candidate.preceding, said_on(candidate)) is not None


def _quoted(candidates: list[Candidate], said_on: Callable[[Candidate], date | None] | None = None,
            ) -> dict[str, str]:
    """Chunk id -> the sentence each candidate's answer rests on (`said_on` given for a date
    answer: with the sentence before it when that says the time)."""
    quotes: dict[str, str] = {}
    for candidate in candidates:
        words = quote(candidate, said_on is not None and _leads(candidate, said_on))
        if words:
            quotes.setdefault(candidate.item.chunk_id, words)
    return quotes
