"""Search filters (source types, path glob, dates) as one decision, applied inside both legs.

A filter that is applied only after the legs drops every match that ranks below the legs' depth,
so a selective `--path` or `--since` silently finds nothing. The FTS leg therefore puts the same
conditions into its SQL, the vector leg restricts its neighbours to the chunks they allow, and
`passes` stays as the final check on result rows. All three read the same fields with the same
rules, so a chunk a leg returns never fails the final check:

- path: `fnmatch` of the glob against the document's `source_uri`, against its relative path
  (`documents.metadata_json` → `path`, set by the repo, notes and chat adapters), and of
  `*/<glob>` against the `source_uri` (so `src/*.py` matches `/home/me/repo/src/a.py`);
- dates: the document's `updated_at`, else its `created_at`, compared as ISO 8601 UTC strings
  (`since` <= stamp <= `until`); a document without either stamp fails a date filter.

SQL cannot express `fnmatch` (GLOB differs on `[!...]`, case folding on Windows), so the path
test is a deterministic SQLite function registered on each search connection that calls the
same Python function as the final check. A search runs it once per document (a `documents` scan)
and hands both legs the allowed documents and chunks.

The vector leg's choice of strategy is a pure function of measured costs (see `plan_vector_leg`).
"""

from __future__ import annotations

import fnmatch
import functools
import math
import os
import re
import sqlite3
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta, timezone
from typing import Any, Literal

from chinvex.storage.filter_sql import PATH_MATCH_FUNCTION
from chinvex.timeutil import iso_z, to_utc

# The limits below come from measured query costs on a 100k-chunk store (ARCHITECTURE,
# Retrieval, "Path and date filters"); they decide a strategy, never a result.
EXACT_LIMIT = 500
"""Up to this many allowed chunks: cosine of each stored vector, exact (the cheapest there)."""
RESTRICT_LIMIT = 10_000
"""Up to this many: one Chroma query restricted to the allowed chunk ids."""
OVERFETCH_MAX = 2_000
"""An over-fetch that would need more neighbours than this switches to a restricted query."""

FTS_ROWID_LIMIT = 64
"""Up to this many allowed chunks the FTS leg looks them up by rowid; beyond, it checks each
match's document against the allowed set."""

VectorPlan = Literal["none", "exact", "restricted", "overfetch"]


@dataclass(frozen=True)
class SearchFilter:
    """The filters of one search; empty values mean "no filter" (as the CLI passes them)."""

    source_types: tuple[str, ...] = ()
    path_glob: str | None = None
    since: str | None = None
    until: str | None = None
    expression: str | None = None
    """A Filter Expression Language predicate (`--filter`, chinvex.retrieval.fel)."""
    phrases: tuple[str, ...] = ()
    """The query's "quoted phrases": a chunk must hold each of them, as the full-text index
    matches a phrase (the same words in that order, stemmed as the index stems)."""

    @classmethod
    def of(cls, source_types: Any = None, path_glob: str | None = None, since: str | None = None,
           until: str | None = None, expression: str | None = None, phrases: Any = ()) -> "SearchFilter":
        return cls(tuple(source_types or ()), path_glob or None, since or None, until or None,
                   expression if expression and expression.strip() else None, tuple(phrases or ()))

    @property
    def narrows_documents(self) -> bool:
        """True when the filter needs more than the source type Chroma stores with each vector."""
        return bool(self.path_glob or self.since or self.until or self.expression or self.phrases)

    @property
    def active(self) -> bool:
        return bool(self.source_types) or self.narrows_documents


def _text(value: Any) -> str:
    return "" if value is None or value == "" else str(value)


@functools.lru_cache(maxsize=64)
def _compiled(glob: str) -> tuple[Any, Any]:
    """`fnmatch.fnmatch(name, pat)` is `fnmatchcase(normcase(name), normcase(pat))`; compiling
    the two patterns once keeps that meaning at ~1/3 of the cost per document (it runs once per
    document of the index on a filtered search)."""
    def matcher(pattern: str) -> Any:
        return re.compile(fnmatch.translate(os.path.normcase(pattern))).match

    return matcher(glob), matcher("*/" + glob.lstrip("/"))


def path_matches(glob: str, source_uri: Any, rel_path: Any) -> bool:
    """The path rule of the module docstring (the same call in SQL and in the final check):
    `fnmatch(uri, glob) or fnmatch(rel, glob) or fnmatch(uri, "*/" + glob.lstrip("/"))`."""
    direct, anywhere = _compiled(glob)
    uri = os.path.normcase(_text(source_uri))
    if direct(uri) is not None or anywhere(uri) is not None:
        return True
    rel = _text(rel_path)
    return bool(rel) and direct(os.path.normcase(rel)) is not None


