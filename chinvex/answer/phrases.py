"""The phrase of a sentence that answers a "what" question: what it says beyond the question.

"What kind of professional experience did Gina get accepted for?" is answered by "fashion
internship", not by "I just got accepted for a fashion internship!"; "What type of date is Andrew
going on?" by "picnic date"; "What new hobby did James become interested in?" by "extreme
sports". The sentence says the question's words and the answer next to them, so the answer is
read off around those words:

1. the question names the kind of thing it wants ("what course", "what type of show"): the
   words in front of that noun in the sentence ("a meditation course" -> "meditation course"),
   or the name or title after it ("a game called Cyberpunk 2077");
2. else the fullest phrase after one of the question's words the sentence says, up to the next
   of them or the next clause boundary ("...interested in extreme sports" -> "extreme sports",
   "I used to play a guitar when I was younger" -> "guitar");
3. else the words before the first of them, when they are its subject ("Eagles have always
   mesmerized me" -> "Eagles"), never the speaker.

Function words, particles and time expressions at either edge (who did it, auxiliaries,
prepositions, "yesterday") are not part of the phrase. When nothing is left, None: the answer
stays the clause. Pure functions over text.
"""

from __future__ import annotations

import re

from chinvex.answer.question import Question
from chinvex.answer.text import Stemmer, base_word
from chinvex.retrieval.lexical import index_text

MAX_PHRASE_WORDS = 8
"""A phrase longer than this is not a span the question asked for; the clause is kept."""
MAX_PREMODIFIERS = 3
MAX_CALLED_GAP = 80
"""Characters between the asked noun and "called …" for the name to be the noun's."""
_EDGE = frozenset("""i i'm i've i'd i'll me my mine myself we we're we've we'd we'll our us you you're you've you'd
    you'll your he he's his him she she's her they've they'd they'll
    they they're their them it it's its this that these those there here the a an some any and or but so then
    also just really finally recently lately actually totally already still even always never ever usually
    often now too very much more most quite pretty is are was were be been being am do does did have has
    had having 've 's 'm 're get got gets getting go went going gonna to of in on at for with from by about
    into onto over through like as than before after during what which who when where how why if because
    while since yeah yes wow oh hey well ok okay hi thanks thank called named titled up down out off away back around
    together again every each all not don't doesn't didn't haven't hasn't can't won't isn't wasn't""".split())
"""Words that are never the first or last word of an answer phrase."""
_PRE_SKIP = frozenset("""new old cool great awesome amazing nice good big little small huge first last own
    other another different various many several few favorite favourite special whole one easy hard fun
    important true longer""".split()) | _EDGE
"""Words that describe rather than name: in front of the asked noun ("a new yoga pose"), and never a
phrase on their own ("amazing", "one" are not what a "what" question asks for)."""
_KIND_WORDS = frozenset("kind kinds type types sort sorts form forms".split())
_STOP_AT = re.compile(r"\s*(?:[;!?()\[\]]|,(?!\d)|:(?=\s|$)|\.(?!\d)|\s[-–—]\s?|[-–—]\s|\b(?:and\s+(?:it|i|we|she|he|they|that)|"
                      r"but|because|cause|so\s+(?:that|i|we)|which|who|while|when|where|though|although|"
                      r"if|since|until|is|are|was|were)\b)", re.IGNORECASE)
_FIRST_PERSON = re.compile(r"\b(?:i|i'm|i've|i'd|we|we're|we've)\b", re.IGNORECASE)
_PRONOUNS = frozenset("i me we us you he him she her they them it this that these those there".split())
_OBJECT_OPENERS = frozenset("""a an the some any my his her our their your its this that these those in on at for to
    with about of from into onto like as called named titled""".split())
"""Words that open the object of the question's words: what follows them is the thing said."""
_TIME_WORDS = frozenset("""yesterday today tonight tomorrow last next this past week weekend month year night
    morning evening afternoon monday tuesday wednesday thursday friday saturday sunday mon tue wed thu fri
    sat sun ago recently lately later earlier days weeks weekends months years nights""".split())
_RELATIVE_TIME = re.compile(
    r"\s+(?:a|an|one|two|three|four|five|six|\d+|a\s+few|a\s+couple\s+of|several)\s+"
    r"(?:days?|weeks?|weekends?|months?|years?)\s+(?:later|ago|before|after|earlier)\b[.!]*\s*$", re.IGNORECASE)
