"""Fingerprints decide, from a stat or a thread's updatedAt alone, whether a source must be read
again (seed spec §5, §7). The decision is a pure function; the table access is
chinvex.storage.fingerprints (which defines the row, `Fingerprint`)."""

from __future__ import annotations

import time
from dataclasses import dataclass

from chinvex.models.sources import SourceCandidate
from chinvex.storage.fingerprints import Fingerprint

__all__ = ["Fingerprint", "Versions", "Decision", "decide", "verified", "now_unix"]

# Reason codes (DESIGN.md §5), plus new_thread / full_reingest / unchanged.
NEW_FILE = "new_file"
NEW_THREAD = "new_thread"
MTIME_CHANGED = "mtime_changed"
SIZE_CHANGED = "size_changed"
CONTENT_CHANGED = "content_changed"
PARSER_UPGRADED = "parser_upgraded"
CHUNKER_UPGRADED = "chunker_upgraded"
EMBED_MODEL_CHANGED = "embed_model_changed"
RETRY_AFTER_ERROR = "retry_after_error"
THREAD_UPDATED = "thread_updated"
FULL_REINGEST = "full_reingest"
ORIGIN_CHANGED = "origin_changed"  # another source of the same document went away
INTERRUPTED = "interrupted"  # the run writing this source died before recording it
UNCHANGED = "unchanged"


@dataclass(frozen=True)
class Versions:
    parser_version: str
    chunker_version: str
    embedded_model: str


@dataclass(frozen=True)
class Decision:
    ingest: bool
    reason: str
    verify_content: bool = False
    """mtime moved but size did not, and a content hash is stored: hash the file and settle the
    decision with `verified()` before reading it (a `touch` is not a change)."""
    refresh_only: bool = False
    """The stat moved but the content hash is the stored one: only the fingerprint's stat is
    brought up to date (reported as "touched"/refreshed), nothing is parsed or written."""


def decide(fp: Fingerprint | None, cand: SourceCandidate, versions: Versions, *, full: bool,
           interrupted: bool = False) -> Decision:
    """Skip or ingest one candidate, from its stat (or thread timestamps) and its fingerprint.

    The first matching reason wins, so the reason reported is the one that forces the read:
    a version or model change outranks a stat change (everything of the source is rebuilt
    anyway). `full`: everything is read again; the reason is `embed_model_changed` when the
    source's vectors were made by another model (why `--full` was needed), else `full_reingest`.
    `interrupted`: an earlier run started writing this source and died before its
    fingerprint; what is stored may be neither the fingerprinted version nor the current one
    (the file may even have been reverted to the fingerprinted version since), so the source is
    read again whatever its stat says.

    A moved mtime with an unchanged size is `mtime_changed`; when a content hash is stored the
    decision asks for it to be compared (`verify_content`) and `verified()` turns it into
    `content_changed` or a refresh. Without a stored hash (files over the hashing limit,
    sources whose adapter keeps a resume state instead) the content is not compared, so the
    reason stays what was observed: `mtime_changed`."""
    is_thread = cand.path is None and cand.thread_updated_at is not None
    if fp is None:
        return Decision(True, NEW_THREAD if is_thread else NEW_FILE)
    if full:
        if fp.embedded_model != versions.embedded_model:
            return Decision(True, EMBED_MODEL_CHANGED)
        return Decision(True, FULL_REINGEST)
    if interrupted:
        return Decision(True, INTERRUPTED)
    if fp.last_status == "error":
        return Decision(True, RETRY_AFTER_ERROR)
    if fp.parser_version != versions.parser_version:
        return Decision(True, PARSER_UPGRADED)
    if fp.chunker_version != versions.chunker_version:
        return Decision(True, CHUNKER_UPGRADED)
    if fp.embedded_model != versions.embedded_model:
        return Decision(True, EMBED_MODEL_CHANGED)
    if is_thread:
        if cand.thread_updated_at != fp.thread_updated_at:
            return Decision(True, THREAD_UPDATED)
        if cand.last_turn_id is not None and cand.last_turn_id != fp.last_turn_id:
            return Decision(True, THREAD_UPDATED)
        return Decision(False, UNCHANGED)
    if cand.size_bytes != fp.size_bytes:
        return Decision(True, SIZE_CHANGED)
    same_mtime = (
        cand.mtime_ns == fp.mtime_ns if fp.mtime_ns is not None and cand.mtime_ns is not None
        else cand.mtime_unix == fp.mtime_unix
    )
    if not same_mtime:
        return Decision(True, MTIME_CHANGED, verify_content=fp.content_sha256 is not None)
    return Decision(False, UNCHANGED)


def verified(decision: Decision, fp: Fingerprint | None, content_sha256: str | None) -> Decision:
    """Settle a `verify_content` decision with the file's current hash (None: it could not be
    read). Same hash: a refresh; another hash: `content_changed`; unreadable: still
    `mtime_changed` (nothing was compared; reading it for the ingest will report why)."""
    if not decision.verify_content or fp is None or fp.content_sha256 is None:
        return decision
    if content_sha256 is None:
        return Decision(True, MTIME_CHANGED)
    if content_sha256 == fp.content_sha256:
        return Decision(False, MTIME_CHANGED, refresh_only=True)
    return Decision(True, CONTENT_CHANGED)


def now_unix() -> int:
    return int(time.time())
