"""Whom a sentence of a two-party chat is about, read from where its pronouns stand.

"I wanted to tell ya I just joined a writers group." says "ya", but the one who joined is the
speaker: the addressee is only the object of a discourse opener. In a chat, "I", "my" and "we"
(or an "I" the sentence drops: "Can't wait to…", "Hope…") make a sentence the speaker's; "you"
or "your" makes it the addressee's where the addressee is a clause's subject ("you joined…",
"I hope you had fun", "the country you will visit", "your painting is lovely"), not where it is
an object or an aside of a sentence whose subject is the speaker ("thanks for asking you, I…",
"I'm proud of you", "tell ya", "I love your turtles"). A sentence with a "you" and no first
person at all ("Must've taken you ages!") has nobody else to be about and stays the addressee's.
A participant named in the sentence is about that person.

Where a word stands is read cheaply, without a parser: discourse openers at the start ("I wanted
to tell you that", "guess what", "you know what,") are dropped; a "you"/"your" opens a clause
at the start, after punctuation, a conjunction, an auxiliary that asks ("did you…?"), a verb that
takes a clause ("hope", "think", "heard") or an adverb, and a "you" followed by an auxiliary or
a verb ("you will", "you love", "you joined") is a subject; after a preposition or any other
word it is an object.

Not used by `dialogue_units` yet: measured leave-one-conversation-out, the answers it changes are
all better, but the refitted gate's held-out figures moved down on two conversations, so it was
not taken (bench/RESULTS.md, "Speaker attribution (session 18)").
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

_OPENER = re.compile(
    r"^\W*(?:(?:hey|hi|hello|yo|so|oh|well|yeah|yes|wow|btw|anyway|anyways|also|and|but|ok|okay|"
    r"by the way|guess what|you know what|you know(?=,)|you see(?=,)|did you know(?: that)?|"
    r"let me tell (?:you|ya)|"
    r"(?:i\s+)?(?:just\s+|really\s+)?(?:wanted|want|have|had|got|need|needed|gotta|had to|have to|"
    r"got to)(?: to)? (?:tell|let|say to|share with|update) (?:you|ya|u)(?: know)?(?: that)?|"
    r"i (?:must|have to|gotta|got to) (?:say|admit)(?: that)?|i tell (?:you|ya))\b[\s,!.:;—–-]*)+",
    re.IGNORECASE,
)
"""Discourse openers: what they address to the listener frames the news, it is not the news."""

_DROPPED_I = re.compile(
    r"^\W*(?:(?:so|really|just)\s+)?(?:can['’]?t wait|cannot wait|hope|hoping|(?:so\s+)?glad|wish|miss|"
    r"been|gotta|got to|need to|wanted to|thanks|thank you)\b",
    re.IGNORECASE,
)
"""A sentence that drops its "I" ("Can't wait to see your studio!", "Hope your trip went well.",
"Been busy lately."): the speaker is its subject."""

_WORD = re.compile(r"[a-z]+(?:['’][a-z]+)?|[,;:!?.…—–()\"“”]|\s-\s")
_FIRST = frozenset("""i i'm i've i'd i'll me my mine myself we we're we've we'd we'll our ours
    ourselves us""".split())
_SECOND_SUBJECT = frozenset("you're you've you'd you'll".split())
_SECOND_POSSESSIVE = frozenset("your yours".split())
_SECOND_PLAIN = frozenset("you ya u".split())
_SECOND_REFLEXIVE = frozenset("yourself yourselves".split())
_SECOND = _SECOND_SUBJECT | _SECOND_POSSESSIVE | _SECOND_PLAIN | _SECOND_REFLEXIVE
_CLAUSE_START = frozenset("""and but so or if when that because cause since while as how what
    where why who which until before after unless though although once whether than then like
    do does did don't didn't doesn't have has had haven't hasn't hadn't are were aren't weren't
    is was can could will would should shall may might must can't couldn't won't wouldn't shouldn't
    think thought hope hoping hoped bet guess know knew believe wish glad sure seems seemed sounds
    sounded looks looked feel felt hear heard imagine mean remember say said noticed
    really just also always never ever still already finally totally definitely actually
    probably now maybe clearly obviously""".split())
"""Words after which a "you" (or "your") opens a clause: conjunctions and relatives, the
auxiliaries of a question ("did you go?"), verbs that take a clause ("I hope you had fun",
"sounds like you…"), and adverbs that stand before a subject ("really, you did it")."""
_PREPOSITIONS = frozenset("""of for to with at on in about from by into onto over under behind without
    toward towards around""".split())
_VERB_AFTER = frozenset("""am are were was will would can could should must might may shall do did does
    don't didn't doesn't have has had haven't hasn't hadn't won't wouldn't can't couldn't shouldn't
    got gotta get love loved like liked know knew want wanted need needed think thought feel felt make
    made go went see saw say said mentioned told play played take took keep kept look looked find found
    try tried seem seemed start started really just also always never ever still already finally
    totally definitely actually""".split())
"""Words that, after a "you", show it is a clause's subject: an auxiliary or a verb ("the fourth
country you will visit", "activities you love"), or an adverb standing before one."""
_CAPITALISED = re.compile(r"\b[A-Z][a-z][\w’'-]*")
_POSSESSIVE_END = re.compile(r"['’]s?$")


