"""Secrets in prose: a random value near a word that names a secret, or beside the id it pairs.

People write credentials down in sentences, chat turns, commit messages and notes, where no
`NAME=value` syntax marks them: "The AWS break-glass key is AKIA... with secret p7kf...",
"the secret for the billing webhook is ...", "Account SID AC... Auth Token ...", "remove
hardcoded token ... from settings.py". Two kinds of anchor mark a place to look:

- a word that names a secret (`secret`, `token`, `password`, `API key`, `STRIPE_SECRET_KEY`),
  judged by the name it is part of (`key_kind`: `token_count` and `password_hash` are no
  anchors). The first value after it, separated by punctuation or a few words ending in `is`,
  `to` (`the secret for X is`, `changed to`, `. It is`), is judged as a named secret (hex
  included); any other value within a short reach, before or after, must look random on its
  own (mixed case and digits, many distinct characters: `looks_random`);
- an id whose secret goes with it: an AWS access key id (its 40-character secret), a Twilio
  Account SID (its 32-hex auth token) or API key, an Azure storage account (its 88-character
  key). The value beside it must have the shape of that secret.

Anchors are found by literals (the keywords spelled out in their usual cases), so text with
none of them costs one scan; values are judged only in the short window around each anchor.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

from chinvex.redaction.assignments import (
    FAMILY_GENERIC,
    FAMILY_PW,
    key_kind,
    spellings_by_first_char,
)
from chinvex.redaction.tokens import Span
from chinvex.redaction.values import (
    MARKER_PREFIX,
    bare_file_stem,
    is_name_like,
    looks_like_named_secret,
    looks_like_password,
    looks_random,
    random_body,
)

_KEYWORDS = ("secret", "token", "key", "password", "passphrase", "passwd", "passwort",
             "credential", "creds", "pw")


_ANCHOR = re.compile(spellings_by_first_char(_KEYWORDS))
_NAME_LEFT = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
_NAME_RIGHT = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")
_BLOB = frozenset("0123456789+/")
_BARE_GENERIC = frozenset({"secret", "secrets", "token", "tokens", "credential", "credentials",
                           "creds"})
_BARE_PASSWORD = frozenset({"password", "passwords", "passphrase", "passwd", "passwort", "pw"})
_PROSE_QUALIFIERS = frozenset({
    "api", "access", "secret", "private", "signing", "deploy", "license", "storage", "account",
    "master", "encryption", "client", "app", "service", "webhook", "bot", "admin", "root",
    "ssh", "auth", "session", "prod", "staging", "openai", "stripe", "aws", "gcp", "azure",
})
_PREVIOUS_WORD = re.compile(r"([A-Za-z]+)[ \t]+$")
_ENDS_WITH_KEY = re.compile(r"(?:key|KEY|Key)s?$")
# Another name given a value between the anchor and a candidate (`"max_tokens": 1, "call_id":
# "..."`, an env dump's next line): what follows is that name's value. `value` is exempt
# (`{"name": "API_KEY", "value": "..."}`).
_OTHER_NAME = re.compile(
    r"(?:^|[\s,{;&?(])\\?[\"']?([A-Za-z_][\w.-]{0,40})\\?[\"']?[ \t]*(?::(?!//)|=(?!=))")
_DIGEST_BEFORE = re.compile(r"(?:sha(?:1|224|256|384|512)|SHA(?:1|224|256|384|512)|md5|MD5)[:=-]$")
_VALUE_NAMES = frozenset({"value", "val", "data", "content", "text", "body", "default"})

_REACH = 120
_BACK_REACH = 48
_MAX_RANDOM = 64
"""A value a few words away from the name is a key (20 to 64 characters), not a blob."""
_MAX_VALUE = 600
"""A value that starts within reach is read to its end, however long."""
# A value: a run of the characters keys are written with ("." ends it: a file's extension,
# a sentence's end). Passwords may hold any symbol but not blanks, quotes or brackets.
_VALUE = re.compile(r"[A-Za-z0-9][A-Za-z0-9+/_~-]{15,}={0,2}")
_VALUE_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/_~-=")
_PASSWORD_VALUE = re.compile(r"[^\s'\"`<>()\[\]{},;|\\=:][^\s'\"`<>()\[\]{},;|\\]{5,127}")
_PARENTHESIS = re.compile(r"\([^()\n]{0,24}\)")
_GAP_WORDS = re.compile(r"[A-Za-z0-9']+")
_CONNECTORS = frozenset({"is", "was", "are", "were", "to", "now", "be", "as"})
_TRAILING_PATH = re.compile(r"(?:/[a-z][a-z0-9_-]{2,}(?:\.[a-z0-9]{1,5})?)+$")


def _name_around(text: str, start: int, end: int) -> tuple[int, int] | None:
    """The name the keyword at text[start:end] is part of (`STRIPE_SECRET_KEY`, `api-key`,
    `apiKey`), or None when the keyword is inside a longer word (`keyboard`, `monkey`)."""
    n = len(text)
    if end < n and text[end].islower() and not (
            text[end] == "s" and (end + 1 == n or not text[end + 1].isalpha())):
        return None  # keyboard, tokenizer, secretary (but keys, tokens)
    left = start
    while left > 0 and text[left - 1] in _NAME_LEFT and start - left < 60:
        left -= 1
    while left < start and text[left] in "-_0123456789":
        left += 1
    right = end
    while right < n and text[right] in _NAME_RIGHT and right - end < 40:
        right += 1
    if start > left and text[start - 1].islower() and text[start].islower() \
            and key_kind(text[left:right]) is None:
        return None  # monkey, turkey: glued to a word that does not name a secret
    if (right < n and text[right] in _BLOB) or (left and text[left - 1] in "+="):
        return None  # inside a base64 run or a longer token, not a name
    name = text[left:right]
    if right - left > end - start and not is_name_like(name):
        return None  # `...DHydPw...`: letters of a random blob, not a name
    line_start = text.rfind("\n", 0, left) + 1
    if text.startswith("-----", line_start) or name.lower() == "key" and \
            text[max(0, left - 7):left].lower().rstrip() .endswith("public"):
        return None  # a PEM armor line, a public key
    return left, right


def _family(text: str, left: int, right: int) -> tuple[str | None, bool]:
    """(family of the named secret, whether the first value after it may be judged as named
    rather than as random). `STRIPE_KEY`, `cache_key`, a bare "key": random values only."""
    name = text[left:right]
    bare = name.lower()
    if bare in _BARE_PASSWORD:
        return FAMILY_PW, True
    if bare in _BARE_GENERIC:
        return FAMILY_GENERIC, True
    if bare in ("key", "keys"):
        before = _PREVIOUS_WORD.search(text, max(0, left - 24), left)
        named = before is not None and before.group(1).lower() in _PROSE_QUALIFIERS
        return FAMILY_GENERIC, named
    kind = key_kind(name)
    if kind is not None:
        return kind, True
    if _ENDS_WITH_KEY.search(name):
        return FAMILY_GENERIC, False  # STRIPE_KEY, cache_key: only a random value
    return None, False  # max_tokens, secret_name, password_hash: about a secret


def _names_another(gap: str) -> bool:
    return any(m.group(1).lower() not in _VALUE_NAMES for m in _OTHER_NAME.finditer(gap))


def _connects(gap: str) -> bool:
    """Only punctuation, or a few words ending in `is` / `to` (`for the billing webhook is`,
    `changed to`, `. It is`), stand between the name and the value."""
    if "\n" in gap or len(gap) > 48:
        return False
    gap = _PARENTHESIS.sub(" ", gap)
    words = _GAP_WORDS.findall(gap)
    if not words:
        return len(gap) <= 8
    if len(words) > 5:
        return False
    return words[-1].lower() in _CONNECTORS or gap.rstrip(" \t\"'`").endswith((":", "="))


def _trim(text: str, start: int, end: int, shortest: int = 16) -> int:
    """Where a value really ends: before the rest of a path (`token=<value>/config.yaml`), a
    file's extension (`api-key-<value>.txt`) and sentence punctuation."""
    m = _TRAILING_PATH.search(text, start, end)
    if m is not None and m.start() - start >= shortest:
        end = m.start()
    stem = bare_file_stem(text[start:end])
    if stem is not None and stem >= shortest:
        end = start + stem
    while end > start and text[end - 1] in ".:":
        end -= 1
    return end


