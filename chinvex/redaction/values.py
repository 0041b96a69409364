"""Is the value found next to a secret-sounding name really a secret?

A key name alone (`password`, `token`, `api_key`) is a weak signal: code and configuration are
full of `password: str`, `token=None`, `api_key=os.environ["X"]`, `${TOKEN}`, `<your-api-key>` or
`max_tokens: 4096`. Redacting those would blank out exactly the text a developer searches for,
so a value is only treated as a secret when it is a literal that looks machine-generated: not a
reference, not a placeholder, not a name made of words, with mixed character classes and enough
entropy. These checks run only on the few candidates the detectors find, never on whole texts.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
import string

MARKER_PREFIX = "[REDACTED:"

# `$VAR`, `${VAR}`, `$(cmd)`, `%(name)s`, `%VAR%`: the value is looked up elsewhere.
_REFERENCE_START = re.compile(r"\$[{(A-Za-z_]|%\(|%[A-Za-z_]\w*%")
# As a whole configuration value, also a YAML tag or alias (`!vault |`, `!Ref X`, `*default`) or
# an annotation-style lookup (`@Value`); inside a URL these characters are just password text.
_VALUE_REFERENCE_START = re.compile(r"[@!*][A-Za-z_]")
# Template syntax anywhere in the value (`Bearer {{ token }}`, `prefix-${X}`).
_TEMPLATE_INSIDE = ("${", "{{", "{%", "<%", "#{", "[[")
# printf-style fields (`Bearer %s`, `user:%s@host`); `%d4` is percent-encoding, not a field.
_PRINTF_FIELD = re.compile(r"%[sdr](?![0-9A-Za-z])")

_PLACEHOLDER_WORDS = (
    "xxx", "***", "...", "\u2026", "<", ">", "your", "changeme", "change_me", "change-me",
    "changeit", "replace", "placeholder", "example", "dummy", "redacted", "fixme", "todo",
    "insert", "sample", "secret_here", "_here", "-here", "fake", "notreal", "not_real",
)
_PLACEHOLDER_INSIDE = re.compile("|".join(map(re.escape, _PLACEHOLDER_WORDS)))
_PLACEHOLDER_EXACT = frozenset({
    "none", "null", "nil", "true", "false", "undefined", "yes", "no", "on", "off", "empty",
    "string", "str", "bytes", "int", "bool", "optional", "required", "secret", "secrets",
    "password", "passwd", "passphrase", "pass", "pwd", "token", "apikey", "api_key", "key",
    "value", "default", "hidden", "masked", "unset", "n/a", "na", "tbd", "test", "demo",
    "admin", "root", "guest", "user", "username", "mypassword", "letmein", "qwerty",
    "foo", "bar", "baz", "qux", "foobar", "spam", "eggs",
})

# Paths and file names are configuration, not credentials (`token_file: ~/.config/gh/token`).
_FILE_SUFFIX = re.compile(
    r"\.(?:json|ya?ml|toml|ini|cfg|conf|txt|pem|key|crt|cer|der|p12|pfx|jks|keystore|env|gpg|"
    r"asc|pub|py|js|ts|sh|md|html|xml|db|sqlite|log|age)$",
    re.IGNORECASE,
)

_SEGMENT_SPLIT = re.compile(r"[-_./:@+\s\[\](){}<>,|=*#]+")
# A segment made of a word and a short version number: utf8, sha256, BASE64, python3, v2.
_WORD_WITH_NUMBER = re.compile(r"[A-Za-z][a-z]*\d{1,4}|[A-Z]+\d{1,4}|v\d+")
# The pieces a camelCase / ACRONYM / number identifier splits into.
_PIECES = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")


def is_marker_or_contains_marker(value: str) -> bool:
    """Values already replaced by a marker are never redacted again (idempotence)."""
    return MARKER_PREFIX in value


def is_reference(value: str, *, whole_value: bool = True) -> bool:
    """A variable, command substitution or template stands in for the secret: keep it."""
    if _REFERENCE_START.match(value):
        return True
    if whole_value and _VALUE_REFERENCE_START.match(value):
        return True
    if value.startswith("{") and value.endswith("}"):
        return True  # `{token}` format field, `{.access_token}` JSONPath, an object literal
    return any(t in value for t in _TEMPLATE_INSIDE) or _PRINTF_FIELD.search(value) is not None


def is_placeholder(value: str) -> bool:
    """Documentation placeholders (`<your-api-key>`, `xxxxx`, `changeme`) are not secrets."""
    lowered = value.lower()
    if lowered in _PLACEHOLDER_EXACT:
        return True
    if _PLACEHOLDER_INSIDE.search(lowered):
        return True
    return len(set(lowered)) <= 3


def is_path_or_url(value: str) -> bool:
    """File paths and URLs name where a secret lives, they are not the secret."""
    if "://" in value or value.startswith(("/", "~", "./", "../", "\\")):
        return True
    if len(value) > 2 and value[1] == ":" and value[2] in "\\/":
        return True  # C:\ or C:/
    return _FILE_SUFFIX.search(value) is not None


def bare_file_stem(value: str) -> int | None:
    """The length of the stem when `value` is a file name with a known extension and no folder
    (`hunter2x9.md`), else None. A secret stands in file names too (`password=<pw>.txt`,
    `prod-<token>.env`); the extension is then not part of it, and the stem is judged alone."""
    if "/" in value or "\\" in value:
        return None
    m = _FILE_SUFFIX.search(value)
    return m.start() if m is not None and m.start() > 0 else None


def _wordish(segment: str) -> bool:
    if _WORD_WITH_NUMBER.fullmatch(segment):
        return True
    pieces = _PIECES.findall(segment)
    if sum(map(len, pieces)) != len(segment):
        return False  # punctuation inside: not an identifier
    n = len(pieces)
    if n == 1 or (n == 2 and max(map(len, pieces)) >= 3):
        return True  # a word, or two (`testDb`, `toJSON`, `Py3`)
    short = sum(1 for p in pieces if len(p) <= 2)
    numbers = sum(1 for p in pieces if p[0].isdigit())
    return numbers < 3 and len(segment) >= 3.5 * n and short * 2 <= n


def is_name_like(value: str) -> bool:
    """Identifiers, model names and dotted attribute paths are made of words and numbers.

    A segment (between `-_./:` and similar) splits into camelCase/ACRONYM/number pieces. Names
    have few, long pieces (`settings.SECRET_KEY`, `claude-3-5-sonnet-20241022`, `getUserToken`,
    `V1ValidatorWithKwargs`); random credentials have many one- or two-character pieces and
    scattered digits (`aB3xK9` -> a, B, 3, x, K, 9). Measured on 20,000 random base62 strings
    (12-64 chars) and 10,000 identifiers from installed packages: 0.2% of the random strings
    pass as names, 0.65% of the identifiers do not.
    """
    return all(_wordish(seg) for seg in _SEGMENT_SPLIT.split(value) if seg)


def shannon_entropy(value: str) -> float:
    """Bits per character of the value's own character distribution."""
    if not value:
        return 0.0
    n = len(value)
    return -sum((c / n) * math.log2(c / n) for c in map(value.count, set(value)))


