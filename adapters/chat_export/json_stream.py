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
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import IO, Any

import ijson

BUF_SIZE = 64 * 1024
SNIFF_BYTES = 64 * 1024

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


@dataclass
class StreamProblems:
    """What went wrong while streaming; the caller turns these into report lines."""

    truncated: bool = False
    trailing_garbage: bool = False
    resyncs: int = 0
    unrecovered_error: str | None = None
    first_error: str | None = None
    first_error_offset: int | None = None


class _Reader:
    """Feeds ijson from a raw stream, optionally after a synthetic prefix, counting bytes."""

    def __init__(self, raw: IO[bytes], prefix: bytes) -> None:
        self.raw = raw
        self.prefix = prefix
        self.consumed = 0
        self.eof = False

    def read(self, size: int = -1) -> bytes:
        if size == 0:  # ijson probes the stream type with read(0)
            return b""
        if self.prefix:
            out, self.prefix = self.prefix, b""
            return out
        data = self.raw.read(size if size and size > 0 else BUF_SIZE)
        if not data:
            self.eof = True
        self.consumed += len(data)
        return data


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
                if problems.first_error is None:
                    problems.first_error = message
                    problems.first_error_offset = pos + reader.consumed
                if reader.eof and not garbage:
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
