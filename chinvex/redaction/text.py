"""Secret redaction: every text is cleaned before it is chunked, stored, embedded or logged.

Agent sessions are full of tool output (env dumps, config files, curl commands), so API keys,
tokens, private keys and passwords would otherwise end up in the index, in embeddings and in
answers. `redact` replaces each secret with `[REDACTED:<kind>]` and reports how many of each kind
it replaced (never the values).

Two families of detectors run over the text. Precise ones recognise a secret by its syntax
(`tokens`: vendor prefixes, JWTs, PEM private keys; the password in a URL's userinfo). Contextual
ones recognise a value by the name it stands next to (`assignments`: `API_KEY=...`,
`"password": "..."`, `Authorization: Bearer ...`, `--token ...`, `curl -u user:pw`) and then
judge the value itself (`values`), so that references, placeholders and names stay. Where they
overlap the precise kind wins. A replaced span is followed by the line breaks it contained, so
line numbers of the rest of the text do not move.

`secret_spans` is the one detector. `redact` applies it to a text, `redact_uri` to a source uri
(a key: markers there carry a digest, so two names stay two keys), and `Redactor`
(`structured`) to everything else that is stored or logged: titles, metadata, adapter state,
run logs, MCP knowledge items, tags, related files, flight-recorder entries and queries.

detect-secrets was measured as the engine, and alongside it, and not used: it is many times
slower than this module on the same text, reports values rather than positions (its GitHub
plugin reports only the `ghp` prefix), has no notion of placeholders, and finds a fraction of
the planted corpus's secrets that this module removes entirely, so combining both would add
its cost and nothing found (the figures: ARCHITECTURE, "Redaction", and bench/redaction.py).
Its plugins served as a reference for which token shapes exist; no code was taken from it.
"""

from __future__ import annotations

import bisect
import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache

from chinvex.redaction.assignments import assignment_spans, url_password_spans
from chinvex.redaction.prose import id_pair_spans, keyword_spans
from chinvex.redaction.tables import table_spans
from chinvex.redaction.tokens import Span, token_spans

__all__ = ["REDACTION_VERSION", "RedactionResult", "redact", "secret_spans", "replace_spans",
           "KINDS", "Redactor", "redact_uri"]

# Bump whenever detection changes: it is part of every source fingerprint, so a new version
# makes the next ingest re-read and re-redact everything.
# 2: titles, metadata, state, uris, short passwords after a name, bare AWS keys. 3: an AWS
# secret beside its access key id in prose. 4: values near the words naming a secret in prose,
# tables and provider pairs (issue 40). 5: a JWT cut before its signature.
REDACTION_VERSION = "5"

KINDS = (
    "aws_access_key", "aws_secret_key", "github_token", "openai_key", "anthropic_key",
    "slack_token", "slack_webhook", "stripe_key", "google_api_key", "gitlab_token", "npm_token",
    "huggingface_token", "pypi_token", "sendgrid_key", "digitalocean_token", "private_key", "jwt",
    "password_in_url", "auth_header", "password_assignment", "secret_assignment",
    "shopify_token", "databricks_token", "twilio_key", "age_secret_key", "postman_key",
    "azure_client_secret", "azure_storage_key", "azure_sas_token", "google_oauth_secret",
    "google_oauth_token", "truncated",
)
"""Every `<kind>` a marker can name. `truncated` is what a cut-off title kept of a secret the
document holds (see `Redactor.cut_secret_tails`)."""

# Every line break str.splitlines() knows, CRLF kept as one.
_LINE_BREAKS = re.compile("\r\n|[\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")


@dataclass(frozen=True)
class RedactionResult:
    text: str
    counts: dict[str, int] = field(default_factory=dict)


# `[REDACTED:kind]` in text; `[REDACTED:kind@1a2b3c4d]` in a uri (see `redact_uri`).
_MARKER = re.compile(r"\[REDACTED:[a-z_]{1,40}(?:@[0-9a-f]{8})?\]")


def _select(text: str, precise: list[Span], contextual: list[Span]) -> list[Span]:
    """Non-overlapping spans in text order: fixed-format spans first (earliest, then longest),
    then contextual spans that touch none of them nor each other. A span that overlaps a marker
    already in the text is never taken, so earlier redactions are not redacted again."""
    marker_starts: list[int] = []
    marker_ends: list[int] = []
    for m in _MARKER.finditer(text):
        marker_starts.append(m.start())
        marker_ends.append(m.end())

    def touches_marker(span: Span) -> bool:
        i = bisect.bisect_left(marker_starts, span.end)  # markers starting before span.end
        return i > 0 and marker_ends[i - 1] > span.start

    chosen: list[Span] = []
    last_end = -1
    # a vendor token inside a URL password names it better than password_in_url
    for span in sorted(precise, key=lambda s: (s.start, -s.end, s.kind == "password_in_url")):
        if span.start >= last_end and not (marker_starts and touches_marker(span)):
            chosen.append(span)
            last_end = span.end
    starts = [s.start for s in chosen]
    for span in sorted(contextual, key=lambda s: (s.start, -s.end)):
        i = bisect.bisect_right(starts, span.start)
        if i and chosen[i - 1].end > span.start:
            continue
        if i < len(chosen) and chosen[i].start < span.end:
            continue
        if marker_starts and touches_marker(span):
            continue
        chosen.insert(i, span)
        starts.insert(i, span.start)
    return chosen


