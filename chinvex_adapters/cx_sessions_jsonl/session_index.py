"""Thread names from CODEX_HOME/session_index.jsonl (written on every rename).

A rename does not touch the rollout itself, so the name lives only in this companion file
(`{"id", "thread_name", "updated_at"}` per line, the latest line wins). The index is read once
per (path, size, mtime) and cached: one CODEX_HOME holds thousands of rollouts.
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

from .reader import decode_json

INDEX_NAME = "session_index.jsonl"
_MAX_INDEX_BYTES = 64 * 1024 * 1024


def index_candidates(file_path: Path, root: str | None) -> list[Path]:
    """Where the session index of a rollout may be: the CODEX_HOME above its `sessions` dir,
    the configured root, or the root's parent (root = `.../sessions`)."""
    out: list[Path] = []
    for parent in file_path.parents:
        if parent.name in ("sessions", "archived_sessions"):
            out.append(parent.parent / INDEX_NAME)
            break
    if root:
        r = Path(root)
        out += [r / INDEX_NAME, r.parent / INDEX_NAME]
    seen: list[Path] = []
    for p in out:
        if p not in seen:
            seen.append(p)
    return seen


@lru_cache(maxsize=16)
def _load(path: str, size: int, mtime_ns: int) -> dict[str, str]:
    names: dict[str, str] = {}
    try:
        with open(path, "rb") as fh:
            for raw in fh:
                obj, ok = decode_json(raw.strip())
                if not ok or not isinstance(obj, dict):
                    continue
                tid, name = obj.get("id"), obj.get("thread_name")
                if isinstance(tid, str) and isinstance(name, str) and name.strip():
                    names[tid] = name.strip()[:300]
    except OSError:
        return {}
    return names


def thread_name(file_path: Path, root: str | None, thread_id: str) -> str | None:
    for candidate in index_candidates(file_path, root):
        try:
            st = os.stat(candidate)
        except OSError:
            continue
        if st.st_size > _MAX_INDEX_BYTES:
            continue
        name = _load(str(candidate), st.st_size, st.st_mtime_ns).get(thread_id)
        if name:
            return name
    return None
