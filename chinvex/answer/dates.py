"""When something happened, from what was said and when it was said.

In a dated conversation "yesterday" means the day before the message, not the day before the
question. A "when" answer therefore carries a date resolved against the moment the words were
said: "I went to a support group yesterday" said on 8 May 2023 answers "When did she go?" with
"7 May 2023"; "last week" becomes "the week before 8 May 2023", "last year" becomes "2022",
"three days ago" an exact day. Expressions whose day cannot be pinned (a week, a weekend) keep
their vagueness and name the reference date instead of inventing precision.

Pure functions: the caller finds when a passage was said (a turn's timestamp, a transcript's
`Date:` header) and this module only reads text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime, timedelta

MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September",
          "October", "November", "December")
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_WEEKDAY = r"(?P<wd>mon(?:day)?|tue(?:s|sday)?|wed(?:nesday)?|thu(?:rs?|rsday)?|fri(?:day)?|sat(?:urday)?|sun(?:day)?)\b\.?"
_NUMBER_WORDS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "couple of": 2, "a couple of": 2,
    "few": 3, "a few": 3,
}
_COUNT = r"(?P<n>\d{1,3}|a couple of|couple of|a few|few|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)"

# A header line naming when a transcript or note was written: "Date: 1:56 pm on 8 May, 2023".
_DATE_LINE = re.compile(r"^\s*(?:[*_>#-]\s*)*(?:date|when|session date|written|created)\s*[*_]*\s*:\s*(?P<value>.{4,60})$",
                        re.IGNORECASE | re.MULTILINE)


def day_text(day: date) -> str:
    """`7 May 2023`: day, month name, year, the unambiguous form people read and write."""
    return f"{day.day} {MONTHS[day.month - 1]} {day.year}"


def month_text(year: int, month: int) -> str:
    return f"{MONTHS[month - 1]} {year}"


def parse_date(value: str) -> date | None:
    """A calendar day from free text ("1:56 pm on 8 May, 2023", "2023-05-08T13:56:00Z"), or None.

    dateutil's fuzzy parser reads the many ways exporters write a date; text without a day and a
    year is refused rather than completed with today's."""
    from dateutil import parser

    text = value.strip()
    if not re.search(r"\b(?:19|20)\d\d\b", text):
        return None
    sentinel = datetime(1, 1, 1)
    try:
        parsed = parser.parse(text, fuzzy=True, default=sentinel)
    except (ValueError, OverflowError):
        return None
    if parsed.year == 1:
        return None
    return parsed.date()


def header_date(text: str) -> date | None:
    """The date a `Date:` line near the top of a document states (first 20 lines), if any."""
    head = "\n".join(text.splitlines()[:20])
    for match in _DATE_LINE.finditer(head):
        found = parse_date(match.group("value"))
        if found is not None:
            return found
    return None


@dataclass(frozen=True)
class Resolved:
    """A time expression found in a sentence and what it means on the day it was said."""

    expression: str  # as written: "yesterday", "last week"
    meaning: str  # "7 May 2023", "the week before 8 May 2023"
    exact: bool  # a single day (or month/year) rather than a span relative to the reference
    around: date  # a day inside what it means (for comparing with a month the question names)


def _count(raw: str) -> int:
    raw = raw.lower().strip()
    return int(raw) if raw.isdigit() else _NUMBER_WORDS.get(raw, 1)


def _shift_months(day: date, months: int) -> tuple[int, int]:
    index = day.year * 12 + (day.month - 1) + months
    return index // 12, index % 12 + 1


_RULES: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"\b(?:the\s+)?day\s+before\s+yesterday\b", re.I), "day_before_yesterday"),
    (re.compile(r"\byesterday\b|\blast\s+night\b", re.I), "yesterday"),
    (re.compile(r"\b(?:today|tonight|this\s+(?:morning|afternoon|evening))\b", re.I), "today"),
    (re.compile(r"\btomorrow\b", re.I), "tomorrow"),
    (re.compile(rf"\b{_COUNT}\s+(?P<unit>day|week|weekend|month|year)s?\s+ago\b", re.I), "ago"),
    (re.compile(rf"\b{_COUNT}\s+(?P<unit>day|week|weekend|month|year)s?\s+(?:later|from\s+now)\b", re.I), "later"),
    (re.compile(rf"\bin\s+{_COUNT}\s+(?P<unit>day|week|weekend|month|year)s?\b(?!\s+(?:ago|later|from|before|after))",
                re.I), "later"),
    (re.compile(rf"\b(?:last|this\s+past|past)\s+{_WEEKDAY}", re.I), "last_weekday"),
    (re.compile(r"\b(?:on\s+)?(?P<wd>monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b", re.I), "bare_weekday"),
    (re.compile(r"\b(?:last|this\s+past|past)\s+(?P<unit>week|weekend|month|year|summer|winter|spring|fall|autumn)\b", re.I), "last"),
    (re.compile(r"\bnext\s+(?P<unit>week|weekend|month|year|summer|winter|spring|fall|autumn)\b", re.I), "next"),
    (re.compile(r"\bthis\s+(?P<unit>week|weekend|month|year|summer|winter|spring|fall|autumn)\b", re.I), "this"),
    (re.compile(r"\b(?:recently|lately|the\s+other\s+day)\b", re.I), "recently"),
]


