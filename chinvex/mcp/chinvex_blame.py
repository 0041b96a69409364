"""MCP tool `chinvex_blame`: which agent session wrote these lines of a file, and why.

The report of `chinvex blame` (`chinvex.blame.service.blame`), made compact for a model: each
line's text trimmed, its commit named by a short sha (the commits described once), and per
session only what says why (the request behind the edit, the assistant's words around it) and
the chunk ids to cite or to read with chinvex_get_chunks. At most `MAX_LINES` lines per call;
the result says when the range was cut and which lines to ask for next.

Result: {context, path, repository, first, last, lines: [{line, text, commit (short sha, or
"uncommitted"), sessions: [doc_id]}], commits: {sha: {date, author, subject}}, sessions: [{doc_id,
agent, session_id, title, time, lines ("3-9,14"), line_count, request: {turn, text, chunk_id},
around: [{turn, text, chunk_id}], chunk_ids}], unexplained ("18-19"), edits_considered, cut?}.

The context: the one named, else the context whose source folders hold the file (the deepest,
as `chinvex blame` chooses), else the project context. A relative path is taken from the
server's working directory, then from each source folder of the named (or project) context;
`path:N` and `path:N-M` are read as a file and lines when no file has that name.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from chinvex.mcp import limits
from chinvex.mcp.arguments import file_candidates, source_folders
from chinvex.mcp.limits import ToolFailure
from chinvex.mcp.state import ServerState

if TYPE_CHECKING:
    from chinvex.models import ContextConfig

MAX_LINES = 400
"""Lines per call: a whole file of a few hundred lines fits, a 5,000-line one is asked for in parts."""
TEXT_CHARS = 160
"""A line's text as returned (its indentation dropped): enough to recognise it."""
SHA_CHARS = 10
PATH_MAX_CHARS = 4096
_LINES = re.compile(r"^(\d{1,9})(?:\s*-\s*(\d{1,9}))?$")
_SUFFIX = re.compile(r"^(?P<path>.+?):(?P<first>\d{1,9})(?:-(?P<last>\d{1,9}))?$")


def parse_lines(lines: str | None) -> tuple[int | None, int | None]:
    """"N" or "N-M" (1 <= N <= M); None or blank: the whole file."""
    text = limits.require_short("lines", lines, max_chars=32, required=False)
    if text is None:
        return None, None
    match = _LINES.match(text)
    if match is None:
        raise ToolFailure(limits.INVALID_ARGUMENT, f"lines must be N or N-M, e.g. 14 or 10-30 (got {text!r}).")
    first = int(match[1])
    last = int(match[2]) if match[2] else first
    if first < 1 or last < first:
        raise ToolFailure(limits.INVALID_ARGUMENT, f"lines {text!r}: N-M needs 1 <= N <= M.")
    return first, last


def _choose(state: ServerState, raw: str, context: str | None) -> tuple[Path, ContextConfig]:
    """The file and the context to blame it in."""
    from chinvex.context.default import contexts_containing

    if context is not None and context.strip():
        config = state.resolve(context.strip())
        candidates = file_candidates(raw, state.cwd, source_folders(config))
        return next((p for p in candidates if p.exists()), candidates[0]), config
    project = state.resolution().config
    candidates = file_candidates(raw, state.cwd, source_folders(project))
    path = next((p for p in candidates if p.exists()), candidates[0])
    configs = [e.config for e in state.registry().entries() if e.config is not None]
    found = contexts_containing(configs, str(path))
    if len(found) == 1:
        return path, found[0]
    if project is not None:  # as `chinvex blame` does: the default when no one context holds the file
        return path, project
    if found:
        names = ", ".join(c.name for c in found)
        raise ToolFailure(limits.INVALID_ARGUMENT, f"{path} is in the sources of several contexts ({names}); "
                          "pass context.")
    return path, state.project()  # raises CONTEXT_NOT_FOUND with the reason


