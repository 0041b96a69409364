"""Credentials with a recognisable shape: vendor tokens, JWTs and PEM private keys.

Each rule is one compiled pattern that begins with a literal (`AKIA`, `ghp_`, `-----BEGIN`):
CPython's regex engine then searches for that literal, many times faster than attempting a
match at every position (as a leading `\\b` makes it do). Word boundaries
are therefore checked in Python on the rare matches, never written at the start of a pattern.
"""

from __future__ import annotations

import base64
import binascii
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


_AFTER = r"(?![A-Za-z0-9])"
"""A token ends where its alphabet does."""
_AFTER_B64URL = r"(?![A-Za-z0-9_-])"
"""The same for a base64url alphabet."""


def _rules() -> tuple[_Rule, ...]:
    return (
        _Rule("aws_access_key",
              re.compile(r"(AKIA|ASIA|ABIA|ACCA)([A-Z0-9]{16})" + _AFTER), 2,
              check=lambda b: random_body(b, min_distinct=6)),
        _Rule("github_token",
              re.compile(r"gh[pousr]_([A-Za-z0-9]{30,255})" + _AFTER), 1,
              check=lambda b: random_body(b, min_distinct=10)),
        _Rule("github_token",
              re.compile(r"github_pat_([A-Za-z0-9_]{40,255})" + _AFTER), 1,
              check=lambda b: random_body(b, min_distinct=10)),
        _Rule("anthropic_key",
              re.compile(r"sk-ant-([A-Za-z0-9_-]{20,})" + _AFTER_B64URL), 1,
              check=lambda b: random_body(b, min_distinct=10, need_digit=True)),
        _Rule("openai_key",
              re.compile(r"sk-(?!ant-)(?:proj-|svcacct-|admin-|None-)?([A-Za-z0-9_-]{20,})"
                         + _AFTER_B64URL), 1,
              check=lambda b: random_body(b, min_distinct=10, need_digit=True,
                                          need_mixed_case=True)),
        _Rule("slack_token",
              re.compile(r"xox[abposre]-([A-Za-z0-9-]{10,})" + _AFTER), 1,
              check=lambda b: random_body(b, min_distinct=6, need_digit=True)),
        _Rule("slack_token",
              re.compile(r"xapp-\d-([A-Za-z0-9-]{20,})" + _AFTER), 1,
              check=lambda b: random_body(b, min_distinct=8)),
        _Rule("slack_webhook",
              re.compile(r"https://hooks\.slack\.com/(?:services|workflows)/([A-Za-z0-9/_-]{20,})"),
              1, left_forbidden=frozenset(),
              check=lambda b: random_body(b, min_distinct=8)),
        # Written from `k_` on (not `[sr]k_`) so the scan can use the literal; the `s`/`r`
        # before it is checked with the boundary in token_spans.
        _Rule("stripe_key",
              re.compile(r"k_(?:live|test)_([A-Za-z0-9]{16,})" + _AFTER), 1,
              check=lambda b: random_body(b, min_distinct=8), lead=frozenset("sr")),
        _Rule("stripe_key",
              re.compile(r"whsec_([A-Za-z0-9+/=]{24,})" + _AFTER), 1,
              check=lambda b: random_body(b, min_distinct=8)),
        _Rule("google_api_key",
              re.compile(r"AIza([0-9A-Za-z_-]{35})" + _AFTER_B64URL), 1,
              check=lambda b: random_body(b, min_distinct=10)),
        _Rule("gitlab_token",
              re.compile(r"gl(?:pat|dt|rt|ptt|ft|imt|oas|soat|cbt)-([0-9A-Za-z_-]{20,})"
                         + _AFTER_B64URL), 1,
              check=lambda b: random_body(b, min_distinct=8)),
        _Rule("npm_token",
              re.compile(r"npm_([A-Za-z0-9]{36})" + _AFTER), 1,
              check=lambda b: random_body(b, min_distinct=10)),
        _Rule("huggingface_token",
              re.compile(r"hf_([A-Za-z0-9]{30,})" + _AFTER), 1,
              check=lambda b: random_body(b, min_distinct=10, need_mixed_case=True)),
        _Rule("pypi_token",
              re.compile(r"pypi-(AgEIcHlwaS5vcmc[A-Za-z0-9_-]{40,})" + _AFTER_B64URL), 1),
        _Rule("sendgrid_key",
              re.compile(r"SG\.([A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43})" + _AFTER_B64URL), 1,
              check=lambda b: random_body(b, min_distinct=10)),
        _Rule("digitalocean_token",
              re.compile(r"do[por]_v1_([a-f0-9]{64})" + _AFTER), 1,
              check=lambda b: random_body(b, min_distinct=8)),
        _Rule("shopify_token",
              re.compile(r"shp(?:at|ca|pa|ss)_([a-fA-F0-9]{32})" + _AFTER), 1,
              check=lambda b: random_body(b, min_distinct=8)),
        _Rule("databricks_token",
              re.compile(r"dapi([a-f0-9]{32})(?:-\d)?" + _AFTER), 1,
              check=lambda b: random_body(b, min_distinct=8)),
        _Rule("twilio_key",
              re.compile(r"SK([0-9a-f]{32})" + _AFTER), 1,
              check=lambda b: random_body(b, min_distinct=8, need_digit=True)),
        _Rule("age_secret_key",
              re.compile(r"AGE-SECRET-KEY-1([02-9AC-HJ-NP-Z]{58})" + _AFTER), 1,
              check=lambda b: random_body(b, min_distinct=10)),
        _Rule("postman_key",
              re.compile(r"PMAK-([a-f0-9]{24}-[a-f0-9]{34})" + _AFTER), 1,
              check=lambda b: random_body(b, min_distinct=8)),
    )