def doc_stamp(updated_at: Any, created_at: Any) -> Any:
    return updated_at or created_at


def passes(f: SearchFilter, *, source_type: str, source_uri: Any, rel_path: Any,
           updated_at: Any, created_at: Any) -> bool:
    """The final check on a result row (same rules as `sql_conditions`)."""
    if f.source_types and source_type not in f.source_types:
        return False
    if f.path_glob and not path_matches(f.path_glob, source_uri, rel_path):
        return False
    stamp = doc_stamp(updated_at, created_at)
    if f.since and (stamp is None or stamp < f.since):
        return False
    if f.until and (stamp is None or stamp > f.until):
        return False
    return True


def _sql_path_match(glob: Any, source_uri: Any, rel_path: Any) -> int:
    return int(path_matches(_text(glob), source_uri, rel_path))


def register_sql_functions(conn: sqlite3.Connection) -> None:
    """Make `chinvex_path_match(glob, source_uri, rel_path)` available to this connection."""
    conn.create_function(PATH_MATCH_FUNCTION, 3, _sql_path_match, deterministic=True)


def plan_vector_leg(allowed: int, *, exact_limit: int = EXACT_LIMIT,
                    restrict_limit: int = RESTRICT_LIMIT) -> VectorPlan:
    """How the vector leg honours a document filter, from the number of chunks it allows
    (counted up to `restrict_limit + 1`; more means "many"). See the measurements above."""
    if allowed <= 0:
        return "none"
    if allowed <= exact_limit:
        return "exact"
    if allowed <= restrict_limit:
        return "restricted"
    return "overfetch"


def next_fetch(requested: int, returned: int, allowed_found: int, wanted: int, *,
               max_fetch: int = OVERFETCH_MAX) -> int | Literal["done", "restrict"]:
    """Next over-fetch size after a round that asked for `requested` neighbours, got
    `returned` and found `allowed_found` allowed ones: "done" when enough were found or the store
    is exhausted, "restrict" when the next round would exceed `max_fetch`. The size grows by the
    observed share of allowed hits (at least doubling) so two rounds usually suffice."""
    if allowed_found >= wanted or returned < requested:
        return "done"
    if allowed_found == 0:
        grown = requested * 8
    else:
        grown = math.ceil(requested * wanted / allowed_found * 1.25)
    grown = max(grown, requested * 2)
    if grown > max_fetch:
        return "restrict"
    return grown


DATE_FORMS = "an ISO 8601 date or time, e.g. 2026-01-31, 2026-01-31T14:30 or 2026-01-31T14:30:00Z"
"""What a `--since`/`--until` value may be, as usage errors say it."""


def date_bound(value: str, *, end_of_day: bool) -> str:
    """A `--since`/`--until` value as the ISO 8601 UTC string filters compare with.

    A date without a time means the whole day (UTC): `--since` starts at its first millisecond,
    `--until` ends at its last (stored stamps have millisecond precision), so `--until
    2026-01-05` keeps what was updated that afternoon. A full timestamp is kept exact; one
    without an offset is UTC. Only ISO 8601 is accepted: the lenient parser adapters use for
    exports also reads numbers as Unix times, which made `--until -1` mean 1969 and silently
    filter everything out. Raises ValueError for anything else."""
    text = value.strip()
    try:
        day = date.fromisoformat(text)
    except ValueError:
        day = None
    if day is not None and "T" not in text.upper():
        start = datetime.combine(day, time(0, 0), tzinfo=timezone.utc)
        stamp = start + timedelta(days=1) - timedelta(milliseconds=1) if end_of_day else start
        return iso_z(stamp)  # type: ignore[return-value]
    if not re.match(r"^\d{4}-?\d{2}-?\d{2}[Tt ]\d", text):
        raise ValueError(f"not a date: {value!r}")
    try:
        parsed = datetime.fromisoformat(text[:-1] + "+00:00" if text[-1:] in "Zz" else text)
    except ValueError:
        raise ValueError(f"not a date: {value!r}") from None
    return iso_z(to_utc(parsed))  # type: ignore[return-value]


def unknown_source_types(types: Any, known: Any) -> list[str]:
    """Those of `types` not in `known`, each once, in the order given."""
    known = set(known)
    return [t for t in dict.fromkeys(types or ()) if t not in known]


def unknown_source_types_message(unknown: list[str], builtin: Any, indexed: Any) -> str:
    """One line naming the unknown types and listing the valid ones: chinvex's own, then any
    other type found in the searched indexes (third-party adapters)."""
    valid = list(builtin) + sorted(set(indexed) - set(builtin))
    names = ", ".join(repr(t) for t in unknown)
    return f"unknown source type {names} (valid: {', '.join(valid)})"