def resolve(sentence: str, said_on: date) -> Resolved | None:
    """The first time expression of `sentence`, resolved against the day it was said."""
    best: tuple[int, Resolved] | None = None
    for pattern, kind in _RULES:
        match = pattern.search(sentence)
        if match is None or (best is not None and match.start() >= best[0]):
            continue
        meaning = _meaning(kind, match, said_on)
        if meaning is not None:
            best = (match.start(), Resolved(match.group(0), meaning[0], meaning[1], meaning[2]))
    return best[1] if best else None


def _meaning(kind: str, match: re.Match[str], ref: date) -> tuple[str, bool, date] | None:
    said = day_text(ref)
    if kind == "day_before_yesterday":
        day = ref - timedelta(days=2)
        return day_text(day), True, day
    if kind == "yesterday":
        day = ref - timedelta(days=1)
        return day_text(day), True, day
    if kind == "today":
        return said, True, ref
    if kind == "tomorrow":
        day = ref + timedelta(days=1)
        return day_text(day), True, day
    if kind == "ago":
        n, unit = _count(match.group("n")), match.group("unit").lower()
        if unit == "day":
            day = ref - timedelta(days=n)
            return day_text(day), True, day
        if unit == "year":
            return str(ref.year - n), True, ref.replace(year=ref.year - n, day=1)
        if unit == "month":
            year, month = _shift_months(ref, -n)
            return month_text(year, month), True, date(year, month, 1)
        words = {1: "one", 2: "two", 3: "three", 4: "four"}.get(n, str(n))
        return f"{words} {unit}{'s' if n != 1 else ''} before {said}", False, ref - timedelta(weeks=n)
    if kind == "later":
        n, unit = _count(match.group("n")), match.group("unit").lower()
        if unit == "day":
            day = ref + timedelta(days=n)
            return day_text(day), True, day
        if unit == "month":
            year, month = _shift_months(ref, n)
            return month_text(year, month), True, date(year, month, 1)
        if unit == "year":
            return str(ref.year + n), True, ref.replace(year=ref.year + n, day=1)
        words = {1: "one", 2: "two", 3: "three", 4: "four"}.get(n, str(n))
        return f"{words} {unit}{'s' if n != 1 else ''} after {said}", False, ref + timedelta(weeks=n)
    if kind in ("last_weekday", "bare_weekday"):
        target = _WEEKDAYS.index(_weekday(match.group("wd")))
        back = (ref.weekday() - target) % 7 or 7
        day = ref - timedelta(days=back)
        # "last Friday" said on a Saturday may mean the day before or the Friday of the week
        # before: the answer says it as the words do, against the day they were said, and
        # `around` is the nearer reading
        return f"the {_WEEKDAYS[target].capitalize()} before {said}", True, day
    unit = match.group("unit").lower() if "unit" in match.groupdict() else ""
    if kind == "last":
        if unit == "year":
            return str(ref.year - 1), True, date(ref.year - 1, 6, 30)
        if unit == "month":
            year, month = _shift_months(ref, -1)
            return month_text(year, month), True, date(year, month, 15)
        return f"the {unit} before {said}", False, ref - timedelta(days=7 if unit in ("week", "weekend") else 90)
    if kind == "next":
        if unit == "year":
            return str(ref.year + 1), True, date(ref.year + 1, 6, 30)
        if unit == "month":
            year, month = _shift_months(ref, 1)
            return month_text(year, month), True, date(year, month, 15)
        return f"the {unit} after {said}", False, ref + timedelta(days=7 if unit in ("week", "weekend") else 90)
    if kind == "this":
        if unit == "year":
            return str(ref.year), True, ref
        if unit == "month":
            return month_text(ref.year, ref.month), True, ref
        return f"the {unit} of {said}", False, ref
    if kind == "recently":
        return f"shortly before {said}", False, ref
    return None


def _weekday(text: str) -> str:
    low = text.lower().rstrip(".")
    return next(day for day in _WEEKDAYS if day.startswith(low[:3]))


_WRITTEN = re.compile(
    r"\b(?:\d{4}-\d\d-\d\d|"
    r"\d{1,2}(?:st|nd|rd|th)?\s+(?:of\s+)?(?:" + "|".join(MONTHS) + r")\.?(?:,?\s+(?:19|20)\d\d)?|"
    r"(?:" + "|".join(MONTHS) + r")\.?\s+\d{1,2}(?:st|nd|rd|th)?(?:,?\s+(?:19|20)\d\d)?|"
    r"(?:" + "|".join(MONTHS) + r")\s+(?:19|20)\d\d|"
    r"(?<=\bin\s)(?:19|20)\d\d)\b(?!:)")
"""A calendar date written out: "2024-03-03", "3 March 2024", "March 3, 2024", "March 2024", "in 2019"."""


def written_date(sentence: str) -> str | None:
    """The first calendar date `sentence` writes out (as written), if any: it needs no day of
    saying to be read."""
    match = _WRITTEN.search(sentence)
    return match.group(0) if match else None
