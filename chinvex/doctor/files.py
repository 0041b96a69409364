"""Checks of the context's configuration and its index folders."""

from __future__ import annotations

import os
from pathlib import Path

from chinvex.doctor.report import Check
from chinvex.errors import ChinvexError, UsageError
from chinvex.models import ContextConfig
from chinvex.models.context import SESSIONS_KEY


def check_config(config: ContextConfig) -> Check:
    """context.json's include lists and embedder as `context create` and ingest accept them: a
    folder per entry, one export file allowed in `chat_roots`, "auto" or KIND=PATH in
    `sessions`."""
    check = Check("context_config")
    problems: list[str] = []
    for key, values in config.includes.entries():
        if not isinstance(values, list):
            problems.append(f"includes.{key}: expected a list of folders")
            continue
        for root in values:
            problem = _entry_problem(key, str(root))
            if problem:
                problems.append(f"includes.{key}: {root}: {problem}")
    try:
        from chinvex.embedding.factory import make_embedder

        make_embedder(config.embedding)
    except ChinvexError as exc:
        problems.append(f"embedding: {exc.message}")
    if problems:
        return check.problem("error", problems, "context.json names sources or settings that "
                             "cannot be used; ingest reports them as errors (fix context.json, "
                             "or 'chinvex context remove-source')", repairable=False)
    check.message = "valid; every include folder is readable"
    return check


def _entry_problem(key: str, entry: str) -> str | None:
    """Why one include entry cannot be read, or None."""
    from chinvex.context.registry import FILE_ROOTS

    if key == SESSIONS_KEY:
        return _sessions_problem(entry)
    if key in FILE_ROOTS and os.path.isfile(entry):
        return None if os.access(entry, os.R_OK) else "permission denied"
    return _folder_problem(entry)


def _sessions_problem(entry: str) -> str | None:
    """An `includes.sessions` entry: "auto" is looked up at each ingest (nothing to check);
    KIND=PATH needs a known KIND and a PATH that exists (a store may be a file, e.g. a db)."""
    from chinvex.ingest.session_stores import parse_entry

    try:
        _agent, path = parse_entry(entry)
    except UsageError as exc:
        return exc.message
    if path is None:
        return None
    return None if os.path.exists(os.path.expanduser(path)) else "does not exist"


def _folder_problem(path: str) -> str | None:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return "does not exist"
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    import stat

    if not stat.S_ISDIR(st.st_mode):
        return "is not a folder"
    if not os.access(path, os.R_OK | os.X_OK):
        return "permission denied"
    return None


def check_index_files(config: ContextConfig) -> Check:
    check = Check("index_files")
    sqlite_path = Path(config.index.sqlite_path)
    problems: list[str] = []
    if not sqlite_path.exists():
        problems.append(f"{sqlite_path}: does not exist")
    if not config.index.chroma_url:
        chroma = Path(config.index.chroma_dir)
        if chroma.exists() and not chroma.is_dir():
            problems.append(f"{chroma}: is not a folder")
    if problems:
        return check.problem("error", problems, "index files are missing; run 'chinvex ingest' "
                             "to build the index again", repairable=False)
    check.message = str(sqlite_path.parent)
    try:
        kept = sorted(p.name for p in sqlite_path.parent.iterdir()
                      if ".damaged-" in p.name and not p.name.endswith(("-wal", "-shm")))
    except OSError:
        kept = []
    if kept:  # not a problem: what an earlier repair kept, for the user to inspect or delete
        check.message += f" (damaged files kept by an earlier repair: {', '.join(kept)})"
    if not config.index.chroma_url:  # a stale matrix is not damage: searches just do not use it
        from chinvex.storage.vector_matrix import describe

        check.message += f"; {describe(config.index.chroma_dir, config.index.sqlite_path)}"
    return check
