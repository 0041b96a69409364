"""Checks of the context's configuration and its index folders."""

from __future__ import annotations

import os
from pathlib import Path

from chinvex.doctor.report import Check
from chinvex.errors import ChinvexError
from chinvex.models import ContextConfig


def check_config(config: ContextConfig) -> Check:
    check = Check("context_config")
    problems: list[str] = []
    for key, values in config.includes.entries():
        if not isinstance(values, list):
            problems.append(f"includes.{key}: expected a list of folders")
            continue
        for root in values:
            problem = _folder_problem(str(root))
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
    return check