def _jwt_rules() -> tuple[_Rule, ...]:
    """JWTs: whole, and cut short before the signature."""
    return (
        _Rule("jwt",
              re.compile(r"eyJ([A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*)"
                         + _AFTER_B64URL), 1, left_forbidden=_ALNUM_DASH,
              check=lambda b: random_body(b, min_distinct=10)),
        # A JWT cut short before its signature (a preview or title truncated by the tool that
        # wrote it): a header that decodes, a dot and the start of the payload.
        _Rule("jwt",
              re.compile(r"eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{4,}(?![A-Za-z0-9_.-])"), 0,
              left_forbidden=_ALNUM_DASH, check=lambda t: _jwt_header_decodes(t)),
    )


def _oauth_rules() -> tuple[_Rule, ...]:
    """Google OAuth: a client's secret and an access token."""
    return (
        _Rule("google_oauth_secret",
              re.compile(r"GOCSPX-([A-Za-z0-9_-]{28})" + _AFTER_B64URL), 1,
              check=lambda b: random_body(b, min_distinct=10)),
        _Rule("google_oauth_token",
              re.compile(r"ya29\.([A-Za-z0-9_-]{30,})" + _AFTER_B64URL), 1,
              check=lambda b: random_body(b, min_distinct=10, need_digit=True)),
    )


_RULES = _rules() + _jwt_rules() + _oauth_rules()

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


def _after_escape(text: str, start: int) -> bool:
    """`\\n` / `\\t` / `\\r` just before `start`: a line break or tab written as a JSON or shell
    escape (a tool input serialised as JSON, `printf 'a\\nghp_...'`), not a word the token is
    glued to."""
    return start >= 2 and text[start - 1] in "ntr" and text[start - 2] == "\\"


def _jwt_header_decodes(token: str) -> bool:
    """The first segment is a JWT header (base64url JSON naming its `alg`): a token after a
    dash or an underscore (`prod-eyJ...` in a file name) is then a token all the same."""
    header = token.split(".", 1)[0]
    try:
        decoded = base64.urlsafe_b64decode(header + "=" * (-len(header) % 4))
    except (ValueError, binascii.Error):
        return False
    return decoded.startswith(b"{") and b'"alg"' in decoded


_JWT_HEADER_BEFORE = re.compile(r"(?<![A-Za-z0-9])eyJ[A-Za-z0-9_-]{8,}\.$")


def _jwt_header_start(text: str, start: int) -> int:
    """Where a JWT found from its payload really starts: its header could not start the match
    (`x-eyJ...` whose header does not decode), and the payload's own `eyJ` did; the header goes
    too, unless a word is glued to it (that word may end a token of its own)."""
    if start < 12 or text[start - 1] != ".":
        return start
    m = _JWT_HEADER_BEFORE.search(text, max(0, start - 1024), start)
    return m.start() if m is not None else start


# An Azure AD client secret: 3 characters, a digit, `Q~`, then 31-34 more. Searched from its
# `Q~` (a literal), the four characters before it checked on the rare hits.
_AZURE_SECRET_TAIL = re.compile(r"Q~[A-Za-z0-9_~.-]{31,34}(?![A-Za-z0-9_~.-])")
_AZURE_SECRET_HEAD = re.compile(r"[A-Za-z0-9_~.]{3}\d")
# A SAS token's signature: `sig=` in a query that also names its service version (`sv=`).
_SAS_SIG = re.compile(r"sig=([A-Za-z0-9%+/=]{30,})(?![A-Za-z0-9%+/=])")
_SAS_REACH = 400


def _azure_spans(text: str) -> Iterator[Span]:
    for m in _AZURE_SECRET_TAIL.finditer(text):
        start = m.start() - 4
        if start < 0 or _AZURE_SECRET_HEAD.fullmatch(text, start, m.start()) is None:
            continue
        if start and text[start - 1] in _ALNUM_DASH:
            continue
        if random_body(text[start:m.end()], min_distinct=12, need_digit=True):
            yield Span(start, m.end(), "azure_client_secret")
    for m in _SAS_SIG.finditer(text):
        if m.start() and text[m.start() - 1] not in "?&; \t'\"":
            continue
        if "sv=" in text[max(0, m.start() - _SAS_REACH):m.start()] and \
                random_body(m.group(1), min_distinct=10):
            yield Span(m.start(1), m.end(1), "azure_sas_token")


def token_spans(text: str) -> list[Span]:
    """All fixed-format credentials in `text`, possibly overlapping, in no particular order."""
    spans: list[Span] = list(_pem_spans(text))
    spans.extend(_azure_spans(text))
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
            glued = bool(start) and text[start - 1] in rule.left_forbidden \
                and not _after_escape(text, start)
            if glued and not (rule.kind == "jwt" and text[start - 1] in "-_"
                              and _jwt_header_decodes(m.group())):
                continue
            if rule.check is not None and not rule.check(m.group(rule.body_group)):
                continue
            if rule.kind == "jwt" and (header := _jwt_header_start(text, start)) != start:
                # The match was payload.signature.<what followed>: the token ends at its
                # second dot (`x-<jwt>.md` keeps `.md`). The match as found is kept too, for
                # when the header overlaps a token of its own (selection takes one of them).
                second_dot = text.find(".", text.index(".", start) + 1, m.end())
                spans.append(Span(header, second_dot if second_dot >= 0 else m.end(), "jwt"))
            spans.append(Span(start, m.end(), rule.kind))
            # A glued token may lose to the one it is glued to: what follows it is searched too.
            pos = m.start() + 1 if glued else m.end()
    return spans
