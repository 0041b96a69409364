"""`blame`: the commit and the agent sessions behind each line of a file.

The file is read as it is on disk (uncommitted lines included) and redacted as the ingest
redacts what it stores, so a line holding a secret still matches the edit that wrote it. git
gives each line's commit and the file's earlier names (renames); the stored edits of files with
those names are matched by path (the same absolute path, or the same path under another clone's
root), and their added lines by hash.
"""

from __future__ import annotations

import re
import sqlite3
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from chinvex.blame import git
from chinvex.blame.attribute import Candidate, LineInput, attribute
from chinvex.errors import UsageError
from chinvex.fmt import flat
from chinvex.paths import recorded_absolute, recorded_parts
from chinvex.storage import conversation_rows as rows
from chinvex.storage import edits as stored

if TYPE_CHECKING:
    from chinvex.models import ContextConfig

MAX_FILE_BYTES = 8 * 1024 * 1024
CONTEXT_LINES = 3
WORDS_CHARS = 400
_SPEC = re.compile(r"^(?P<path>.+?):(?P<first>\d+)(?:-(?P<last>\d+))?$")


@dataclass(frozen=True)
class Target:
    path: Path
    first: int | None
    last: int | None


def parse_target(spec: str) -> Target:
    """PATH, PATH:LINE or PATH:FIRST-LAST (a path that itself ends in `:N` is read as a path
    when that file exists)."""
    text = spec.strip()
    if not text:
        raise UsageError("PATH is empty; give a file, optionally with :LINE or :FIRST-LAST")
    match = _SPEC.match(text)
    if match and not Path(text).expanduser().exists():
        first = int(match["first"])
        last = int(match["last"]) if match["last"] else first
        if first < 1 or last < first:
            raise UsageError(f"{spec}: lines must be FIRST-LAST with 1 <= FIRST <= LAST")
        return Target(Path(match["path"]).expanduser(), first, last)
    whole = Path(text).expanduser()
    head, colon, lines = text.rpartition(":")
    if colon and head and not whole.exists() and Path(head).expanduser().is_file():
        raise UsageError(f"{spec}: the line range {lines!r} is not a number; give PATH:LINE or PATH:FIRST-LAST")
    return Target(whole, None, None)


def read_lines(path: Path) -> list[str]:
    from chinvex.errors import NotFoundError
    from chinvex.redaction import Redactor

    try:
        size = path.stat().st_size
    except FileNotFoundError:
        raise NotFoundError(f"{path}: no such file") from None
    except OSError as exc:
        raise UsageError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if path.is_dir():
        raise UsageError(f"{path}: is a folder; give a file")
    if size > MAX_FILE_BYTES:
        raise UsageError(f"{path}: {size} bytes; blame reads files up to {MAX_FILE_BYTES} bytes")
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise UsageError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if b"\0" in raw[:8192]:
        raise UsageError(f"{path}: a binary file; blame reads text files")
    return Redactor().text(raw.decode("utf-8", errors="replace")).splitlines()


class _Projects:
    """A session's project folder, read only for the edits that need it (a file at the top of
    a repository), once per session."""

    def __init__(self, conn: sqlite3.Connection):
        self.conn, self.known = conn, {}

    def __call__(self, doc_id: str) -> str | None:
        if doc_id not in self.known:
            found = rows.conversations(self.conn, [doc_id]).get(doc_id)
            self.known[doc_id] = found.project if found else None
        return self.known[doc_id]


def path_matches(edit: stored.EditRow, target: str, names: list[str], project: Callable[[str], str | None]) -> bool:
    """Whether an edit touched this file: the same absolute path, or the file's path relative to
    its repository (any of its names in history) at the end of the edit's path, so a session
    recorded in another clone of the repository counts. A file at the repository's top (one
    component) must also sit at the top of the session's project folder: every project has a
    README.md."""
    where = edit.abs_path or edit.path
    if edit.abs_path and recorded_parts(edit.abs_path) == recorded_parts(target):
        return True
    mine = recorded_parts(where)
    for name in names:
        rel = recorded_parts(name)
        if not rel:
            continue
        if recorded_absolute(where):
            if mine[-len(rel):] != rel:
                continue
            if len(rel) > 1:
                return True
            top = project(edit.doc_id)
            if top is not None and recorded_parts(top) == mine[:-1]:
                return True
        elif rel[-len(mine):] == mine and (len(mine) > 1 or len(rel) == 1):
            return True
    return False


def _names(target: Path, root: Path | None, blamed: list[git.BlamedLine] | None,
           source_roots: list[str]) -> list[str]:
    if root is not None:
        names = [target.relative_to(root).as_posix()]
        names += [b.path for b in blamed or ()]
        return list(dict.fromkeys(names))
    for source in sorted(source_roots, key=len, reverse=True):
        try:
            return [target.relative_to(Path(source).expanduser().resolve()).as_posix()]
        except ValueError:
            continue
    return ["/".join(target.parts[-2:])]


