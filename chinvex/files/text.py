"""Lone UTF-16 surrogates: replace them so that every string is valid UTF-8.

JSON allows `\\udc80` on its own (an emoji cut in half by an exporter), and Python's stdlib JSON
decoder, `surrogateescape` file names and third-party adapters all hand out `str` values holding
such lone surrogates. UTF-8 cannot encode them, so SQLite, orjson, pydantic's JSON and the
tokenizer all refuse them, and one bad character would cost a whole source. Each lone surrogate
becomes one U+FFFD; a high+low pair that arrives as two code points is joined into the character
it encodes.

The common path costs one `isascii()` (or one `encode`) per string: cleaning only happens when
the string really is broken. Pure functions, no dependencies, usable by adapters and engine alike.
"""

from __future__ import annotations

import re

REPLACEMENT = "\ufffd"

_SURROGATE = re.compile("[\ud800-\udfff]")
_JSON_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
# One JSON escape, scanned from a position that is not inside an escape: `\\` (an escaped
# backslash) is consumed whole, so the next backslash found really starts an escape. A valid
# surrogate pair is kept; a lone surrogate escape (group 1) is replaced.
_JSON_ESCAPE = re.compile(
    rb"\\(?:u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}"
    rb"|(u[dD][89a-fA-F][0-9a-fA-F]{2})|[\s\S])"
)
_HIGH_ESCAPE = re.compile(rb"\\u[dD][89abAB][0-9a-fA-F]{2}")
_LONGEST_ESCAPE = 12  # a surrogate pair: \ud83d\ude00


def is_clean(text: str) -> bool:
    """True when `text` can be encoded as UTF-8 (holds no lone surrogate)."""
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def clean_str(text: str) -> str:
    """`text` with every lone surrogate replaced by U+FFFD (the same object when clean).

    The UTF-16 round trip is what joins a split pair (two code points) into one character and
    turns each unpaired code unit into exactly one U+FFFD, whatever its neighbours.
    """
    if is_clean(text):
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def replace_surrogates(text: str) -> str:
    """Every surrogate code point replaced by U+FFFD, pairs too: unlike `clean_str` the length
    is kept, for callers whose character offsets must still index the original text."""
    if is_clean(text):
        return text
    return _SURROGATE.sub(REPLACEMENT, text)


def repair_json_escapes(data: bytes) -> bytes:
    """JSON text with each lone surrogate escape (`\\udc80`) rewritten as `\\ufffd`.

    Length-preserving (6 bytes for 6 bytes), so byte offsets into the original stay valid.
    Decoders such as orjson and yajl refuse or mangle lone surrogate escapes; after this they
    read the text and the damage is one character. `data` must not start inside an escape.
    """
    if _JSON_SURROGATE_ESCAPE.search(data) is None:
        return data
    return _JSON_ESCAPE.sub(_replace_escape, data)


def _replace_escape(match: re.Match[bytes]) -> bytes:
    return b"\\ufffd" if match.group(1) is not None else match.group(0)


class JsonEscapeRepairer:
    """`repair_json_escapes` over a byte stream read in pieces.

    An escape may be cut by a read boundary (`...\\ud83d` | `\\ude00...`): the tail of a piece
    that could be the start of an unfinished escape is held back and prepended to the next one.
    Call `feed` for each piece and `flush` at the end of the stream.
    """

    def __init__(self) -> None:
        self._carry = b""

    def feed(self, data: bytes) -> bytes:
        if self._carry:
            data = self._carry + data
            self._carry = b""
        cut = _unfinished_escape_start(data)
        if cut is None:  # common path: no escape can straddle the boundary
            return repair_json_escapes(data)
        self._carry = data[cut:]
        return repair_json_escapes(data[:cut])

    def flush(self) -> bytes:
        rest, self._carry = self._carry, b""
        return repair_json_escapes(rest)


def _unfinished_escape_start(data: bytes) -> int | None:
    """Where to cut `data` so that no escape is split: the offset of the first escape starting
    in its last 12 bytes (moved back to the high half when that escape is the low half of a
    pair), or None when no escape starts there.

    An escape starting earlier is complete (none is longer than 12 bytes) unless it is the
    high half of a pair whose low half is cut, which the move back handles. In JSON a backslash
    starts an escape exactly when an even number of backslashes precede it (`\\\\` is the only
    escape holding a second backslash), so only a short look back is needed.
    """
    start = max(len(data) - _LONGEST_ESCAPE, 0)
    backslash = data.find(b"\\", start)
    while backslash >= 0:
        if _starts_escape(data, backslash):
            high = backslash - 6
            if high >= 0 and _HIGH_ESCAPE.fullmatch(data, high, backslash) and _starts_escape(data, high):
                return high
            return backslash
        backslash = data.find(b"\\", backslash + 1)
    return None


def _starts_escape(data: bytes, backslash: int) -> bool:
    run = 0
    while backslash - run - 1 >= 0 and data[backslash - run - 1] == 0x5C:
        run += 1
    return run % 2 == 0
