"""Read one text file for `parse`, turning every way it can fail into a one-line SourceError.

Shared by the repo, notes and Claude Code memory files (and their candidates' relative paths and times). The text keeps the file's line endings (CRLF stays
CRLF) so that chunk offsets can be mapped back to the file; only a byte-order mark is
dropped.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from chinvex.models.sources import ParseReport, SourceCandidate, SourceError
from chinvex_adapters.kit.filetype import (
    OPEN_FLAGS,
    SNIFF_BYTES,
    count_invalid_utf8,
    detect_bom,
    sniff_bytes,
)

DEFAULT_MAX_FILE_BYTES = 1_000_000
"""The size limit of a file whose candidate does not carry one (`extra["max_file_bytes"]`)."""


@dataclass(frozen=True)
class TextFile:
    text: str
    size_bytes: int
    mtime_ns: int
    encoding: str
    replaced: int  # undecodable sequences turned into U+FFFD


def read_bytes(path: str, max_bytes: int) -> tuple[bytes, os.stat_result]:
    """The file's bytes and the stat of the very handle they were read from."""
    try:
        with open(os.open(path, OPEN_FLAGS), "rb", closefd=True) as fh:
            st = os.fstat(fh.fileno())
            if not stat.S_ISREG(st.st_mode):
                raise SourceError(f"{path}: is no longer a regular file")
            if st.st_size > max_bytes:
                raise SourceError(
                    f"{path}: is now {st.st_size:,} bytes, over the {max_bytes:,}-byte limit"
                )
            data = fh.read(max_bytes + 1)
    except SourceError:
        raise
    except FileNotFoundError:
        raise SourceError(f"{path}: disappeared before it could be read") from None
    except PermissionError:
        raise SourceError(f"{path}: permission denied") from None
    except IsADirectoryError:
        raise SourceError(f"{path}: is a directory now, not a file") from None
    except OSError as exc:
        raise SourceError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    if len(data) > max_bytes:
        raise SourceError(f"{path}: grew past the {max_bytes:,}-byte limit while being read")
    return data, st


def decode(data: bytes) -> tuple[str, str, int]:
    """(text, encoding, replaced): BOM-aware, never raises, never yields lone surrogates."""
    encoding = detect_bom(data) or "utf-8"
    text = data.decode(encoding, "replace")
    if encoding == "utf-8-sig" or encoding == "utf-8":
        replaced = count_invalid_utf8(data)
    else:
        replaced = text.count("\ufffd")
    if text.startswith("\ufeff"):
        text = text[1:]
    return text, encoding, replaced


def read_text(path: str, max_bytes: int) -> TextFile:
    """Read and decode `path`; SourceError when it vanished, grew or turned binary."""
    data, st = read_bytes(path, max_bytes)
    verdict = sniff_bytes(data[:SNIFF_BYTES], complete=len(data) <= SNIFF_BYTES)
    if verdict.binary:
        raise SourceError(f"{path}: is binary now ({verdict.detail})")
    if verdict.encoding in ("utf-8", "utf-8-sig"):
        nul = data.find(b"\x00", SNIFF_BYTES)
        if nul >= 0:
            raise SourceError(f"{path}: binary content (NUL byte at offset {nul})")
    text, encoding, replaced = decode(data)
    return TextFile(text, len(data), st.st_mtime_ns, encoding, replaced)


def replacement_warning(path: str, tf: TextFile) -> str | None:
    if not tf.replaced:
        return None
    return (
        f"{path}: {tf.replaced} invalid {tf.encoding} byte sequence(s) replaced with U+FFFD"
    )


def candidate_file(candidate: SourceCandidate) -> str:
    """The file a candidate names, as the reader and its messages show it."""
    return str(candidate.path or candidate.source_uri)


def read_candidate(candidate: SourceCandidate) -> TextFile:
    """Read the candidate's file under the size limit enumeration recorded on it."""
    limit = int(candidate.extra.get("max_file_bytes") or DEFAULT_MAX_FILE_BYTES)
    return read_text(candidate_file(candidate), limit)


def note_replacements(path: str, tf: TextFile, report: ParseReport) -> None:
    """Warn once per file whose undecodable bytes were replaced, and count them."""
    warning = replacement_warning(path, tf)
    if warning:
        report.warnings.append(warning)
        report.counts["invalid_bytes_replaced"] += tf.replaced


def mtime_datetime(mtime_ns: int) -> datetime:
    """A stat mtime in nanoseconds as an aware UTC datetime."""
    return datetime.fromtimestamp(mtime_ns / 1_000_000_000, timezone.utc)


def candidate_rel_path(candidate: SourceCandidate) -> str:
    """The path relative to the root, POSIX-style (from enumeration, else recomputed)."""
    rel = candidate.extra.get("path")
    if isinstance(rel, str) and rel:
        return rel
    path = Path(candidate.path or candidate.source_uri)
    try:
        return path.relative_to(candidate.root).as_posix()
    except ValueError:
        return path.name