_LOWER = frozenset(string.ascii_lowercase)
_UPPER = frozenset(string.ascii_uppercase)
_DIGITS = frozenset(string.digits)
_ALNUM = _LOWER | _UPPER | _DIGITS


def char_classes(value: str) -> int:
    """How many of lower, upper, digit and other characters the value uses."""
    chars = set(value)
    return ((not chars.isdisjoint(_LOWER)) + (not chars.isdisjoint(_UPPER))
            + (not chars.isdisjoint(_DIGITS)) + (not chars <= _ALNUM))


def _plausible_literal(value: str) -> bool:
    return not (
        value.isdigit()
        or is_marker_or_contains_marker(value)
        or is_reference(value)
        or is_placeholder(value)
        or is_path_or_url(value)
        or is_name_like(value)
    )


def looks_like_password(value: str) -> bool:
    """For keys that say password: a short literal suffices if it is not a word or a name.

    A value made of words and digits is still a password when no code would name something
    so (`is_unlike_identifier`), such as `hunter2hunter2` or `hunter2-staging` after a password
    name."""
    if len(value) < 6 or char_classes(value) < 2:
        return False
    if _plausible_literal(value):
        return True
    return is_name_like(value) and is_unlike_identifier(value) and not (
        is_reference(value) or is_placeholder(value) or is_path_or_url(value)
        or is_marker_or_contains_marker(value))


# Identifiers, attribute paths, module paths and versions use these; passwords of words rarely do.
_IDENTIFIER_PUNCTUATION = re.compile(r"[_.:/\\@$%]")
_DIGIT_INSIDE_WORD = re.compile(r"[A-Za-z]\d+[A-Za-z]")
# A symbol no identifier holds, between letters or digits (`Cobalt514#summit`, `maple!42`).
_SYMBOL_INSIDE = re.compile(r"[A-Za-z0-9][!#&*^~+=?][A-Za-z0-9]")


