"""Credentials with a recognisable shape: vendor tokens, JWTs and PEM private keys.

Each rule is one compiled pattern that begins with a literal (`AKIA`, `ghp_`, `-----BEGIN`):
CPython's regex engine then searches for that literal (~1 GB/s per rule here) instead of
attempting a match at every position (~50 MB/s per rule with a leading `\\b`). Word boundaries
are therefore checked in Python on the rare matches, never written at the start of a pattern.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import NamedTuple

from chinvex.redaction.values import random_body


class Span(NamedTuple):
    start: int
    end: int
    kind: str


# Characters that may not touch a token on the left: a token glued to a longer word or base64
# run is part of something else (an identifier, a blob), not a credential of its own.
_ALNUM = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
_ALNUM_DASH = _ALNUM | frozenset("_-")


@dataclass(frozen=True)
class _Rule:
    kind: str
    pattern: re.Pattern[str]
    body_group: int | str = 0
    left_forbidden: frozenset[str] = _ALNUM
    check: Callable[[str], bool] | None = None
    lead: frozenset[str] | None = None
    """One of these characters must precede the match; it becomes part of the span."""


def _rules() -> tuple[_Rule, ...]:
    after = r"(?![A-Za-z0-9])"
    after_b64url = r"(?![A-Za-z0-9_-])"
    return (
        _Rule("aws_access_key",
              re.compile(r"(AKIA|ASIA|ABIA|ACCA)([A-Z0-9]{16})" + after), 2,
              check=lambda b: random_body(b, min_distinct=6)),
        _Rule("github_token",
              re.compile(r"gh[pousr]_([A-Za-z0-9]{30,255})" + after), 1,
              check=lambda b: random_body(b, min_distinct=10)),
        _Rule("github_token",
              re.compile(r"github_pat_([A-Za-z0-9_]{40,255})" + after), 1,
              check=lambda b: random_body(b, min_distinct=10)),
        _Rule("anthropic_key",
              re.compile(r"sk-ant-([A-Za-z0-9_-]{20,})" + after_b64url), 1,
              check=lambda b: random_body(b, min_distinct=10, need_digit=True)),
        _Rule("openai_key",
              re.compile(r"sk-(?!ant-)(?:proj-|svcacct-|admin-|None-)?([A-Za-z0-9_-]{20,})"
                         + after_b64url), 1,
              check=lambda b: random_body(b, min_distinct=10, need_digit=True,
                                          need_mixed_case=True)),
        _Rule("slack_token",
              re.compile(r"xox[abposre]-([A-Za-z0-9-]{10,})" + after), 1,
              check=lambda b: random_body(b, min_distinct=6, need_digit=True)),
        _Rule("slack_token",
              re.compile(r"xapp-\d-([A-Za-z0-9-]{20,})" + after), 1,
              check=lambda b: random_body(b, min_distinct=8)),
        _Rule("slack_webhook",
              re.compile(r"https://hooks\.slack\.com/(?:services|workflows)/([A-Za-z0-9/_-]{20,})"),
              1, left_forbidden=frozenset(),
              check=lambda b: random_body(b, min_distinct=8)),
        # Written from `k_` on (not `[sr]k_`) so the scan can use the literal; the `s`/`r`
        # before it is checked with the boundary in token_spans.
        _Rule("stripe_key",
              re.compile(r"k_(?:live|test)_([A-Za-z0-9]{16,})" + after), 1,
              check=lambda b: random_body(b, min_distinct=8), lead=frozenset("sr")),
        _Rule("stripe_key",
              re.compile(r"whsec_([A-Za-z0-9+/=]{24,})" + after), 1,
              check=lambda b: random_body(b, min_distinct=8)),
        _Rule("google_api_key",
              re.compile(r"AIza([0-9A-Za-z_-]{35})" + after_b64url), 1,
              check=lambda b: random_body(b, min_distinct=10)),
        _Rule("gitlab_token",
              re.compile(r"gl(?:pat|dt|rt|ptt|ft|imt|oas|soat|cbt)-([0-9A-Za-z_-]{20,})"
                         + after_b64url), 1,
              check=lambda b: random_body(b, min_distinct=8)),
        _Rule("npm_token",
              re.compile(r"npm_([A-Za-z0-9]{36})" + after), 1,
              check=lambda b: random_body(b, min_distinct=10)),
        _Rule("huggingface_token",
              re.compile(r"hf_([A-Za-z0-9]{30,})" + after), 1,
              check=lambda b: random_body(b, min_distinct=10, need_mixed_case=True)),
        _Rule("pypi_token",
              re.compile(r"pypi-(AgEIcHlwaS5vcmc[A-Za-z0-9_-]{40,})" + after_b64url), 1),
        _Rule("sendgrid_key",
              re.compile(r"SG\.([A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43})" + after_b64url), 1,
              check=lambda b: random_body(b, min_distinct=10)),
        _Rule("digitalocean_token",
              re.compile(r"do[por]_v1_([a-f0-9]{64})" + after), 1,
              check=lambda b: random_body(b, min_distinct=8)),
        _Rule("jwt",
              re.compile(r"eyJ([A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*)"
                         + after_b64url), 1, left_forbidden=_ALNUM_DASH,
              check=lambda b: random_body(b, min_distinct=10)),
    )


_RULES = _rules()

_PEM_BEGIN = re.compile(r"-----BEGIN ([A-Z0-9]+(?: [A-Z0-9]+){0,3} )?PRIVATE KEY( BLOCK)?-----")
_PEM_END = re.compile(r"-----END ([A-Z0-9]+(?: [A-Z0-9]+){0,3} )?PRIVATE KEY( BLOCK)?-----")
# What may stand between BEGIN and END: base64, whitespace, JSON-escaped line breaks (`\n`) and
# RFC 1421 headers such as `Proc-Type: 4,ENCRYPTED` / `DEK-Info: AES-128-CBC,...`.
_PEM_BODY = re.compile(r"[A-Za-z0-9+/=\s\\:,.-]*")
_PEM_BASE64_LINE = re.compile(r"[A-Za-z0-9+/=]{16,}")
# A key cut off before its END line (tool output truncated): the header plus the base64 lines
# that follow it, whether separated by real or JSON-escaped line breaks.
_PEM_TRUNCATED = re.compile(r"(?:(?:\s|\\r|\\n)+[A-Za-z0-9+/=]{16,})+")
_PEM_MAX_BODY = 65536


def _pem_spans(text: str) -> Iterator[Span]:
    pos = 0
    end: re.Match[str] | None = None  # the next END line at or after pos, searched once
    end_searched_from = -1
    while (begin := _PEM_BEGIN.search(text, pos)) is not None:
        header_end = begin.end()
        if end_searched_from < 0 or (end is not None and end.start() < header_end):
            end = _PEM_END.search(text, header_end)
            end_searched_from = header_end
        if end is not None and end.start() - header_end <= _PEM_MAX_BODY:
            body_ok = _PEM_BODY.fullmatch(text, header_end, end.start()) is not None
            if body_ok and _PEM_BASE64_LINE.search(text, header_end, end.start()):
                yield Span(begin.start(), end.end(), "private_key")
                pos = end.end()
                continue
        tail = _PEM_TRUNCATED.match(text, header_end)
        if tail is not None:
            yield Span(begin.start(), tail.end(), "private_key")
            pos = tail.end()
        else:
            pos = header_end


def token_spans(text: str) -> list[Span]:
    """All fixed-format credentials in `text`, possibly overlapping, in no particular order."""
    spans: list[Span] = list(_pem_spans(text))
    for rule in _RULES:
        search = rule.pattern.search
        pos = 0
        while (m := search(text, pos)) is not None:
            # A rejected match only rules out its own start: the next attempt begins one
            # character later, so a valid token overlapping it (a JWT whose header is glued to
            # a word) is still found, exactly as it will be once its neighbour is redacted.
            pos = m.start() + 1
            start = m.start()
            if rule.lead is not None:
                if not start or text[start - 1] not in rule.lead:
                    continue
                start -= 1
            if start and text[start - 1] in rule.left_forbidden:
                continue
            if rule.check is not None and not rule.check(m.group(rule.body_group)):
                continue
            spans.append(Span(start, m.end(), rule.kind))
            pos = m.end()
    return spans