@dataclass(frozen=True)
class Persons:
    """Which of the two parties a sentence is about."""

    speaker: bool
    addressee: bool


def same_person(a: str, b: str) -> bool:
    """"mel" and "melanie" are the same person; a prefix of three letters or more counts."""
    a, b = a.lower(), b.lower()
    if a == b:
        return True
    short, long_ = (a, b) if len(a) < len(b) else (b, a)
    return len(short) >= 3 and long_.startswith(short)


MIN_MISSPELT = 5
"""A name this long or longer, asked with one letter wrong, added, dropped or two swapped, is the
same name ("Andew" for Andrew, "Deboran" for Deborah); a shorter one is not ("Jon" and "John")."""


def asked_person(word: str, name: str) -> bool:
    """Does a question's `word` name the participant `name`: the same person (`same_person`), or
    the name misspelt by one letter when both are at least `MIN_MISSPELT` letters long. Only for
    reading a question: people type questions fast, the talk spells its speakers' names one way."""
    return same_person(word, name) or (min(len(word), len(name)) >= MIN_MISSPELT
                                       and _one_edit(word.lower(), name.lower()))


def _one_edit(a: str, b: str) -> bool:
    """Are `a` and `b` one substitution, insertion, deletion or swap of neighbours apart?"""
    if a == b or abs(len(a) - len(b)) > 1:
        return a == b
    i = next((k for k in range(min(len(a), len(b))) if a[k] != b[k]), min(len(a), len(b)))
    if len(a) == len(b):
        return a[i + 1:] == b[i + 1:] or (a[i + 2:] == b[i + 2:] and a[i:i + 2] == b[i:i + 2][::-1])
    longer, shorter = (a, b) if len(a) > len(b) else (b, a)
    return longer[i + 1:] == shorter[i:]


def discourse_body(sentence: str) -> str:
    """The sentence without its discourse openers ("I wanted to tell ya", "guess what,")."""
    body = _OPENER.sub("", sentence, count=1)
    return body if body.strip() else sentence


def persons(sentence: str) -> Persons:
    """Whom of speaker and addressee the sentence is about (see the module docstring)."""
    body = discourse_body(sentence)
    tokens = [t.replace("’", "'") for t in _WORD.findall(body.lower())]
    speaker = any(t in _FIRST for t in tokens) or bool(_DROPPED_I.match(body))
    second = [i for i, t in enumerate(tokens) if t in _SECOND]
    addressee = any(_subject_at(tokens, i) for i in second) or (bool(second) and not speaker)
    return Persons(speaker, addressee)


def about(sentence: str, speaker: str, addressee: str | None, people: Iterable[str]) -> frozenset[str]:
    """The participants (lower-cased) a sentence is about: speaker and addressee as `persons`
    reads them, and every one of `people` it names. Empty when it says nothing of anyone (a
    caller decides whom such a sentence comments on)."""
    who = persons(sentence)
    found = {speaker.lower()} if who.speaker else set()
    if who.addressee and addressee:
        found.add(addressee.lower())
    for word in _CAPITALISED.findall(sentence):
        word = _POSSESSIVE_END.sub("", word)
        found.update(p.lower() for p in people if same_person(word, p))
    return frozenset(found)


def _subject_at(tokens: list[str], i: int) -> bool:
    """Is the second-person word at `i` a clause's subject (or, for "your", inside one)?"""
    token = tokens[i]
    if token in _SECOND_SUBJECT:
        return True
    if token in _SECOND_REFLEXIVE:
        return False
    before = tokens[i - 1] if i else None
    if before in _PREPOSITIONS:
        return False
    if before is None or not before[0].isalpha() or before in _CLAUSE_START:
        return True
    after = tokens[i + 1] if i + 1 < len(tokens) else ""
    return token in _SECOND_PLAIN and (after in _VERB_AFTER or after.endswith("ed"))
