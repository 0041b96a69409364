"""The answer to a "when" question read off one sentence: the day its time expression points
to, resolved against the day it was said (dates.py), a time of day it states, or the bound the
day of saying gives. Pure functions over text and dates."""

from __future__ import annotations

import re
from datetime import date

from chinvex.answer.dates import Resolved, day_text, resolve, written_date
from chinvex.answer.question import Question

SAID_BY = "By "


def when_answer(text: str, expects: str, said_on: date | None, present: bool = False,
                before: str | None = None) -> str | None:
    """The answer to a "when" question from words said on `said_on`: the day their time
    expression points to ("yesterday" -> "7 May 2023"), or "By <that day>" when they carry
    none (what someone says they did, they did by the day they said it). A time of day the
    words state is the answer when they name no day: alone for what happens at that time
    (`present`: "When is the standup?" -> "8:00"), else on the day they were said ("When did
    payments recover?" -> "14:49 on 14 March 2026").

    Words that say no time may go on from the sentence `before` them in the same turn, which
    does: "Something exciting happened last Friday. I went to a game convention…" went on last
    Friday. Its past or present time is theirs; a plan it speaks of ("next week") is not what
    the words after it say was done."""
    if expects != "date":
        return None
    written = written_date(text)
    found = resolve(text, said_on) if said_on is not None else None
    clock = CLOCK.search(text) if found is None and written is None else None
    if found is None and written is None and clock is None:
        borrowed = _earlier_time(before, said_on)
        if isinstance(borrowed, Resolved):
            found = borrowed
        else:
            written = borrowed
    if clock is not None:
        at = clock.group(0)
        return at if present or said_on is None else f"{at} on {day_text(said_on)}"
    if said_on is None:
        return written
    if found is None:
        return written or f"{SAID_BY}{day_text(said_on)}"
    return found.meaning[0].upper() + found.meaning[1:]


def time_before(text: str, before: str | None, said_on: date | None) -> Resolved | str | None:
    """The time `before` (the sentence before `text` in its turn) says, when `text` says none
    of its own and that time is not a plan (see `when_answer`); else None."""
    if written_date(text) or CLOCK.search(text) or (said_on and resolve(text, said_on)):
        return None
    return _earlier_time(before, said_on)


def _earlier_time(before: str | None, said_on: date | None) -> Resolved | str | None:
    """The time the sentence `before` says, unless it is a plan (after `said_on`)."""
    if not before:
        return None
    earlier = resolve(before, said_on) if said_on is not None else None
    if earlier is not None:
        return earlier if said_on is not None and earlier.around <= said_on else None
    return written_date(before)


CLOCK = re.compile(r"\b(?:(?:[01]?\d|2[0-3]):[0-5]\d(?:\s*[ap]\.?m\b\.?)?(?:\s*(?:UTC|GMT|[A-Z]{2,4}T))?"
                    r"|(?:1[0-2]|0?[1-9])\s*[ap]\.?m\b\.?)", re.IGNORECASE)
"""A time of day: "8:00", "14:49 UTC", "9:30 pm", "8 a.m."."""
_PRESENT = frozenset({"is", "are", "does", "do"})


def asks_present(question: Question | None) -> bool:
    """Does a "when" question ask about what happens now or regularly ("When is…", "When does…")?"""
    words = question.text.lower().split()[:2] if question is not None else []
    return len(words) == 2 and words[1] in _PRESENT