def _coverage(spans: list[Span]) -> Callable[[int], bool]:
    """A membership test `pos in some span`, for spans that may overlap."""
    if not spans:
        return lambda _pos: False
    ordered = sorted(spans)
    starts = [s.start for s in ordered]
    reach: list[int] = []  # furthest end among spans [0..i]
    furthest = -1
    for s in ordered:
        furthest = max(furthest, s.end)
        reach.append(furthest)

    def covered(pos: int) -> bool:
        i = bisect.bisect_right(starts, pos)
        return i > 0 and reach[i - 1] > pos

    return covered


_SHORTEST = 8
"""No detector finds a secret in fewer characters (`pw=` and six, `a://:p@h`; tokens are 14 or
more); a name-value pair in a mapping is judged by `Redactor` whatever the value's length."""


_MEMO_LENGTH = 256
"""Strings up to this long have their spans remembered (`_short_spans`)."""


def secret_spans(text: str) -> list[Span]:
    """The secrets in `text` as non-overlapping (start, end, kind) spans in text order: the one
    detector behind `redact`, `redact_uri` and `Redactor`."""
    if len(text) < _SHORTEST:
        return []  # metadata keys, flags, short names: most strings `Redactor` sees
    if len(text) <= _MEMO_LENGTH:
        return list(_short_spans(text))
    return _detected(text)


@lru_cache(maxsize=16_384)
def _short_spans(text: str) -> tuple[Span, ...]:
    """`secret_spans` of a short string, remembered (in this process only): what `Redactor`
    walks in every document's metadata is mostly the same keys and values again ("language",
    "encoding", the repository root), ~10 strings a file, which cost a repository ingest's main
    thread a noticeable share of its time with the full detector run for each."""
    return tuple(_detected(text))


def _detected(text: str) -> list[Span]:
    precise = token_spans(text)
    precise.extend(url_password_spans(text))
    covered = _coverage(precise)
    # In this order where they find the same value: an AWS key beside its id is named better
    # as aws_secret_key, and `NAME=value` better than a keyword in prose.
    contextual = id_pair_spans(text, precise, covered)
    contextual.extend(assignment_spans(text, covered))
    contextual.extend(keyword_spans(text, covered))
    contextual.extend(table_spans(text, covered))
    if not precise and not contextual:
        return []
    return _select(text, precise, contextual)


def redact(text: str) -> RedactionResult:
    """Replace every detected secret in `text` with `[REDACTED:<kind>]`.

    Idempotent (markers are never redacted again), never changes the number of line breaks,
    and leaves text without secrets untouched (the same object is returned)."""
    return replace_spans(text, secret_spans(text))


def replace_spans(text: str, spans: list[Span]) -> RedactionResult:
    """`text` with each of `spans` (from `secret_spans`) replaced by its marker."""
    if not spans:
        return RedactionResult(text, {})
    parts: list[str] = []
    counts: dict[str, int] = {}
    pos = 0
    for start, end, kind in spans:
        parts.append(text[pos:start])
        parts.append(f"[REDACTED:{kind}]")
        parts.extend(_LINE_BREAKS.findall(text, start, end))
        counts[kind] = counts.get(kind, 0) + 1
        pos = end
    parts.append(text[pos:])
    return RedactionResult("".join(parts), counts)


@lru_cache(maxsize=8192)
def redact_uri(uri: str) -> str:
    """A source uri (a file path, `memory://...`) with its secrets replaced by
    `[REDACTED:<kind>@<8 hex>]`: the uri is a key (fingerprints, the origin ledger, documents),
    so two files whose names differ only by their secret must stay two keys. The digest is of
    the secret alone, so one secret gives the same marker in a folder and in the files under
    it. 32 bits tell names apart and cannot be reversed; like any hash of a secret, they let
    someone who already guesses a weak password confirm the guess.

    Remembered (a pure function of its argument): an ingest redacts each source's uri several
    times (the candidate, the document, its origin), and a repository's paths share their
    folders, whose names `secret_spans` remembers (up to _MEMO_LENGTH characters)."""
    spans = _uri_spans(uri)
    if not spans:
        return uri
    parts: list[str] = []
    pos = 0
    for start, end, kind in spans:
        digest = hashlib.sha256(uri[start:end].encode("utf-8", "surrogatepass")).hexdigest()[:8]
        parts.append(uri[pos:start])
        parts.append(f"[REDACTED:{kind}@{digest}]")
        pos = end
    parts.append(uri[pos:])
    return "".join(parts)


def _uri_spans(uri: str) -> list[Span]:
    """Secrets in the whole uri (a URL's password, a token anywhere) and in each of its path
    segments alone (`password=<pw>` as a folder's name, where the value would otherwise run on
    into the rest of the path), without overlaps."""
    found = secret_spans(uri)
    offset = 0
    for segment in uri.split("/"):
        if segment:
            found.extend(Span(offset + a, offset + b, kind) for a, b, kind in secret_spans(segment))
        offset += len(segment) + 1
    chosen: list[Span] = []
    for span in sorted(found, key=lambda sp: (sp.start, -sp.end)):
        if not chosen or span.start >= chosen[-1].end:
            chosen.append(span)
    return chosen
