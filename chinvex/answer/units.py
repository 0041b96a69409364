"""Evidence chunks cut into the smallest pieces an answer can quote: sentences of prose, turns'
sentences in dialogues, meaningful lines of code.

Dialogues get extra care because the words of a turn are not all about the same person. In
`**[D4:3] Caroline:** Thanks, Melanie! This necklace is a gift from my grandma.` the necklace
is Caroline's: "my" refers to the speaker, "you"/"your" to the one spoken to, and a name used
as a form of address ("Thanks, Melanie!") says who listens, not who the sentence is about.
Each dialogue unit therefore records whom it is about (`about`), which lets the extractive
generator refuse "What was grandma's gift to Melanie?" even though every word of that question
appears in the turn. A sentence ending in "?" asks rather than tells and never counts as
support.
"""

from __future__ import annotations

import re
from functools import lru_cache
from dataclasses import dataclass, field

from chinvex.answer.text import content_words
from chinvex.retrieval.lexical import index_text

# `**[D1:3] Caroline:** text`, `Caroline: text`, `> **Bob (PM):** text`, `- Alice: text`.
_SPEAKER_LINE = re.compile(
    r"^[ \t>*_-]*(?P<tag>\[[^\]\n]{1,40}\]\s*)?(?:[*_]{1,2})?"
    r"(?P<name>[A-Z][\w.'’-]{0,30}(?: [A-Z][\w.'’-]{0,30}){0,2})"
    r"\s*(?:\([^)\n]{0,40}\))?\s*(?:[*_]{1,2})?:(?:[*_]{1,2})?(?:\s+|$)"
)
# chinvex's own conversation chunks: `[Turn 3 of 12] assistant:` on a line of its own.
_TURN_MARKER = re.compile(
    r"^\[Turn (?P<n>\d+)(?: of \d+)?(?:, part \d+/\d+)?\] (?P<name>[\w .()_-]{1,60}):\s*$"
)
_SENTENCE_END = re.compile(r"(?<=[.!?…])[\"'”’)\]]*\s+(?=[\"'“‘(]?[A-Z0-9]|\[)|\s+(?=\[[a-z][^\]]{8,}\]\s*$)")
_FIRST_PERSON = re.compile(
    r"\b(?:i|i'm|i’m|i've|i’ve|i'd|i’d|i'll|i’ll|me|my|mine|myself|we|we're|we’re|we've|"
    r"we’ve|we'd|we’d|we'll|we’ll|our|ours|ourselves|us)\b",
    re.IGNORECASE,
)
_SECOND_PERSON = re.compile(
    r"\b(?:you|you're|you’re|you've|you’ve|you'd|you’d|you'll|you’ll|your|yours|yourself|"
    r"yourselves|ya)\b",
    re.IGNORECASE,
)
_GREETING = (
    r"hey|hi|hello|thanks|thank you|thx|dear|bye|goodbye|congrats|congratulations|oh|wow|yo|"
    r"aw+|yes|yeah|yep|no|sorry|ok|okay|great|good|nice|woah|whoa|well|hmm|see you|love you|"
    r"morning|evening|night|cheers"
)
# `Date: 8 May 2023`, `Subject: ...`: header fields of notes and mails, not voices.
_FIELD_NAMES = frozenset(
    """date time subject from to cc bcc title summary tags tag source status author created
    updated modified version note notes warning todo fixme example examples see url link type
    category location place attendees participants agenda question answer q a""".split()
)
_CAPITALISED = re.compile(r"\b[A-Z][a-z][\w’'-]*")
_POSSESSIVE = re.compile(r"['’]s?$")
SQL_CREATE = r"(?i:create\s+(?:(?:temp|temporary|virtual|unique)\s+)?(?:table|trigger|index|view)\b)"
"""SQL's definitions: a schema statement defines a table, trigger, index or view by name."""
_CODE_SIGNATURE = re.compile(
    r"^\s*(?:@\w|(?:async\s+)?def\s|class\s|(?:export\s+)?(?:default\s+)?(?:async\s+)?function\b|"
    r"(?:pub(?:\([^)]*\))?\s+)?(?:async\s+)?fn\s|func\s|(?:export\s+)?(?:interface|type|enum|struct|"
    r"trait|impl)\b|(?:public|private|protected|static)\s|" + SQL_CREATE + ")"
)
DEFINED = re.compile(r"^\s*(?:export\s+)?(?:pub(?:\([^)]*\))?\s+)?(?:async\s+)?"
                      r"(?:(?:def|class|fn|func|function|struct|interface|type|enum|trait|impl)\s+(\w+)|"
                      r"(?:const\s+|let\s+|var\s+)?([A-Z][A-Z0-9_]+)\s*(?::[^=\n]+)?=(?!=)|"
                      + SQL_CREATE + r"\s+(?i:if\s+not\s+exists\s+)?(\w+))", re.M)
