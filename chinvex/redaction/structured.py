"""Redaction of everything a context stores or logs, not only document text.

Secrets reach an index by more ways than the text of a document: a Codex session's title is its
first user message, file names and paths end up in titles, chunk headers and source uris, an
adapter's resume state and metadata are JSON written as they are, and the MCP server stores
knowledge items, tags, related files, flight-recorder entries and the queries it was asked.
`Redactor` is the one front door for all of them: strings go through the detector `redact`
uses (`secret_spans`); mappings and lists are walked, keys included, and each value is also
judged by the name it is stored under (`{"password": "..."}` holds name and value as two
strings); uris go through `redact_uri`.

A `Redactor` made with `enabled=False` (a context's `redaction.enabled: false`) returns
everything unchanged, so callers never branch on the switch themselves.
"""

from __future__ import annotations

import dataclasses
import os
from collections import Counter
from pathlib import Path
from typing import Any

from chinvex.redaction.text import redact_uri, replace_spans, secret_spans
from chinvex.redaction.assignments import pair_spans
from chinvex.redaction.tokens import Span

_ELLIPSES = ("\u2026", "...")
_MIN_PREFIX = 6
"""The shortest end of a cut-off secret that `cut_secret_tails` replaces."""
_MIN_WHOLE = 12
"""The shortest remembered secret that a title loses wherever it stands in it."""


class Redactor:
    """Redacts values for one document or one write, and counts what it replaced per kind.

    `remember=True` keeps the secrets it found (in memory, for this object's life) so that
    `cut_secret_tails` can remove what a truncation left of one: a title cut at 80 characters
    from a first message may end in the first half of a key that alone no detector knows."""

    def __init__(self, enabled: bool = True, *, remember: bool = False) -> None:
        self.enabled = enabled
        self.counts: Counter[str] = Counter()
        self._remember = remember
        self._seen: set[str] = set()

    # -- strings ---------------------------------------------------------------------------

    def text(self, value: str) -> str:
        """`value` with its secrets replaced by `[REDACTED:<kind>]` (the same object when it
        holds none)."""
        if not self.enabled or not value:
            return value
        spans = secret_spans(value)
        if not spans:
            return value
        if self._remember:
            self._seen.update(value[s.start:s.end] for s in spans)
        result = replace_spans(value, spans)
        self.counts.update(result.counts)
        return result.text

    def optional(self, value: str | None) -> str | None:
        return None if value is None else self.text(value)

    def uri(self, value: str) -> str:
        """A source uri or path used as a key: see `redact_uri` (not counted: the same secret
        is counted where it is text)."""
        if not self.enabled or not value:
            return value
        return redact_uri(value)

    def source(self, item: Any) -> Any:
        """An adapter's `SourceCandidate` or `SkippedSource` keyed by its redacted uri, so that
        fingerprints, the origin ledger, pending sources and run logs never hold a secret from
        a file name. A candidate keeps (or gets) its real `path`: adapters read from it."""
        uri = self.uri(item.source_uri)
        if uri == item.source_uri or not dataclasses.is_dataclass(item):
            return item
        update: dict[str, Any] = {"source_uri": uri}
        if hasattr(item, "path") and item.path is None and _is_local_path(item.source_uri):
            update["path"] = Path(item.source_uri)
        return dataclasses.replace(item, **update)

    def title(self, value: str | None) -> str | None:
        """A title: what a truncation left of a secret the document holds, then its secrets.

        The tail goes first, on the title as cut: a partial redaction of it (the middle of a
        cut SendGrid key, found as a value after `API_KEY=`) would hide the secret's start. The
        ellipsis is set aside meanwhile, so that a value it is glued to (`password=<pw>.txt…`)
        is judged as written, not as a placeholder."""
        if value is None or not self.enabled:
            return value
        value = self.cut_secret_tails(value)
        ellipsis = next((e for e in _ELLIPSES if value.endswith(e)), "")
        return self._remembered_whole(self.text(value[: len(value) - len(ellipsis)])) + ellipsis

    def _remembered_whole(self, value: str) -> str:
        """A secret the document holds, whole in a title whose cut lost the words that gave it
        away (`Use <value> as the…` without `signing key`)."""
        for secret in sorted(self._seen, key=len, reverse=True):
            if len(secret) >= _MIN_WHOLE and secret in value:
                self.counts["truncated"] += value.count(secret)
                value = value.replace(secret, "[REDACTED:truncated]")
        return value

    def cut_secret_tails(self, value: str) -> str:
        """Replace the start of a remembered secret that ends a truncated string (`… KEY=wJal…`)
        with `[REDACTED:truncated]`."""
        if not self._seen or not value.endswith(_ELLIPSES):
            return value
        ellipsis = "\u2026" if value.endswith("\u2026") else "..."
        body = value[: -len(ellipsis)]
        best = 0
        # Titles are one line with blanks collapsed (a PEM block's line breaks become spaces).
        seen = self._seen | {" ".join(secret.split()) for secret in self._seen}
        for secret in seen:
            for k in range(min(len(secret), len(body)), _MIN_PREFIX - 1, -1):
                if k <= best:
                    break
                if body.endswith(secret[:k]):
                    best = k
                    break
        if not best:
            return value
        self.counts["truncated"] += 1
        return body[: len(body) - best] + "[REDACTED:truncated]" + ellipsis

    # -- structures ------------------------------------------------------------------------

    def value(self, value: Any, key: str | None = None) -> Any:
        """A JSON-like value (metadata, adapter state, a tool's input) with every string
        redacted: dict keys and values, list items, nested to any depth; a value is also judged
        by the key it is stored under. Other types are returned as they are. Unchanged
        containers are returned as the same objects."""
        if not self.enabled:
            return value
        if isinstance(value, str):
            cleaned = self.text(value)
            return self._by_name(key, cleaned) if key is not None else cleaned
        if isinstance(value, dict):
            changed = False
            out: dict[Any, Any] = {}
            for k, v in value.items():
                new_k = self.text(k) if isinstance(k, str) else k
                new_v = self.value(v, new_k if isinstance(new_k, str) else None)
                changed = changed or new_k is not k or new_v is not v
                out[new_k] = new_v
            return out if changed else value
        if isinstance(value, (list, tuple)):
            items = [self.value(v, key) for v in value]
            if all(new is old for new, old in zip(items, value)):
                return value
            return type(value)(items) if isinstance(value, tuple) else items
        return value

    def _by_name(self, key: str, value: str) -> str:
        spans = pair_spans(key, value)
        if not spans:
            return value
        return self._replace(value, spans)

    def _replace(self, value: str, spans: list[Span]) -> str:
        parts: list[str] = []
        pos = 0
        for start, end, kind in spans:
            if self._remember:
                self._seen.add(value[start:end])
            parts.append(value[pos:start])
            parts.append(f"[REDACTED:{kind}]")
            self.counts[kind] += 1
            pos = end
        parts.append(value[pos:])
        return "".join(parts)


def _is_local_path(uri: str) -> bool:
    return "://" not in uri and os.path.isabs(uri)
