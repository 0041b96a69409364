"""Secrets in Markdown tables: a cell under a column named for a secret, or beside a cell that
names one.

Notes and chat answers list credentials as tables (`| service | api key |` over rows of
values, or `| STRIPE_SECRET_KEY | <value> |` rows), where no `NAME=value` syntax joins a name
and its value and the value may stand many lines below its name. A table is a run of lines
that start and end with `|`; its first row names the columns when a `|---|` row follows it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

from chinvex.redaction.assignments import FAMILY_PW, key_kind
from chinvex.redaction.tokens import Span
from chinvex.redaction.values import (
    MARKER_PREFIX,
    looks_like_named_secret,
    looks_like_password,
)

# A row's end: found from its literal `|` (fast), the start of its line checked on the hits.
_ROW_END = re.compile(r"\|[ \t]*\r?(?=\n|$)")
_SEPARATOR = re.compile(r"[\s|:-]+")
_MAX_NAME = 60


def _cells(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """The (start, end) of each cell's stripped content in the row text[start:end]."""
    bars = [i for i in range(start, end) if text[i] == "|" and (i == start or text[i - 1] != "\\")]
    out = []
    for a, b in zip(bars, bars[1:]):
        a += 1
        while a < b and text[a] in " \t`*":
            a += 1
        while b > a and text[b - 1] in " \t`*":
            b -= 1
        out.append((a, b))
    return out


def _family(name: str) -> str | None:
    return key_kind(name) if 0 < len(name) <= _MAX_NAME else None


def _judge(text: str, cell: tuple[int, int], family: str,
           covered: Callable[[int], bool]) -> Span | None:
    start, end = cell
    value = text[start:end]
    if not value or covered(start) or MARKER_PREFIX in value or " " in value:
        return None
    if family == FAMILY_PW:
        ok = looks_like_password(value)
        label = "password_assignment"
    else:
        ok = looks_like_named_secret(value)
        label = "secret_assignment"
    return Span(start, end, label) if ok else None


def _rows(text: str) -> Iterator[tuple[int, int]]:
    """(start, end) of each line that starts and ends with `|` (blanks aside)."""
    for m in _ROW_END.finditer(text):
        start = text.rfind("\n", 0, m.start()) + 1
        first = start
        while first < m.start() and text[first] in " \t":
            first += 1
        if first < m.start() and text[first] == "|":
            yield start, m.end()


def _tables(text: str) -> Iterator[list[tuple[int, int]]]:
    """Runs of consecutive table rows, as (start, end) of each row."""
    rows: list[tuple[int, int]] = []
    for span in _rows(text):
        if rows and text.count("\n", rows[-1][1], span[0]) > 1:
            yield rows
            rows = []
        rows.append(span)
    if rows:
        yield rows


def table_spans(text: str, covered: Callable[[int], bool]) -> list[Span]:
    """Values in the columns and beside the cells that name a secret."""
    if "|\n" not in text and "|\r\n" not in text and not text.rstrip(" \t").endswith("|"):
        return []  # no line ends with a bar: no table (most texts, told in one scan)
    spans: list[Span] = []
    for rows in _tables(text):
        header = _cells(text, *rows[0])
        columns: dict[int, str] = {}
        body = rows
        if len(rows) > 1 and _SEPARATOR.fullmatch(text, *rows[1]):
            body = rows[2:]
            for i, (a, b) in enumerate(header):
                family = _family(text[a:b])
                if family is not None:
                    columns[i] = family
        for row in body:
            cells = _cells(text, *row)
            for i, cell in enumerate(cells):
                family = columns.get(i)
                if family is None and i > 0:
                    family = _family(text[cells[i - 1][0]:cells[i - 1][1]])
                if family is not None and (span := _judge(text, cell, family, covered)):
                    spans.append(span)
    return spans