"""A definition's name: `def`/`class`/`fn`/... NAME, an upper-case constant assigned, or the
table, trigger, index or view a SQL schema statement creates."""
_OPEN_LITERAL = re.compile(r"^\s*(?:export\s+)?(?:const\s+|let\s+|var\s+)?[A-Za-z_]\w*(?:\s*:\s*[^=]+)?\s*=\s*[\[{(]\s*(?:#.*)?$")
_COMMENT = re.compile(r"^\s*(?:#|//|/\*|\*|--|;)")
_DOCSTRING_QUOTES = ('"""', "'''")
_TRIVIAL_CODE = re.compile(r"^[\s{}()\[\];,:.]*$|^\s*(?:pass|return|break|continue|else:|try:|\}\s*else\s*\{)\s*$")
_LIST_ITEM = re.compile(r"^\s{0,6}(?:[-*+]|\d+[.)])\s+")
_MARKDOWN_PREFIX = re.compile(r"^\s{0,3}(?:#{1,6}\s+|[-*+]\s+|\d+[.)]\s+|>\s*)")


@dataclass
class Unit:
    """One quotable piece of an evidence chunk."""

    chunk: int  # index of the chunk in the evidence pack
    order: int  # position within the chunk
    text: str  # what an answer quotes
    analysed: str  # what coverage is measured on (forms of address removed)
    kind: str  # "dialogue", "code" or "prose"
    label: str | None = None  # "[D1:3] Caroline", "assistant", "L42-45"
    speaker: str | None = None
    about: frozenset[str] = field(default_factory=frozenset)  # lower-cased participant names
    question: bool = False
    line_start: int | None = None  # 1-based line within the chunk text
    line_end: int | None = None
    heading: bool = False  # a markdown heading: context for its paragraph, never quoted alone
    block: int = 0  # units of one turn / paragraph share a block; a code chunk is one block
    extent: str = ""
    """A code definition's whole text, body included (`text` is its signature and docstring); for
    a sentence ending in ":", the fenced block it introduces."""


def chunk_kind(text: str, source_type: str, metadata: dict, speakers: frozenset[str] = frozenset()) -> str:
    """"code" for source code, "dialogue" for speaker-labelled transcripts, else "prose".

    `speakers` (lower-cased) are voices already seen in other chunks of the same evidence: a
    chunk holding one or two turns of a known speaker is part of that dialogue too."""
    kind = str(metadata.get("kind") or "").lower()
    language = str(metadata.get("language") or "").lower()
    if source_type == "repo" and (kind == "code" or metadata.get("symbols") or (
            language and language not in ("markdown", "text", "plaintext", "rst", "restructuredtext"))):
        return "code"
    if _dialogue_turns(text, speakers) is not None:
        return "dialogue"
    return "prose"


def split_units(text: str, *, chunk: int, kind: str, speakers: frozenset[str] = frozenset()) -> list[Unit]:
    if kind == "code":
        return _code_units(text, chunk)
    if kind == "dialogue":
        turns = _dialogue_turns(text, speakers)
        if turns is not None:
            return _dialogue_units(turns, chunk, speakers)
    return _prose_units(text, chunk)


