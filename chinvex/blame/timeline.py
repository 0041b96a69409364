"""`timeline`: day by day, the sessions of every agent and the commits of the context's
repositories, in time order. What a developer (or recall_context's briefing) reads to see what
happened recently and which conversation went with which commit."""

from __future__ import annotations

import re
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from chinvex.blame import git
from chinvex.errors import UsageError
from chinvex.fmt import flat
from chinvex.paths import recorded_parts
from chinvex.storage import conversation_rows as rows
from chinvex.storage import edits as stored
from chinvex.timeutil import iso_z, to_utc

_RELATIVE = re.compile(r"^(\d+)\s*([mhdw])$")
_UNITS = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}
REQUEST_CHARS = 200


def parse_when(value: str | None, option: str, now: datetime | None = None) -> str | None:
    """`7d`, `12h`, `2w`, `30m` (that long ago), a date or an ISO time, as ISO UTC."""
    if value is None or not value.strip():
        return None
    text = value.strip()
    match = _RELATIVE.match(text)
    if match:
        moment = (now or datetime.now(UTC)) - timedelta(**{_UNITS[match[2]]: int(match[1])})
        return iso_z(moment)
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise UsageError(f"{option} {value!r}: expected a duration ago (7d, 12h, 2w, 30m), a date "
                         "(2026-11-01) or an ISO time") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return iso_z(moment)


def _under(path: str | None, folder: Path) -> bool:
    if not path:
        return False
    mine = recorded_parts(str(folder))
    return recorded_parts(path)[:len(mine)] == mine


def _minutes(start: str | None, end: str | None) -> int | None:
    a, b = to_utc(start), to_utc(end)
    if a is None or b is None:
        return None
    return max(round((b - a).total_seconds() / 60), 0)


def _repositories(repos: list[str], project: Path | None) -> list[Path]:
    places = [Path(r).expanduser() for r in repos]
    if project is not None:
        places.append(project)
    roots: dict[Path, None] = {}
    for place in places:
        if place.exists():
            root = git.repo_root(place)
            if root is not None:
                roots.setdefault(root, None)
    if project is not None:
        return [r for r in roots if _under(str(r), project) or _under(str(project), r)]
    return list(roots)


def timeline(conn: sqlite3.Connection, *, context: str, repos: list[str], since: str | None,
             until: str | None, project: Path | None = None, agent: str | None = None,
             limit: int = 1000, commits_too: bool = True) -> dict[str, Any]:
    """Sessions (the newest `limit` active in the period) and, unless an agent is asked for or
    `commits_too` is off, the commits of the repositories, merged in time order by UTC day."""
    from chinvex.models.documents import agent_of

    events: list[dict[str, Any]] = []
    found = rows.conversations_between(conn, since, until, limit=limit)
    if agent:
        found = [r for r in found if agent in (agent_of(r.source), r.source)]
    if project is not None:
        found = [r for r in found if _under(r.project, project) or
                 any(_under(p, project) for p in (r.metadata.get("links") or {}).get("repo_paths") or [])]
    edited = stored.edits_of_docs(conn, [r.doc_id for r in found])
    for row in found:
        files = list(dict.fromkeys(e.abs_path or e.path for e in edited.get(row.doc_id, [])))
        if not files:
            files = [f for f in row.metadata.get("files_edited") or [] if isinstance(f, str)]
        events.append({
            "kind": "session", "time": row.created_at or row.updated_at, "end": row.updated_at,
            "agent": agent_of(row.source), "session_id": row.thread_id, "doc_id": row.doc_id,
            "title": row.title, "project": row.project, "source_uri": row.source_uri,
            "first_request": flat(rows.first_user_text(conn, row.doc_id), REQUEST_CHARS) or None,
            "files_edited": files, "duration_min": _minutes(row.created_at, row.updated_at),
        })
    commits = 0
    if commits_too and not agent:
        for root in _repositories(repos, project):
            for logged in git.log(root, since, until):
                if until and logged.commit.date >= until:
                    continue
                commits += 1
                events.append({"kind": "commit", "time": logged.commit.date, "repository": logged.repo,
                               **logged.commit.as_json(), "files": logged.files})
    events.sort(key=lambda e: (e["time"] or "", 0 if e["kind"] == "commit" else 1))
    days: dict[str, list[dict[str, Any]]] = {}
    for event in events:
        days.setdefault((event["time"] or "undated")[:10], []).append(event)
    return {"context": context, "since": since, "until": until, "sessions": len(found), "commits": commits,
            "days": [{"date": day, "events": day_events} for day, day_events in days.items()]}