def is_unlike_identifier(value: str) -> bool:
    """Letters and digits that code would not write as a name: words joined by hyphens with a
    digit somewhere (`hunter2-staging`, `blue-42-horse`: `-` is an operator in most languages
    and kebab-case names rarely hold digits), digits between letters (`hunter2hunter2`,
    `p4ssw0rd`: identifiers put their numbers at the end, `utf8`, `sha256`, `python3`), or a
    symbol between them (`Cobalt514#summit`)."""
    if _IDENTIFIER_PUNCTUATION.search(value):
        return False
    if not any(ch.isdigit() for ch in value) or not any(ch.isalpha() for ch in value):
        return False
    return ("-" in value.strip("-") or _DIGIT_INSIDE_WORD.search(value) is not None
            or _SYMBOL_INSIDE.search(value) is not None)


def looks_like_secret(value: str) -> bool:
    """For token/secret/key names: long, mixed and high-entropy (or simply long) literals."""
    n = len(value)
    if n < 12 or char_classes(value) < 2 or not _plausible_literal(value):
        return False
    return n >= 24 or shannon_entropy(value) >= 3.0  # entropy only where length is not enough


def looks_like_credential(value: str) -> bool:
    """For explicit credential syntax (`user:pw@host`, `curl -u user:pw`): any literal counts,
    only references and placeholders are kept."""
    return bool(value) and not (
        is_marker_or_contains_marker(value)
        or is_reference(value, whole_value=False)
        or is_placeholder(value)
    )


def random_body(body: str, *, min_distinct: int = 8, need_digit: bool = False,
                need_mixed_case: bool = False) -> bool:
    """The random part of a fixed-format token: rejects `ghp_XXXXXXXX...`-style placeholders and
    kebab-case identifiers that happen to share a prefix (`sk-estimator-doc-link`)."""
    if len(set(body)) < min_distinct:
        return False
    # `your` as a placeholder writes it (`ghp_your_token`, `YOUR_KEY`); a random body may hold
    # its letters in mixed case (`...syOUrk...`), which says nothing.
    if "xxxx" in body or "XXXX" in body or "your" in body or "YOUR" in body or "<" in body:
        return False
    if need_digit and not any("0" <= ch <= "9" for ch in body):
        return False
    if need_mixed_case and not (any("a" <= ch <= "z" for ch in body)
                                and any("A" <= ch <= "Z" for ch in body)):
        return False
    return True


_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
# An id with its type as a word before it (`call_...`, `msg_...`, `toolu_...`, `cus_...`) or
# as two capitals before 32 hex (a Twilio `AC...` account SID): APIs name their objects so;
# their keys carry fixed prefixes that `tokens` knows.
_TYPED_ID = re.compile(r"[a-z]{2,10}_[A-Za-z0-9]{16,}$|[A-Z]{2}[0-9a-f]{32}$")
_BASE64_TEXT = re.compile(r"[A-Za-z0-9+/_-]{12,}={0,2}")


def encodes_text(value: str) -> bool:
    """base64 of printable text (`dGhlIHNhbXBsZSBub25jZQ==`: a WebSocket nonce example, an
    encoded phrase in a test): it looks random but says something. A random key decodes to
    bytes that are almost never all printable."""
    if _BASE64_TEXT.fullmatch(value) is None:
        return False
    body = value.rstrip("=").replace("-", "+").replace("_", "/")
    try:
        decoded = base64.b64decode(body + "=" * (-len(body) % 4))
    except (ValueError, binascii.Error):
        return False
    return len(decoded) >= 8 and all(32 <= b < 127 or b in (9, 10, 13) for b in decoded)


def looks_random(value: str, *, min_length: int = 20) -> bool:
    """A value that only its neighbourhood marks as a secret (a key id beside it, the word
    "secret" a few words away) must look machine-generated on its own: long, upper and lower
    case and digits, many distinct characters, not a name, a path, a placeholder, a UUID or
    encoded text. Lowercase hex (git SHAs, digests) and UUIDs never qualify."""
    if len(value) < min_length or len(set(value)) < 12:
        return False
    chars = set(value)
    if chars.isdisjoint(_LOWER) or chars.isdisjoint(_UPPER) or chars.isdisjoint(_DIGITS):
        return False
    if _UUID.search(value) or shannon_entropy(value) < 3.5 or _TYPED_ID.match(value):
        return False
    return _plausible_literal(value) and not encodes_text(value)


def looks_like_named_secret(value: str) -> bool:
    """A value right after a word that names a secret ("the shared secret is ...", "token
    ...", "API key: ..."): long and random enough, hex included (a Twilio auth token, a Slack
    signing secret), but not a word, a name or encoded text."""
    if len(value) < 16 or not looks_like_secret(value):
        return False
    if not random_body(value, min_distinct=10):
        return False
    if _UUID.search(value) or encodes_text(value):
        return False
    digits = sum(ch.isdigit() for ch in value)
    letters = sum(ch.isalpha() for ch in value)
    return char_classes(value) >= 3 or (digits >= 4 and letters >= 4)