def split_evidence(chunks: list[tuple[str, str, dict]]) -> tuple[list[str], list[Unit]]:
    """Kinds and units of (text, source_type, metadata) chunks. Two passes: dialogues found on
    their own name their speakers, then chunks with a few turns of those speakers join them."""
    kinds = [chunk_kind(text, st, meta) for text, st, meta in chunks]
    speakers: set[str] = set()
    for (text, _, _), kind in zip(chunks, kinds):
        if kind == "dialogue":
            speakers.update(t.name.lower() for t in (_dialogue_turns(text) or []))
    known = frozenset(speakers)
    if known:
        kinds = [k if k != "prose" else chunk_kind(text, st, meta, known)
                 for (text, st, meta), k in zip(chunks, kinds)]
    units: list[Unit] = []
    for i, ((text, _, _), kind) in enumerate(zip(chunks, kinds)):
        units.extend(split_units(text, chunk=i, kind=kind, speakers=known))
    return kinds, units


# -- dialogue ---------------------------------------------------------------------------------


@dataclass
class _Turn:
    tag: str
    name: str
    body: list[str]
    line: int


def _dialogue_turns(text: str, speakers: frozenset[str] = frozenset()) -> list[_Turn] | None:
    """The chunk's turns if it reads as a dialogue: at least three labelled lines, at least two
    speakers, one of them speaking more than once (a docstring's `Args:`/`Returns:` is not); or
    any labelled line of a speaker known from elsewhere in the evidence."""
    turns: list[_Turn] = []
    markers = 0
    for number, line in enumerate(text.splitlines(), start=1):
        marker = _TURN_MARKER.match(line)
        if marker:
            markers += 1
            turns.append(_Turn(f"Turn {marker.group('n')}", marker.group("name").strip(), [], number))
            continue
        label = _SPEAKER_LINE.match(line)
        if label and not line.lstrip().startswith("#") and label.group("name").lower() not in _FIELD_NAMES:
            tag = (label.group("tag") or "").strip().strip("[]")
            turns.append(_Turn(tag, label.group("name").strip(), [line[label.end():]], number))
        elif turns and line.strip():
            turns[-1].body.append(line)
    if markers:
        return turns
    names = [t.name.lower() for t in turns]
    distinct = set(names)
    if len(turns) >= 3 and len(distinct) >= 2 and max(names.count(n) for n in distinct) >= 2:
        return turns
    if speakers and turns and all(n in speakers for n in distinct):
        return turns
    return None


def _vocatives(sentence: str, names: set[str]) -> tuple[str, set[str]]:
    """Remove names used as forms of address ("Thanks, Mel!", "Hey Jon, ...", "..., Gina.")."""
    found: set[str] = set()
    out = sentence
    for name in sorted({_POSSESSIVE.sub("", m.group(0)) for m in _CAPITALISED.finditer(sentence)}, key=len, reverse=True):
        if not _is_participant(name.lower(), names):
            continue
        pattern = re.compile(
            r"(^\W*|[,;:]\s*|\b(?:" + _GREETING + r")[,!.]?\s+)" + re.escape(name) + r"(?=\s*[,!?.;:…)]|\s*$)",
            re.IGNORECASE,
        )
        if pattern.search(out):
            found.add(name.lower())
            out = pattern.sub(lambda m: m.group(1) + " ", out)
    return out, found


def _is_participant(word: str, names: set[str]) -> bool:
    return any(_same_person(word, n) for n in names)


def _same_person(a: str, b: str) -> bool:
    """"mel" and "melanie" are the same person; a prefix of three letters or more counts."""
    a, b = a.lower(), b.lower()
    if a == b:
        return True
    short, long_ = (a, b) if len(a) < len(b) else (b, a)
    return len(short) >= 3 and long_.startswith(short)