def _session(conn: sqlite3.Connection, row: rows.ConversationRow, edits: list[stored.EditRow],
             explained: list[int]) -> dict[str, Any]:
    """What a reader needs to see why: the user's request that led to the first edit, the
    assistant's words around it, each with the chunk that holds it (citable)."""
    from chinvex.models.documents import agent_of

    first = min(edits, key=lambda e: (e.turn_index, e.seq))
    window = rows.turns(conn, row.doc_id, first.turn_index - 60, first.turn_index + CONTEXT_LINES)
    chunks = rows.turn_chunks(conn, row.doc_id)
    request = None
    for index in range(first.turn_index, -1, -1):
        turn = window.get(index)
        if turn is None:
            if index < first.turn_index - 60:
                break
            continue
        if turn.get("role") == "user" and str(turn.get("text") or "").strip():
            request = {"turn": index + 1, "text": flat(turn["text"], WORDS_CHARS), "chunk_id": rows.chunk_of_turn(chunks, index)}
            break
    around = []
    lo = request["turn"] if request else max(first.turn_index - CONTEXT_LINES, 0)
    for index in range(lo, first.turn_index + CONTEXT_LINES + 1):
        turn = window.get(index)
        if turn and turn.get("role") == "assistant" and str(turn.get("text") or "").strip():
            around.append({"turn": index + 1, "text": flat(turn["text"], 300),
                           "chunk_id": rows.chunk_of_turn(chunks, index)})
    around = around[-CONTEXT_LINES:]
    edit_chunks = [rows.chunk_of_turn(chunks, e.turn_index) for e in edits]
    cited = [c for c in [request and request["chunk_id"], *edit_chunks, *(a["chunk_id"] for a in around)] if c]
    return {
        "doc_id": row.doc_id, "agent": agent_of(row.source), "session_id": row.thread_id,
        "title": row.title, "source_uri": row.source_uri, "project": row.project,
        "time": first.ts or row.updated_at, "lines": explained, "line_count": len(explained),
        "edits": [{"turn": e.turn_index + 1, "time": e.ts, "op": e.op, "path": e.abs_path or e.path,
                   "chunk_id": rows.chunk_of_turn(chunks, e.turn_index)} for e in edits[:20]],
        "request": request, "around": around, "chunk_ids": list(dict.fromkeys(cited)),
    }


def blame(conn: sqlite3.Connection, target: Target, *, context: str,
          source_roots: list[str] | None = None) -> dict[str, Any]:
    """The report `chinvex blame` prints and `chinvex_blame` returns (see docs/BLAME.md)."""
    path = target.path.resolve()
    text_lines = read_lines(path)
    total = len(text_lines)
    first = target.first or 1
    last = min(target.last or total, total)
    if total == 0:
        raise UsageError(f"{path}: the file is empty")
    if first > total:
        raise UsageError(f"{path}: has {total} lines; line {first} is past its end")
    root = git.repo_root(path)
    rel = path.relative_to(root).as_posix() if root is not None else None
    blamed = git.blame(root, rel, first, last) if root is not None and rel is not None else None
    commits = {b.line: b.commit for b in blamed or ()}
    names = _names(path, root, blamed, source_roots or [])
    candidates = [e for e in stored.edits_named(conn, {n.rsplit("/", 1)[-1] for n in names} | {path.name})
                  if e.op != "delete"]
    projects = _Projects(conn)
    candidates = [e for e in candidates if path_matches(e, str(path), names, projects)]
    added = stored.line_hashes(conn, [e.edit_id for e in candidates])
    lo, hi = max(first - CONTEXT_LINES - 1, 0), min(last + CONTEXT_LINES, total)
    inputs = [LineInput(n + 1, text_lines[n], _date(commits.get(n + 1))) for n in range(lo, hi)]
    found = attribute(inputs, added, [Candidate(e.edit_id, e.doc_id, e.ts) for e in candidates])
    by_id = {e.edit_id: e for e in candidates}
    per_doc_lines: dict[str, list[int]] = defaultdict(list)
    per_doc_edits: dict[str, list[stored.EditRow]] = defaultdict(list)
    out_lines = []
    for n in range(first, last + 1):
        best = found.get(n, [])
        docs_here = list(dict.fromkeys(c.doc_id for c in best))
        if docs_here:
            per_doc_lines[docs_here[0]].append(n)
            edit = by_id[best[0].edit_id]
            if edit not in per_doc_edits[docs_here[0]]:
                per_doc_edits[docs_here[0]].append(edit)
        commit = commits.get(n)
        out_lines.append({"line": n, "text": text_lines[n - 1],
                          "commit": commit.as_json() if commit else None,
                          "uncommitted": root is not None and commit is None,
                          "sessions": docs_here})
    commit_of = {n: commits.get(n) for n in range(first, last + 1)}

    def rank(doc_id: str) -> tuple[int, float]:
        gaps = [abs(_gap(per_doc_edits[doc_id][0].ts, _date(commit_of[n]))) for n in per_doc_lines[doc_id]]
        return (-len(per_doc_lines[doc_id]), min(gaps) if gaps else float("inf"))

    ranked = sorted(per_doc_lines, key=rank)
    docs = rows.conversations(conn, ranked)
    sessions = [_session(conn, docs[d], sorted(per_doc_edits[d], key=lambda e: (e.turn_index, e.seq)),
                         per_doc_lines[d]) for d in ranked]
    unexplained = [entry["line"] for entry in out_lines if not entry["sessions"] and entry["text"].strip()]
    return {"context": context, "path": str(path), "repository": str(root) if root else None,
            "git": blamed is not None, "first": first, "last": last, "total_lines": total, "lines": out_lines,
            "sessions": sessions, "unexplained": unexplained,
            "edits_considered": len(candidates)}


def _date(commit: git.Commit | None) -> str | None:
    return commit.date if commit is not None else None


def _gap(ts: str | None, date: str | None) -> float:
    from chinvex.blame.attribute import epoch

    a, b = epoch(ts), epoch(date)
    return float("inf") if a is None or b is None else a - b


def blame_in(conn: sqlite3.Connection, config: ContextConfig, target: Target) -> dict[str, Any]:
    """`blame` in a context: its name, and its repositories and note folders as the roots a file
    without git is placed under."""
    return blame(conn, target, context=config.name,
                 source_roots=[*config.includes.repos, *config.includes.note_roots])