def _forward(text: str, left: int, right: int, family: str, named: bool,
             covered: Callable[[int], bool]) -> Span | None:
    label = "password_assignment" if family == FAMILY_PW else "secret_assignment"
    hi = min(len(text), right + _REACH)
    if family == FAMILY_PW and named:
        span = _password_after(text, right, covered)
        if span is not None:
            return span
    first = True
    for m in _VALUE.finditer(text, right, hi + _MAX_VALUE):
        if m.start() >= hi:
            break
        start, end = m.start(), _trim(text, m.start(), m.end())
        value = text[start:end]
        gap = text[right:start]
        as_named = named and first and _connects(gap)
        first = False
        if MARKER_PREFIX in gap or (not as_named and _names_another(gap)):
            return None  # this name's value is redacted already, or another name follows
        if covered(start) or _DIGEST_BEFORE.search(text, max(0, start - 8), start):
            continue
        if as_named and looks_like_named_secret(value):
            return Span(start, end, label)
        if len(value) <= _MAX_RANDOM and looks_random(value):
            return Span(start, end, label)
    return None


def _password_after(text: str, right: int, covered: Callable[[int], bool]) -> Span | None:
    """The first word after a password's name that the words between connect to it
    (`password for db01 is <value>`, `password <value>`, `changed my password to <value>`)."""
    for m in _PASSWORD_VALUE.finditer(text, right, min(len(text), right + 60 + _MAX_VALUE)):
        if m.start() > right + 60:
            return None
        gap = text[right:m.start()]
        if MARKER_PREFIX in gap:
            return None  # this name's value is redacted already
        if not _connects(gap.rstrip("'\"`(")):
            if _names_another(gap):
                return None  # another name's value follows
            continue
        end = _trim(text, m.start(), m.end(), shortest=6)
        value = text[m.start():end]
        if covered(m.start()) or MARKER_PREFIX in value or not looks_like_password(value):
            return None
        return Span(m.start(), end, "password_assignment")
    return None