def _dialogue_units(turns: list[_Turn], chunk: int, speakers: frozenset[str] = frozenset()) -> list[Unit]:
    names = {t.name.lower() for t in turns} | set(speakers)
    units: list[Unit] = []
    for i, turn in enumerate(turns):
        speaker = turn.name.lower()
        addressee = _addressee(turns, i, names)
        label = f"[{turn.tag}] {turn.name}" if turn.tag else turn.name
        body = " ".join(part.strip() for part in turn.body if part.strip())
        for sentence in _sentences(body):
            analysed, called = _vocatives(sentence, names)
            if addressee is None and called:
                addressee = sorted(called)[0]
            about: set[str] = set()
            first = bool(_FIRST_PERSON.search(analysed))
            second = bool(_SECOND_PERSON.search(analysed))
            if first:
                about.add(speaker)
            # "Do your research and find an agency." is what the speaker advises: neither a
            # fact about the one addressed nor something the speaker did
            advice = bool(_ADVICE.match(analysed))
            if second and addressee and not advice:
                about.add(addressee)
            for word in _CAPITALISED.findall(analysed):
                word = _POSSESSIVE.sub("", word).lower()
                for n in names:
                    if _same_person(word, n):
                        about.add(n)
            if not first and not second and not about and not advice:
                # "That race sounds great, Mel!" comments on the one addressed, and so does
                # "Sorry 'bout the accident!" after the other told of an accident; "Started
                # hitting the gym last week." drops its "I" and is the speaker's, and so is
                # "Hey Mel, that roadtrip was insane!": a hello names whom the news is for.
                addressed = set() if _OPENING.match(sentence) else set(called)
                about = addressed or set(_reacted_to(analysed, turns, i, units)) or {speaker}
            frozen = frozenset(about)
            units.append(Unit(
                chunk=chunk, order=len(units), text=sentence, analysed=analysed, kind="dialogue",
                label=label, speaker=turn.name, about=frozen, question=_asks(sentence),
                line_start=turn.line, line_end=turn.line + max(0, len(turn.body) - 1), block=i,
            ))
    return units


_OPENING = re.compile(r"^\W*(?:hey|hi|hello|yo|dear|good\s+(?:morning|afternoon|evening)|morning|evening)\b",
                      re.IGNORECASE)
"""A sentence opening with a hello: the name after it says whom the speaker talks to, not whom
the sentence is about."""

_ADVICE = re.compile(
    r"^\W*(?:(?:just|so|and|but|maybe|definitely|really)\s+)?(?:"
    r"(?:do|don't|try|take|make|keep|find|get|go|remember|check|give|stay|start|think\s+about|consider|"
    r"look\s+(?:into|for|at)|focus|reach\s+out|talk\s+to|ask|trust|believe|follow|be)\b(?!\s+you\b)"
    r"|you\s+(?:should|could|might\s+want\s+to|need\s+to|have\s+to|must|ought\s+to)\b)",
    re.IGNORECASE)
"""A sentence that advises ("Do your research…", "You should try…"): it states what the speaker
recommends, not what anyone did or has, so it is about no one a question names."""

REACTION_WORDS = 10
"""A reaction is short ("Sorry 'bout the accident!"); a longer sentence states something of its own."""
_NOT_TOPICS = frozenset("""sounds looks seems must amazing awesome great glad happy sorry cool nice
    time times today yesterday tomorrow week weeks weekend month months year years night days last
    next""".split())
"""Words two turns share without sharing a topic (beside function words): praise and time."""


def _reacted_to(sentence: str, turns: list[_Turn], i: int, earlier: list[Unit]) -> frozenset[str]:
    """Whom a short sentence without "I" or "you" comments on, when it comments on what the
    other speaker just told (not asked): the people the told sentences sharing its topic are
    about. "Sorry 'bout the accident!" after "My son got into an accident." is about the one
    who had it; "The store's doing great!" after "Good luck with your store!" stays the
    speaker's, whose store it is. Empty when it is no such comment."""
    if i == 0 or turns[i - 1].name.lower() == turns[i].name.lower() or len(sentence.split()) > REACTION_WORDS:
        return frozenset()
    told = [u for u in earlier if u.block == i - 1 and not u.question]
    topics = _topics(sentence)
    about: set[str] = set()
    for unit in told:
        if topics & _topics(unit.text):
            about |= unit.about
    return frozenset(about)


