"""Deterministic identifiers: the same inputs give the same ids on every machine and run."""

from __future__ import annotations

import hashlib
from pathlib import Path


def sha256_hex(text: str | bytes) -> str:
    data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    return hashlib.sha256(data).hexdigest()


def chunk_id(doc_id: str, chunk_index: int, text: str) -> str:
    """Seed spec appendix C: first 12 hex digits of sha256("doc_id:index:text")."""
    return sha256_hex(f"{doc_id}:{chunk_index}:{text}")[:12]


def doc_id_for(source_type: str, key: str) -> str:
    """A document's id from its source type and its stable key (path, or thread id).

    Codex threads use the thread id as key whichever adapter read them, so the app-server and
    the rollout file of one thread map to one document.
    """
    return sha256_hex(f"{source_type}:{key}")[:16]


def thread_doc_id(source_type: str, thread_id: str) -> str:
    return doc_id_for(source_type, f"thread:{thread_id}")


def file_sha256(path: Path) -> str:
    """The sha256 of a file's bytes, read in blocks (model files are ~90 MB)."""
    with path.open("rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()
