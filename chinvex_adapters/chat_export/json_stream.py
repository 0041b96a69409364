"""Streaming the elements of a huge top-level JSON array, one at a time, surviving damage.

`conversations.json` reaches hundreds of MB, so it is never loaded whole: ijson (yajl2 C
backend) yields one conversation at a time and memory stays bounded by the largest single
conversation. Two kinds of damage are survived instead of losing the file:

- a truncated file (download cut short): the complete elements before the cut are yielded and
  the cut is reported;
- a syntax error in the middle (a corrupt byte, a half-written record): the reader resyncs on
  the next plausible element start and goes on. ijson gives no byte offsets, so the search
  starts one read buffer before the position the reader had reached when it yielded its last
  good element (that element ended inside that buffer); the few elements seen twice that way
  are flagged `after_resync` so the caller can drop repeats.

Two more hazards are dealt with in the bytes, before ijson sees them:

- lone surrogate escapes (`\\udc80`, an emoji cut in half by the exporter): yajl turns them into
  bytes Python cannot decode, which failed the whole element. They are rewritten as `\\ufffd`
  (same length, so offsets hold): the damage is one character;
- pathological nesting: ijson builds a prefix string per level, so 100k levels need O(depth²)
  memory (tens of GB). The reader counts nesting outside strings and stops an element that goes
  deeper than `MAX_NESTING`, which is then handled like a syntax error (resync or refusal).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import IO, Any

import ijson

from chinvex.files.text import JsonEscapeRepairer

BUF_SIZE = 64 * 1024
SNIFF_BYTES = 64 * 1024
MAX_NESTING = 512
"""Deepest nesting read (the top-level array included). Real conversations nest about 10 levels;
ijson's prefix strings make memory grow with the square of the depth."""

# Where a conversation object may start. Real exports begin each conversation with "title";
# the other keys cover exporters that write keys in another order. False hits inside nested
# data are harmless: they come out as fragments without a mapping, which the caller drops.
_ELEMENT_START = re.compile(
    rb'\{\s*"(?:title|create_time|update_time|mapping|current_node|conversation_id|'
    rb'conversation_template_id|moderation_results|plugin_ids|gizmo_id|is_archived|'
    rb'default_model_slug)"\s*:'
)


class NotAnArray(ValueError):
    """The stream does not start with a JSON array."""


class NestedTooDeep(ValueError):
    """The JSON nests deeper than `MAX_NESTING` levels; `offset` is where, in the piece fed."""

    def __init__(self, message: str, offset: int = 0) -> None:
        super().__init__(message)
        self.offset = offset


class _Overflow(Exception):
    pass


# A complete JSON string (possessive: no backtracking on megabyte strings), the rest of one
# whose opening quote was in an earlier piece, and the tokens that matter for nesting.
_STRING = re.compile(rb'"(?:[^"\\]++|\\[\s\S])*+"')
_STRING_REST = re.compile(rb'(?:[^"\\]++|\\[\s\S])*+')
_BRACKET = re.compile(rb"[\[\]{}]")
_TOKEN = re.compile(rb'"(?:[^"\\]++|\\[\s\S])*+"|[\[\]{}]|"')
_SLICE = 1024


class NestingGuard:
    """Tracks the nesting depth of a JSON byte stream fed in pieces, outside strings.

    Cheap on real data: strings are removed with one regular expression per piece, then each
    1 KB slice is judged by counting brackets; only a slice whose opening brackets could reach
    the limit is walked bracket by bracket. When the limit is passed, the piece is replayed
    token by token to find the offset, so a reader can still hand over everything before it.
    """

    def __init__(self, limit: int = MAX_NESTING) -> None:
        self.limit = limit
        self.depth = 0
        self.in_string = False
        self.escape = False  # inside a string, the previous piece ended with a backslash

    def feed(self, data: bytes) -> None:
        """Account for `data`; NestedTooDeep (with the offset in `data`) when the limit is
        passed. The guard is not to be fed again after that."""
        if not data:
            return
        entry = (self.depth, self.in_string, self.escape)
        start = self._end_of_open_string(data)
        if start is None:
            return
        structural = _STRING.sub(b"", data[start:]) if b'"' in data else data[start:]
        quote = structural.find(b'"')
        if quote >= 0:  # a string runs into the next piece
            content = structural[quote + 1:]
            trailing = len(content) - len(content.rstrip(b"\\"))
            self.in_string, self.escape = True, trailing % 2 == 1
            structural = structural[:quote]
        try:
            self._account(structural)
        except _Overflow:
            self.depth, self.in_string, self.escape = entry
            raise NestedTooDeep(f"JSON nested deeper than {self.limit} levels",
                                self._locate(data)) from None

    def _end_of_open_string(self, data: bytes) -> int | None:
        """Offset just past the string left open by the previous piece (0 if none); None when
        `data` ends inside it (the state then says so)."""
        if not self.in_string:
            return 0
        start = min(1 if self.escape else 0, len(data))
        self.escape = False
        end = _STRING_REST.match(data, start).end()
        if end < len(data) and data[end] == 0x22:  # the closing quote
            self.in_string = False
            return end + 1
        self.escape = end == len(data) - 1  # a backslash cut from the byte it escapes
        return None

    def _account(self, structural: bytes) -> None:
        opens = structural.count(b"[") + structural.count(b"{")
        if self.depth + opens <= self.limit:  # cannot reach the limit: count, do not walk
            closes = structural.count(b"]") + structural.count(b"}")
            self.depth = max(self.depth + opens - closes, 0)
            return
        if len(structural) > _SLICE:
            for offset in range(0, len(structural), _SLICE):
                self._account(structural[offset:offset + _SLICE])
            return
        depth = self.depth
        for match in _BRACKET.finditer(structural):
            if match.group(0) in (b"[", b"{"):
                depth += 1
                if depth > self.limit:
                    raise _Overflow
            elif depth > 0:
                depth -= 1
        self.depth = depth

    def _locate(self, data: bytes) -> int:
        """Offset in `data` of the bracket that passes the limit (state: as before `data`)."""
        depth = self.depth
        start = self._end_of_open_string(data)
        for match in _TOKEN.finditer(data, start or 0):
            token = match.group(0)
            if token[0] == 0x22:
                if len(token) == 1:  # a string left open: nothing structural follows
                    break
            elif token in (b"[", b"{"):
                depth += 1
                if depth > self.limit:
                    return match.start()
            else:
                depth = max(depth - 1, 0)
        return len(data)