@lru_cache(maxsize=4096)
def _topics(text: str) -> frozenset[str]:
    """A sentence's topic words, as `_reacted_to` compares them: read once per sentence, though
    each comment after a turn compares against all of that turn's sentences."""
    return frozenset(w.lower() for w in content_words(text)) - _NOT_TOPICS


def _addressee(turns: list[_Turn], i: int, names: set[str]) -> str | None:
    """Whom a turn speaks to: in a two-person talk the other one; else the nearest other voice."""
    speaker = turns[i].name.lower()
    others = names - {speaker}
    if len(others) == 1:
        return next(iter(others))
    for j in (i - 1, i + 1, i - 2, i + 2):
        if 0 <= j < len(turns) and turns[j].name.lower() != speaker:
            return turns[j].name.lower()
    return None


def _asks(sentence: str) -> bool:
    return sentence.rstrip(" *_\"'”’)`").endswith("?")


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE_END.split(text) if s and s.strip()]


# -- prose ------------------------------------------------------------------------------------


def _prose_units(text: str, chunk: int) -> list[Unit]:
    """Sentences of paragraphs (wrapped lines joined first), grouped into blocks: a blank line,
    a heading or a list item starts a new one. The nearest heading is analysed with each
    sentence under it ("### Retrieval" tells what the list below it is about)."""
    units: list[Unit] = []
    block = 0
    pending: list[tuple[int, str]] = []
    heading = ""

    def flush() -> None:
        if not pending:
            return
        first, last = pending[0][0], pending[-1][0]
        body = " ".join(part for _, part in pending)
        pending.clear()
        for sentence in _sentences(body):
            units.append(Unit(chunk=chunk, order=len(units), text=sentence,
                              analysed=index_text(f"{sentence} {heading}".strip()),
                              kind="prose", question=_asks(sentence), line_start=first, line_end=last,
                              block=block))

    in_fence = False
    introduced: Unit | None = None  # the sentence ending in ":" that the open fence follows
    fenced: list[str] = []
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if stripped.startswith(("```", "~~~")):
            flush()
            in_fence = not in_fence
            if in_fence:
                last = units[-1] if units else None
                introduced = last if last is not None and not last.heading and last.text.rstrip().endswith(":") \
                    and last.line_end is not None and last.line_end >= number - 2 else None
                fenced = [line]
            elif introduced is not None:
                # "Codex — add to `~/.codex/config.toml`:" is answered by the block it introduces
                introduced.extent = "\n".join([*fenced, line])
                introduced = None
            continue
        if in_fence:
            fenced.append(line)
            if stripped:
                units.append(Unit(chunk=chunk, order=len(units), text=stripped, analysed=index_text(stripped),
                                  kind="prose", question=_asks(stripped), line_start=number,
                                  line_end=number, block=block))
            continue
        if not stripped or set(stripped) <= set("-=*_|: "):
            flush()
            block += 1
            continue
        if stripped.startswith("#"):
            flush()
            block += 1
            heading = _MARKDOWN_PREFIX.sub("", line).strip().strip("#").strip()
            units.append(Unit(chunk=chunk, order=len(units), text=heading, analysed=index_text(heading),
                              kind="prose", heading=True, line_start=number, line_end=number, block=block))
            continue
        if stripped.startswith("|"):
            # a table row is a record of its own, not a clause of a sentence spanning the table
            flush()
            block += 1
            row = " | ".join(cell.strip() for cell in stripped.strip("|").split("|"))
            units.append(Unit(chunk=chunk, order=len(units), text=row, analysed=index_text(f"{row} {heading}".strip()),
                              kind="prose", line_start=number, line_end=number, block=block))
            continue
        if _LIST_ITEM.match(line):
            flush()
            block += 1
        pending.append((number, _MARKDOWN_PREFIX.sub("", line).strip()))
    flush()
    return units


# -- code -------------------------------------------------------------------------------------