def _split_suffix(raw: str, state: ServerState) -> tuple[str, str | None]:
    """`path:14` or `path:10-30` (how agents often write a place) when no file has that name."""
    match = _SUFFIX.match(raw)
    if match is None:
        return raw, None
    whole = Path(raw).expanduser()
    if (whole if whole.is_absolute() else Path(state.cwd) / whole).exists():
        return raw, None
    first, last = match["first"], match["last"]
    return match["path"], f"{first}-{last}" if last else first


def _trim(text: str) -> str:
    text = text.strip()
    return text if len(text) <= TEXT_CHARS else text[: TEXT_CHARS - 1] + "…"


def _ranges(numbers: list[int]) -> str:
    """[3, 4, 5, 9] -> "3-5,9"."""
    from chinvex.blame.render import line_runs

    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in line_runs(numbers))


def compact(report: dict[str, Any]) -> dict[str, Any]:
    """The report without what a model does not need: full shas repeated per line, edit lists,
    session file paths; line texts trimmed."""
    commits: dict[str, dict[str, Any]] = {}
    lines = []
    for entry in report["lines"]:
        line: dict[str, Any] = {"line": entry["line"], "text": _trim(entry["text"])}
        commit = entry.get("commit")
        if commit:
            sha = commit["sha"][:SHA_CHARS]
            commits.setdefault(sha, {k: commit.get(k) for k in ("date", "author", "subject")})
            line["commit"] = sha
        elif entry.get("uncommitted"):
            line["commit"] = "uncommitted"
        line["sessions"] = entry["sessions"]
        lines.append(line)
    sessions = []
    for s in report["sessions"]:
        session: dict[str, Any] = {
            "doc_id": s["doc_id"], "agent": s["agent"], "session_id": s["session_id"], "title": s["title"],
            "time": s["time"], "lines": _ranges(s["lines"]), "line_count": s["line_count"],
            "request": s["request"],
            "around": s["around"], "chunk_ids": s["chunk_ids"],
        }
        sessions.append(session)
    return {"context": report["context"], "path": report["path"], "repository": report["repository"],
            "first": report["first"], "last": report["last"], "lines": lines, "commits": commits,
            "sessions": sessions, "unexplained": _ranges(report["unexplained"]),
            "edits_considered": report["edits_considered"]}


def chinvex_blame(state: ServerState, path: str, lines: str | None = None,
                  context: str | None = None) -> dict[str, Any]:
    from chinvex.blame.service import Target, blame_in
    from chinvex.errors import ChinvexError, NotFoundError, UsageError

    raw = limits.require_short("path", path, max_chars=PATH_MAX_CHARS)
    assert raw is not None
    if lines is None or not lines.strip():
        raw, lines = _split_suffix(raw, state)
    first, last = parse_lines(lines)
    target_path, config = _choose(state, raw, context)
    if not target_path.exists():
        where = "" if Path(raw).expanduser().is_absolute() else \
            f" (a relative path is taken from {state.cwd}, then from the context's source folders)"
        raise ToolFailure(limits.NOT_FOUND, f"{target_path}: no such file{where}", path=str(target_path))
    if not Path(config.index.sqlite_path).exists():
        raise ToolFailure(limits.NOT_FOUND, f"context {config.name!r} has no index yet; run "
                          f"'chinvex ingest --context {config.name}'", context=config.name)
    start = first or 1
    end = last if last is not None and last - start + 1 <= MAX_LINES else start + MAX_LINES - 1
    target = Target(path=target_path, first=start, last=end)
    h = state.handle(config)
    try:
        with h.lock:
            report = blame_in(h.conn, config, target)
    except NotFoundError as exc:
        raise ToolFailure(limits.NOT_FOUND, exc.message) from None
    except UsageError as exc:
        raise ToolFailure(limits.INVALID_ARGUMENT, exc.message) from None
    except ChinvexError as exc:
        raise ToolFailure(exc.code, exc.message) from None
    result = compact(report)
    total = report["total_lines"]
    if min(last or total, total) > report["last"]:  # the range asked for goes on past the cap
        shown, following = f"{result['first']}-{result['last']}", result["last"] + 1
        result["cut"] = (f"at most {MAX_LINES} lines per call: lines {shown} of {total}; ask for "
                         f"lines={following}-{min(following + MAX_LINES - 1, total)} next")
    return result