def _backward(text: str, left: int, covered: Callable[[int], bool]) -> Span | None:
    """`Use <value> as the signing key.`: a random value a few words before the name."""
    lo = max(0, left - _BACK_REACH)
    while lo > 0 and text[lo - 1] in _VALUE_CHARS and left - lo < _BACK_REACH + _MAX_VALUE:
        lo -= 1  # from the start of a value cut by the window
    found = None
    for m in _VALUE.finditer(text, lo, left):
        found = m
    if found is None or covered(found.start()) or "\n" in text[found.end():left]:
        return None
    words = _GAP_WORDS.findall(text[found.end():left])
    if len(words) > 4 or len(found.group()) > _MAX_RANDOM or not looks_random(found.group()):
        return None
    return Span(found.start(), found.end(), "secret_assignment")


def keyword_spans(text: str, covered: Callable[[int], bool]) -> Iterator[Span]:
    """Values near the words that name secrets (see the module's docstring)."""
    last_right = -1
    for m in _ANCHOR.finditer(text):
        if m.start() < last_right:
            continue  # a keyword inside the name already looked at (`SECRET_KEY`)
        around = _name_around(text, m.start(), m.end())
        if around is None:
            continue
        left, right = around
        last_right = right
        if MARKER_PREFIX in text[max(0, left - 12):left + 1]:
            continue  # the word is the kind inside a marker: `[REDACTED:secret_assignment]`
        family, named = _family(text, left, right)
        if family is None or MARKER_PREFIX in text[right:right + 48]:
            continue  # not a secret's name, or its value is redacted already
        # both: a value after the name may be the next sentence's, and selection keeps one
        for span in (_forward(text, left, right, family, named, covered),
                     _backward(text, left, covered)):
            if span is not None:
                yield span


# -- ids and the secrets that go with them ---------------------------------------------------

_AWS_ANCHOR = re.compile(r"aws|AWS|Aws|(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}(?![A-Za-z0-9])")
_AWS_RUN = re.compile(r"[A-Za-z0-9/+]{40,}")
_AWS_ALPHABET = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789/+=")
_AWS_NEAR = 48
"""How far from the word `aws` the word `secret` may stand."""
_AWS_REACH = 160
"""How far before or after the word `aws` or a key id the 40-character key may stand."""


def _aws_keys(text: str, lo: int, hi: int) -> Iterator[tuple[int, int]]:
    """40-character keys among the runs of the key alphabet in text[lo:hi]: a whole run, or a
    part of one between slashes (`creds-<id>-<key>/restore.sh`: the path goes on after it)."""
    for run in _AWS_RUN.finditer(text, lo, hi):
        if run.end() < len(text) and text[run.end()] == "=":
            continue  # base64 padding: a longer blob
        start, end = run.span()
        if end - start == 40:
            yield start, end
            continue
        cuts = [start] + [i + 1 for i in range(start, end) if text[i] == "/"]
        for a in cuts:
            b = a + 40
            if b == end or (b < end and text[b] == "/"):
                if a == start or text[a - 1] == "/":
                    yield a, b
                    break