_AUXILIARIES = frozenset("is are was were do does did has have had can could would will should".split())
_WORD = re.compile(r"[\w'’\"“”-]+(?::[\w'’-]+)*")
_CALLED = re.compile(r"\b(?:called|named|titled)\s+(?P<name>[\"“'‘][^\"”'’]{2,60}[\"”'’]|"
                     r"[A-Z0-9][\w'’.-]*(?:\s+[A-Z0-9][\w'’.-]*){0,4})")


def asked_nouns(question: Question) -> list[str]:
    """The words a "what"/"which" question may name the kind of answer by ("course" in "What
    course did…"; "career" and "milestone" in "What career milestone…"; "professional" and
    "experience" in "What kind of professional experience…"), or none."""
    low = question.text.lower()
    found = re.search(r"\b(?:what|which)\s+(?:\w+\s+)?(?:kinds?|types?|sorts?|forms?)\s+of\s+(\w+)(?:\s+(\w+))?", low)
    if not found:
        found = re.search(r"\b(?:what|which)\s+(\w+)(?:\s+(\w+))?", low)
    if not found:
        return []
    nouns = []
    for word in (w for w in found.groups() if w):
        if word in _EDGE or word in _AUXILIARIES:
            break  # "What is one of…": no noun names the kind
        if word not in _KIND_WORDS:
            nouns.append(word)
    return nouns


def answer_phrase(question: Question, text: str, terms: frozenset[str], stemmer: Stemmer) -> str | None:
    """The phrase of `text` (a clause of the chosen sentence) answering `question`, or None."""
    words = [m for m in _WORD.finditer(text)]
    if not words:
        return None
    stems = stemmer.stem_sets([index_text(base_word(m.group(0))) for m in words])
    for noun in asked_nouns(question):
        phrase = _around_noun(text, words, stems, stemmer.stems(index_text(noun)), terms)
        if phrase:
            return phrase
    said = [i for i, s in enumerate(stems) if s & terms]
    if not said:
        return None
    head = text[:words[said[0]].start()]
    return _between(text, words, said) or _subject_before(head) or _object_before(head)


def _between(text: str, words: list[re.Match[str]], said: list[int]) -> str | None:
    """The fullest phrase following one of the question's words, up to the next of them or the
    next clause boundary ("I used to play a guitar when I was younger" -> "guitar" for "What
    instrument did James use to play when he was younger?"); on a tie the later one."""
    best, most = None, 0
    for k, i in enumerate(said):
        end = words[said[k + 1]].start() if k + 1 < len(said) else len(text)
        gap = text[words[i].end():end]
        phrase = _object_after(gap) if k + 1 == len(said) else _trimmed(_until_stop(gap))
        count = sum(1 for w in (phrase or "").split() if _bare(w) not in _EDGE and _bare(w) not in _TIME_WORDS)
        if phrase and count >= most:
            best, most = phrase, count
    return best


def _until_stop(gap: str) -> str:
    stop = _STOP_AT.search(gap)
    return gap[:stop.start()] if stop else gap


def _object_after(tail: str) -> str | None:
    """What the question's words are said of, after them, up to the next clause boundary
    ("…interested in extreme sports" -> "extreme sports", "…teaching my siblings coding" ->
    "coding"); nothing when only particles, adverbs or a time follow ("…cheer me up")."""
    return _trimmed(_until_boundary(tail)) or None


def _subject_before(head: str) -> str | None:
    """What the question's words are said of, before them, when it is their subject ("Eagles
    have always mesmerized me" -> "Eagles"): not the speaker ("I made a limited edition line")
    and not a word before a pronoun that is the subject ("Guess it helps…")."""
    part = _from_boundary(head)
    if _FIRST_PERSON.search(part):
        return None
    words = part.split()
    while words and _bare(words[-1]) in _EDGE:
        if _bare(words[-1]) in _PRONOUNS:
            return None
        words.pop()
    return _trimmed(" ".join(words)) or None


_SUBJECT = re.compile(r"\b(?:i|we|he|she|they)\s+(?:(?:just|finally|also|really|recently|actually|even|already|"
                      r"always|never|first|then|totally|once)\s+)*(?P<verb>[a-z]+(?:['’][a-z]+)?)\s+(?P<object>.+)$",
                      re.IGNORECASE)
