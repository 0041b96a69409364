"""How human (non-JSON) output writes values: one style for every command.

JSON output carries the raw values (ISO timestamps, full floats, bytes, nulls); a person reading
a terminal gets dates as `2026-11-24 14:03 UTC`, scores with 3 decimals, sizes in KB/MB, and a
dash or "never" where a value is missing, never `None`. Pure functions, no heavy imports: the
CLI's light commands (`context list`) use them too. It lives beside the engine rather than in
`chinvex.cli` because `stats.format_stats` and `doctor.format_report` use it, and importing
anything from `chinvex.cli` builds the whole typer app.
"""

from __future__ import annotations

import math
import re
from datetime import datetime
from typing import Any

MISSING = "–"
"""What stands for an absent value (an en dash)."""

_ISO_IN_TEXT = re.compile(
    r"\b\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?(?![\w:])"
)


def when(value: str | datetime | None, *, missing: str = "never") -> str:
    """A timestamp as `YYYY-MM-DD HH:MM UTC`; text that is not a timestamp is returned as is
    (it still says something), nothing at all becomes `missing`."""
    from chinvex.timeutil import to_utc

    if value is None or value == "":
        return missing
    parsed = to_utc(value)
    if parsed is None:
        return str(value)
    return parsed.strftime("%Y-%m-%d %H:%M UTC")


def dates_in(text: str) -> str:
    """Every ISO 8601 timestamp inside free text (a doctor message, a warning) made readable."""
    return _ISO_IN_TEXT.sub(lambda m: when(m.group(0)), text)


def score(value: float | None, *, missing: str = MISSING) -> str:
    """A score or metric in [0, 1] (or near it): 3 decimals."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return missing
    return f"{value:.3f}"


def raw(value: float | None, *, missing: str = MISSING) -> str:
    """A raw signal whose scale is unknown (BM25 can be 2e-06 or 14): 3 decimals, or 3
    significant digits in exponent form below 0.001, so a tiny value does not print as 0.000."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return missing
    if value != 0 and abs(value) < 0.0005:
        return f"{value:.2e}"
    return f"{value:.3f}"


def number(value: Any, *, missing: str = MISSING) -> str:
    """An integer as is; a float with at most 3 decimals and no trailing zeros (0.9, 1, 0.125)."""
    if value is None:
        return missing
    if isinstance(value, bool) or not isinstance(value, float):
        return str(value)
    text = f"{value:.3f}".rstrip("0").rstrip(".")
    return "0" if text == "-0" else text


PLURALS = {"memory": "memories", "feedback": "feedback", "entry": "entries", "summary": "summaries"}
"""Nouns the CLI counts whose plural is not the noun plus "s"."""


def noun(n: int, word: str) -> str:
    """The noun alone in the form a count of `n` takes, for a phrase where other words come
    between the count and the noun: f"{n} unrecognised {noun(n, 'line')}"."""
    return word if n == 1 else PLURALS.get(word, word + "s")


def counted(n: int, phrase: str) -> str:
    """A count and its noun, singular for one (`1 chunk`, `1,204 chunks`, `3 memories`); in a
    phrase the first word takes the plural (`2 chunks embedded`)."""
    first, space, rest = phrase.partition(" ")
    return f"{n:,} {noun(n, first)}{space}{rest}"


_UNITS = ("KB", "MB", "GB", "TB")


def size(nbytes: int | None, *, missing: str = MISSING) -> str:
    """Bytes as B / KB / MB / GB (1 KB = 1024 B), one decimal above bytes."""
    if nbytes is None:
        return missing
    if nbytes < 1024:
        return f"{nbytes} B"
    value = float(nbytes)
    for unit in _UNITS:
        value /= 1024
        if value < 1024 or unit == _UNITS[-1]:
            return f"{value:.1f} {unit}"
    raise AssertionError("unreachable")


def duration_ms(value: float | None, *, missing: str = MISSING) -> str:
    """A duration given in milliseconds: `8.5 ms`, `555 ms`, `1.4 s`."""
    if value is None:
        return missing
    if value < 10:
        return f"{value:.1f} ms"
    if value < 1000:
        return f"{value:.0f} ms"
    return f"{value / 1000:.1f} s"


def flat(value: Any, limit: int) -> str:
    """Text on one line (whitespace runs collapsed), cut to `limit` characters with an ellipsis:
    a request or a reply quoted in a list."""
    text = " ".join(str(value or "").split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def text(value: Any, *, missing: str = MISSING) -> str:
    """Any value for display: None (or empty text) becomes `missing`, floats go through
    `number`."""
    if value is None or value == "":
        return missing
    if isinstance(value, float):
        return number(value)
    return str(value)


_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_VISIBLE = {0x1B: "␛", 0x7F: "␡"}


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code in _VISIBLE:
        return _VISIBLE[code]
    if code < 0x20:
        return chr(0x2400 + code)  # the Control Pictures block: ␀ ␇ ␍ ...
    return f"\\x{code:02x}"  # C1 controls (0x80-0x9f) have no pictures


def visible_controls(text: str) -> str:
    """Text safe to print on a terminal: C0 and C1 control characters (escape sequences that
    could write to the clipboard, retitle the window or clear the screen, a carriage return that
    overwrites a line) shown as visible symbols, newlines and tabs kept. Indexed files and
    sessions are untrusted text; JSON output keeps them as they are."""
    return _CONTROLS.sub(_visible, text) if not text.isprintable() else text