def aws_secret_spans(text: str) -> Iterator[Span]:
    """A 40-character AWS secret access key in prose next to the words "aws" and "secret" ("my
    aws secret is ...") or next to an access key id ("the break-glass key is AKIA... with
    secret ..."). 40 random characters with both cases and a digit: a git SHA never
    qualifies."""
    pos = 0
    last_end = 0
    n = len(text)
    while (m := _AWS_ANCHOR.search(text, pos)) is not None:
        pos = m.end()
        if m.start() and text[m.start() - 1].isalnum():
            continue  # `laws`, `draws`, a longer token
        if m.group().lower() == "aws":
            near = text[max(0, m.start() - _AWS_NEAR):min(n, m.end() + _AWS_NEAR)].lower()
            if "secret" not in near:
                continue
        lo, hi = max(last_end, m.start() - _AWS_REACH), min(n, m.end() + _AWS_REACH)
        # Widen to whole runs of the key alphabet: no slice of a longer blob passes for a key.
        while lo > last_end and text[lo - 1] in _AWS_ALPHABET:
            lo -= 1
        while hi < n and text[hi] in _AWS_ALPHABET:
            hi += 1
        for start, end in _aws_keys(text, lo, hi):
            key = text[start:end]
            if random_body(key, min_distinct=12, need_digit=True, need_mixed_case=True):
                yield Span(start, end, "aws_secret_key")
                last_end = end


# Each written from a literal (CPython then searches for it, many times faster than trying an
# alternation at every position); the letter before `torage` / `ey1` is checked on the hits.
_TWILIO_SID = re.compile(r"AC[0-9a-f]{32}(?![A-Za-z0-9])")
_STORAGE_WORDS = (re.compile(r"torage [Aa]ccount"), re.compile(r"TORAGE_ACCOUNT"),
                  re.compile(r"ey[12](?![A-Za-z0-9])"))
_HEX32 = re.compile(r"(?<![A-Za-z0-9])[0-9a-f]{32}(?![A-Za-z0-9])")
_STORAGE_KEY = re.compile(r"(?<![A-Za-z0-9+/])[A-Za-z0-9+/]{86}==(?![A-Za-z0-9+/=])")
_PAIR_REACH = 100


def pair_spans_in_text(text: str, precise: list[Span],
                       covered: Callable[[int], bool]) -> Iterator[Span]:
    """Secrets beside the id they pair with: a Twilio auth token after its Account SID, a
    Twilio API secret after its API key (found by `tokens` as `twilio_key`), an Azure storage
    key after the words "storage account" or "key1"."""
    n = len(text)
    for m in _TWILIO_SID.finditer(text):
        if m.start() and text[m.start() - 1].isalnum():
            continue
        for h in _HEX32.finditer(text, m.end(), min(n, m.end() + _PAIR_REACH + 32)):
            if not covered(h.start()) and random_body(h.group(), min_distinct=8, need_digit=True):
                yield Span(h.start(), h.end(), "twilio_key")
                break
    for words in _STORAGE_WORDS:
        for m in words.finditer(text):
            if m.start() < 1 or text[m.start() - 1] not in "SsKk" or \
                    (m.start() > 1 and text[m.start() - 2].isalnum()):
                continue
            hi = min(n, m.end() + _PAIR_REACH)
            for k in _STORAGE_KEY.finditer(text, m.end(), hi + 88):
                if k.start() < hi and not covered(k.start()) and random_body(
                        k.group(), min_distinct=20, need_digit=True, need_mixed_case=True):
                    yield Span(k.start(), k.end(), "azure_storage_key")
    for anchor in precise:
        if anchor.kind != "twilio_key":
            continue
        hi = min(n, anchor.end + _PAIR_REACH)
        for v in _VALUE.finditer(text, anchor.end, hi + _MAX_VALUE):
            if v.start() >= hi:
                break
            if not covered(v.start()) and looks_random(v.group()):
                yield Span(v.start(), v.end(), "twilio_key")
                break


def id_pair_spans(text: str, precise: list[Span], covered: Callable[[int], bool]) -> list[Span]:
    """The secrets found beside their ids, possibly overlapping (named by their provider, so
    the caller ranks them above the same values found by a keyword)."""
    spans = list(aws_secret_spans(text))
    spans.extend(pair_spans_in_text(text, precise, covered))
    return spans