_PREPOSITIONS = re.compile(r"\s(?:for|to|at|in|on|with|from|about|of|into|onto|by|near|after|before|during|"
                           r"around|over|under|through|since|until)\s", re.IGNORECASE)


def _object_before(head: str) -> str | None:
    """What a person did to something, said before the question's words, when the person is
    the subject ("I just finished this cute little bookmark for one of the ladies…" -> "cute
    little bookmark" for "What did Joanna make for one of the ladies?"): the object of their
    verb, up to the first preposition. Not a verb of being or an auxiliary ("I was…", "I have
    to…")."""
    found = _SUBJECT.search(_from_boundary(head))
    if not found or _bare(found.group("verb")) in _EDGE:
        return None
    obj = found.group("object")
    cut = _PREPOSITIONS.search(" " + obj)
    phrase = _trimmed((" " + obj)[:cut.start()] if cut else obj)
    if not phrase or all(_bare(w) in _PRE_SKIP for w in phrase.split()):
        return None
    return phrase


def _around_noun(text: str, words: list[re.Match[str]], stems: list[frozenset[str]],
                 noun_stems: frozenset[str], terms: frozenset[str]) -> str | None:
    """The asked noun with the words naming its kind in front ("picnic date", "electronic and
    rock music"), or the name it is called by ("a game … called “Cyberpunk 2077”")."""
    for i, s in enumerate(stems):
        if not (s & noun_stems):
            continue
        called = _CALLED.search(text, words[i].end())
        if called and called.start() - words[i].end() < MAX_CALLED_GAP:
            return called.group("name").strip("\"“”'‘’")
        lo = i
        while lo > 0 and i - lo < MAX_PREMODIFIERS and not _STOP_AT.search(text[words[lo - 1].end():words[lo].start()]):
            before = words[lo - 1].group(0).lower()
            if before in ("and", "or") and lo > 1 and words[lo - 2].group(0).lower() not in _PRE_SKIP:
                lo -= 2
            elif before not in _PRE_SKIP:
                lo -= 1
            else:
                break
        if lo < i and any(not (stems[j] & terms) for j in range(lo, i)):  # not the question's own words
            return text[words[lo].start():words[i].end()]
    return None


def _until_boundary(tail: str) -> str:
    stop = _STOP_AT.search(tail)
    return tail[:stop.start()] if stop and stop.start() > 0 else (tail if not stop else _after_first(tail, stop))


def _after_first(tail: str, stop: re.Match[str]) -> str:
    """A tail that opens with a boundary ("…game: Cyberpunk") continues after it, to the next."""
    rest = tail[stop.end():]
    again = _STOP_AT.search(rest)
    return rest[:again.start()] if again else rest


def _from_boundary(head: str) -> str:
    cuts = list(_STOP_AT.finditer(head))
    return head[cuts[-1].end():] if cuts else head


_PAST_TENSE = re.compile(r"^[a-z]{3,}(?<!e)ed$")
"""A lone word of this form is a verb's past or participle ("loved", "printed", "tried"), never the
thing a "what" question asks for ("breed", "seed" end in -eed and are kept)."""


def _trimmed(phrase: str) -> str:
    """`phrase` without function words or a time expression at its edges ("yesterday for a
    writing gig" -> "writing gig", "a gaming party two weekends later" -> "gaming party"); ""
    when nothing, or too much, is left."""
    words = _RELATIVE_TIME.sub("", phrase).split()
    for _ in range(2):
        while words and (_bare(words[0]) in _EDGE or _bare(words[0]) in _TIME_WORDS):
            words.pop(0)
        while words and (_bare(words[-1]) in _EDGE or _bare(words[-1]) in _TIME_WORDS):
            words.pop()
    if not words or len(words) > MAX_PHRASE_WORDS or all(not _bare(w).strip("+&-") for w in words):
        return ""
    if len(words) == 1 and _PAST_TENSE.match(_bare(words[0])):
        return ""  # "…and they loved it" -> "loved": what was done, not the thing asked for
    if all(_bare(w) in _PRE_SKIP for w in words):
        return ""  # "amazing", "big one": a description, not the thing asked for
    return " ".join(words).strip(" \"“”'‘’-–—")


def _bare(word: str) -> str:
    return word.lower().strip(".,!?;:\"“”'‘’()").replace("’", "'")
