"""Byte-offset line reading over `.jsonl` and `.jsonl.zst` rollouts.

Codex appends one JSON object plus `\\n` per record while a session runs, so a reader can
meet a half-written last line. Offsets are kept in bytes of the (decompressed) stream so a
later run can resume exactly where a complete line ended; nothing caps the length of a line
(`input_image` data URLs and tool outputs reach megabytes).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import orjson

from chinvex.files.text import repair_json_escapes

CHUNK_BYTES = 1 << 20
HEAD_FINGERPRINT_BYTES = 4096
_BOM = b"\xef\xbb\xbf"


class RolloutReadError(Exception):
    """The bytes cannot be read at all (I/O or decompression failure)."""


def is_compressed(path: Path) -> bool:
    return path.name.endswith(".zst")


@contextmanager
def open_stream(path: Path) -> Iterator[IO[bytes]]:
    """A binary stream of the rollout's JSONL bytes, decompressing `.zst` transparently."""
    raw = open(path, "rb")  # noqa: SIM115 - closed below
    try:
        if is_compressed(path):
            import zstandard

            reader = zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True)
            try:
                yield reader  # type: ignore[misc]
            finally:
                reader.close()
        else:
            yield raw
    finally:
        raw.close()


@dataclass(frozen=True)
class RawLine:
    start: int
    end: int  # offset just past the line's `\n` (or past its last byte when unterminated)
    data: bytes  # without the `\n`
    terminated: bool


def iter_raw_lines(stream: IO[bytes], start: int = 0) -> Iterator[RawLine]:
    """Split the stream into lines, reporting byte offsets relative to the stream start.

    `start` is where the stream is already positioned (the caller seeks plain files); it is
    only added to the offsets.
    """
    buf = bytearray()
    buf_start = start
    scan_from = 0
    while True:
        try:
            chunk = stream.read(CHUNK_BYTES)
        except Exception as exc:  # zstd errors are not OSError subclasses
            raise RolloutReadError(f"{type(exc).__name__}: {exc}") from exc
        if not chunk:
            break
        buf += chunk
        pos = 0
        while True:
            nl = buf.find(b"\n", scan_from)
            if nl < 0:
                scan_from = len(buf)
                break
            yield RawLine(buf_start + pos, buf_start + nl + 1, bytes(buf[pos:nl]), True)
            pos = nl + 1
            scan_from = pos
        if pos:
            del buf[:pos]
            buf_start += pos
            scan_from -= pos
    if buf:
        yield RawLine(buf_start, buf_start + len(buf), bytes(buf), False)


def decode_json(data: bytes) -> tuple[Any, bool]:
    """Parse one line; returns (value, ok). Invalid UTF-8 is replaced, never fatal.

    orjson is tried on the raw bytes first (fast, strict); a line it refuses has its lone
    surrogate escapes (`\\udc80`, an emoji cut in half) rewritten as U+FFFD, is decoded with
    `errors="replace"` and retried, then handed to the stdlib parser, which also accepts the
    NaN/Infinity literals some writers emit. No string of the result holds a lone surrogate.
    """
    if data.startswith(_BOM):
        data = data[len(_BOM):]
    try:
        return orjson.loads(data), True
    except orjson.JSONDecodeError:
        pass
    text = repair_json_escapes(data).decode("utf-8", errors="replace")
    try:
        return orjson.loads(text), True
    except orjson.JSONDecodeError:
        pass
    try:
        return json.loads(text), True
    except (ValueError, RecursionError):
        return None, False


def head_fingerprint(path: Path, length: int) -> str | None:
    """sha256 of the first `length` bytes of the (decompressed) file; None if shorter/unreadable."""
    if length <= 0:
        return hashlib.sha256(b"").hexdigest()
    try:
        with open_stream(path) as stream:
            data = b""
            while len(data) < length:
                piece = stream.read(length - len(data))
                if not piece:
                    break
                data += piece
    except (OSError, RolloutReadError):
        return None
    except Exception:  # zstd raises its own error type on corrupt input
        return None
    if len(data) < length:
        return None
    return hashlib.sha256(data).hexdigest()