def _code_units(text: str, chunk: int) -> list[Unit]:
    """Signature + docstring together, comment blocks together, other non-trivial lines alone."""
    lines = text.splitlines()
    units: list[Unit] = []
    i = 0

    def add(start: int, end: int, through: int | None = None) -> None:
        body = "\n".join(lines[start:end + 1]).strip("\n")
        last = end if through is None else through
        if body.strip():
            whole = body if last == end else "\n".join(lines[start:last + 1])
            units.append(Unit(chunk=chunk, order=len(units), text=_dedent(body), analysed=index_text(whole),
                              kind="code", label=f"L{start + 1}" if start == last else f"L{start + 1}-{last + 1}",
                              line_start=start + 1, line_end=last + 1, extent=whole if last != end else ""))

    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        if not stripped or _TRIVIAL_CODE.match(line):
            i += 1
            continue
        if _CODE_SIGNATURE.match(line):
            end = i
            # a signature may span lines until its colon / brace
            while end + 1 < len(lines) and not re.search(r"[:{]\s*(#.*)?$|=>|;\s*$", lines[end]) and end - i < 6:
                end += 1
            doc_end = _docstring_end(lines, end + 1)
            head = doc_end if doc_end is not None else end
            add(i, head, through=_body_end(lines, i, head))
            i = head + 1
            continue
        opened = _OPEN_LITERAL.match(line)
        if opened:
            # a constant spelled over several lines (a dict, a list) is one statement
            end = _literal_end(lines, i)
            if end > i:
                add(i, end)
                i = end + 1
                continue
        if stripped.startswith(_DOCSTRING_QUOTES):
            doc_end = _docstring_end(lines, i)
            end = doc_end if doc_end is not None else i
            add(i, end)
            i = end + 1
            continue
        if _COMMENT.match(line):
            end = i
            while end + 1 < len(lines) and _COMMENT.match(lines[end + 1]) and lines[end + 1].strip():
                end += 1
            add(i, end)
            i = end + 1
            continue
        # a statement whose brackets stay open (a call, a raise with its message) runs on
        end = _literal_end(lines, i) if _bracket_balance(line) > 0 else i
        add(i, end)
        i = end + 1
    return units


def _body_end(lines: list[str], start: int, head: int) -> int:
    """The last line of the definition opened on line `start` whose signature and docstring end
    on `head`: the lines indented deeper than its signature that follow (as far as the chunk
    goes). A definition is quoted by its signature and docstring, but what its body does is
    part of what it is: `sniff_bytes` checks magic bytes and probes UTF-8 in its body."""
    indent = len(lines[start]) - len(lines[start].lstrip())
    last = head
    for j in range(head + 1, len(lines)):
        line = lines[j]
        if not line.strip():
            continue
        if len(line) - len(line.lstrip()) <= indent:
            break
        last = j
    return last


def defined_name(text: str) -> str:
    """The name the first definition in `text` gives ("" when it defines none)."""
    match = DEFINED.search(text)
    return next((name for name in match.groups() if name), "") if match else ""


def _literal_end(lines: list[str], start: int, limit: int = 40) -> int:
    """The last line of a bracketed literal opened on line `start` (depth counted outside
    strings; `start` itself when it does not close within `limit` lines)."""
    depth = 0
    for j in range(start, min(len(lines), start + limit)):
        depth += _bracket_balance(lines[j])
        if depth <= 0:
            return j
    return start


def _bracket_balance(line: str) -> int:
    code = re.sub(r"'(?:\\.|[^'\\])*'|\"(?:\\.|[^\"\\])*\"|#.*$", "", line)
    return sum(code.count(c) for c in "([{") - sum(code.count(c) for c in ")]}")


def _docstring_end(lines: list[str], start: int) -> int | None:
    """Index of the last line of a docstring starting at `start` (None if there is none)."""
    if start >= len(lines):
        return None
    opening = lines[start].strip()
    quote = next((q for q in _DOCSTRING_QUOTES if opening.startswith(q) or opening.startswith(("r" + q, "f" + q))), None)
    if quote is None:
        return None
    rest = opening.split(quote, 1)[1]
    if quote in rest:
        return start
    for j in range(start + 1, min(len(lines), start + 40)):
        if quote in lines[j]:
            return j
    return min(len(lines) - 1, start + 39)


def _dedent(text: str) -> str:
    import textwrap

    return textwrap.dedent(text).strip()
