"""The stat signature of an embedded Chroma store's vector segment files, as chinvex last left
them, so that a no-change ingest can tell for the price of a few `os.stat` calls that something
outside chinvex wrote them (random bytes over the HNSW files, a partial copy) and open the
store to check it, instead of trusting the recorded coverage figure.

The signature lists every file under the store's folder (size, mtime in ns, inode) except
`chroma.sqlite3` and its journals, which every Chroma start-up writes (a search too: Chroma
records each open), and the gate file, whose token says the same about writes through chinvex
(chinvex.storage.coverage). Chroma saves the segment files on every write chinvex makes, so
they stay as the run left them until the next write. It is stored in `meta`:

    {"files": {"<segment uuid>/header.bin": [size, mtime_ns, inode], ...}}
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING

import orjson

from chinvex.storage.db import get_meta, set_meta
from chinvex.storage.store_files import CHROMA_DB_FILE, GATE_FILE

if TYPE_CHECKING:
    from chinvex.models import ContextConfig

SIGNATURE_META_KEY = "vector_store_files"
_NOT_SIGNED = (CHROMA_DB_FILE, f"{CHROMA_DB_FILE}-journal", f"{CHROMA_DB_FILE}-wal",
               f"{CHROMA_DB_FILE}-shm", GATE_FILE)
"""Files written by reads (Chroma's start-up) or whose change the gate token already reports."""

Signature = dict[str, list[int]]


def files_signature(config: ContextConfig) -> Signature | None:
    """(size, mtime_ns, inode) of each signed file under the store's folder, by relative path;
    None for a Chroma server's store or when the folder cannot be listed (absent)."""
    if config.index.chroma_url:
        return None
    return folder_signature(Path(config.index.chroma_dir))


def folder_signature(root: Path) -> Signature | None:
    """The signature of the embedded store in `root`; None when it cannot be listed."""
    found: Signature = {}
    try:
        _walk(root, "", found)
    except OSError:
        return None
    return found


def _walk(folder: Path, prefix: str, found: Signature) -> None:
    with os.scandir(folder) as entries:
        for entry in entries:
            name = prefix + entry.name
            if entry.is_dir(follow_symlinks=False):
                _walk(Path(entry.path), name + "/", found)
            elif not prefix and entry.name in _NOT_SIGNED:
                continue
            else:
                st = entry.stat(follow_symlinks=False)
                found[name] = [st.st_size, st.st_mtime_ns, st.st_ino]


def recorded_signature(conn: sqlite3.Connection) -> Signature | None:
    """The signature recorded when chinvex last wrote or checked the store; None when none was
    recorded (an index written before this record existed) or the row does not parse."""
    return parse_signature(get_meta(conn, SIGNATURE_META_KEY))


def parse_signature(raw: str | None) -> Signature | None:
    """The signature stored in the meta row's value; None when absent or unreadable."""
    if raw is None:
        return None
    try:
        files = orjson.loads(raw)["files"]
    except (orjson.JSONDecodeError, KeyError, TypeError):
        return None
    return files if isinstance(files, dict) else None


def files_unchanged(config: ContextConfig, conn: sqlite3.Connection) -> bool:
    """Whether the segment files are as chinvex last left them (always True for a server store,
    whose files chinvex cannot see). False when no signature was ever recorded: the store is
    then checked once, and signed."""
    if config.index.chroma_url:
        return True
    recorded = recorded_signature(conn)
    return recorded is not None and recorded == files_signature(config)


def record_signature(config: ContextConfig, conn: sqlite3.Connection) -> None:
    """Sign the store's files as they are now (after a run that wrote or checked them); one
    autocommit statement, skipped when the recorded signature is already this one."""
    current = files_signature(config)
    if current is None or current == recorded_signature(conn):
        return
    set_meta(conn, SIGNATURE_META_KEY, orjson.dumps({"files": current}).decode())