@dataclass
class StreamProblems:
    """What went wrong while streaming; the caller turns these into report lines."""

    truncated: bool = False
    trailing_garbage: bool = False
    too_deep: int = 0  # times reading stopped at nesting deeper than MAX_NESTING
    too_deep_error: str | None = None
    resyncs: int = 0
    unrecovered_error: str | None = None
    first_error: str | None = None
    first_error_offset: int | None = None


class _Reader:
    """Feeds ijson from a raw stream, optionally after a synthetic prefix, counting bytes
    (`consumed`: raw bytes read). Lone surrogate escapes are repaired and nesting is bounded
    on the way (see the module docstring)."""

    def __init__(self, raw: IO[bytes], prefix: bytes) -> None:
        self.raw = raw
        self.prefix = prefix
        self.consumed = 0
        self.eof = False
        self.repair = JsonEscapeRepairer()
        self.guard = NestingGuard()
        self.too_deep: NestedTooDeep | None = None

    def read(self, size: int = -1) -> bytes:
        if size == 0:  # ijson probes the stream type with read(0)
            return b""
        if self.too_deep is not None:
            raise self.too_deep
        if self.prefix:
            out, self.prefix = self.prefix, b""
        else:
            out = b""
            while not out and not self.eof:  # a piece may be held back whole by the repairer
                data = self.raw.read(size if size and size > 0 else BUF_SIZE)
                self.consumed += len(data)
                if data:
                    out = self.repair.feed(data)
                else:
                    self.eof = True
                    out = self.repair.flush()
        try:
            self.guard.feed(out)
        except NestedTooDeep as exc:
            # Hand over what comes before the offending bracket first, so that the elements
            # completed before it are still yielded; the next read raises.
            self.too_deep = exc
            out = out[:exc.offset]
            if not out:
                raise
        return out


def array_start(head: bytes) -> int:
    """Offset just past the opening `[` (after a BOM and whitespace); NotAnArray otherwise."""
    offset = 3 if head.startswith(b"\xef\xbb\xbf") else 0
    stripped = head[offset:].lstrip(b" \t\r\n")
    if not stripped:
        raise NotAnArray("empty file (no JSON value in it)")
    if stripped[:1] != b"[":
        first = stripped[:1].decode("latin-1")
        kind = "a JSON object" if first == "{" else f"{first!r}"
        raise NotAnArray(f"starts with {kind}, not a JSON array")
    return offset + (len(head[offset:]) - len(stripped)) + 1


def _first_line(exc: BaseException) -> str:
    text = exc.args[0] if exc.args else str(exc)
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    return str(text).strip().splitlines()[0] if str(text).strip() else type(exc).__name__


def _find_element_start(raw: IO[bytes], start: int) -> int | None:
    """Offset of the next plausible conversation start at or after `start`, or None."""
    raw.seek(start)
    offset = start
    carry = b""
    while True:
        block = raw.read(1024 * 1024)
        if not block:
            return None
        data = carry + block
        match = _ELEMENT_START.search(data)
        if match:
            return offset - len(carry) + match.start()
        carry = data[-128:]
        offset += len(block)


def iter_array(
    open_raw: Callable[[], IO[bytes]], problems: StreamProblems
) -> Iterator[tuple[Any, bool]]:
    """Yield `(element, after_resync)` for each element of the top-level array.

    `open_raw` returns a fresh seekable binary stream; it is called once. Raises NotAnArray
    when the stream is not an array at all (nothing yielded).
    """
    raw = open_raw()
    try:
        head = raw.read(SNIFF_BYTES)
        pos = array_start(head)
        resynced = False
        prev_candidate = -1
        while True:
            raw.seek(pos)
            reader = _Reader(raw, b"[")
            last_good = pos
            try:
                for element in ijson.items(reader, "item", use_float=True, buf_size=BUF_SIZE):
                    last_good = pos + reader.consumed
                    yield element, resynced
                return
            except (ijson.JSONError, ValueError, OverflowError) as exc:
                message = _first_line(exc)
                garbage = "trailing garbage" in message
                deep = isinstance(exc, NestedTooDeep)
                if deep:
                    problems.too_deep += 1
                    problems.too_deep_error = problems.too_deep_error or message
                if problems.first_error is None:
                    problems.first_error = message
                    problems.first_error_offset = pos + reader.consumed
                if reader.eof and not garbage and not deep:
                    problems.truncated = True
                    return
                # Also after "trailing garbage": a stray `]` inside a damaged entry closes the
                # array early, and the conversations after it must not be lost.
                search_from = max(prev_candidate + 1, last_good - BUF_SIZE, 0)
                candidate = _find_element_start(raw, search_from)
                if candidate is None:
                    if garbage:
                        problems.trailing_garbage = True
                    else:
                        problems.unrecovered_error = message
                    return
                problems.resyncs += 1
                prev_candidate = candidate
                pos = candidate
                resynced = True
    finally:
        raw.close()
