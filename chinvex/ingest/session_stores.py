"""Agents' session stores as sources: which exist on this machine and hold sessions
(`chinvex sessions detect`), and what a context's `includes.sessions` entries ("auto" or
"KIND=PATH") stand for at ingest time.

A store is *present* when its own adapter's enumeration finds at least one session in it, so
`detect` and `ingest` always agree on what a store holds. "auto" is resolved under the home
folder on every run: agents installed since the context was made are picked up; the ingest
reads every store location that exists (one holding no session yields nothing).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from chinvex.errors import UsageError
from chinvex.models.sources import AdapterOptions, SourceCandidate

AUTO = "auto"
SESSION_TYPES = ("agent_session", "codex_session", "chat")


@dataclass
class FoundStore:
    agent: str
    label: str
    adapter: str
    path: str
    sessions: int
    newest: str | None

    def as_json(self) -> dict[str, object]:
        return {"agent": self.agent, "label": self.label, "path": self.path,
                "sessions": self.sessions, "newest": self.newest}


def _count(reader: str, path: Path) -> tuple[int, int | None]:
    from chinvex.ingest.adapters import adapter as load_adapter

    sessions, newest = 0, None
    try:
        for item in load_adapter(reader).enumerate(path, AdapterOptions(context_name="(detect)")):
            if isinstance(item, SourceCandidate) and item.source_type in SESSION_TYPES:
                sessions += 1
                if item.mtime_ns is not None:
                    newest = max(newest or 0, item.mtime_ns)
    except Exception:  # noqa: BLE001 - a store that cannot be listed holds nothing to ingest
        return 0, None
    return sessions, newest


def _stamp(ns: int | None) -> str | None:
    if not ns:
        return None
    return datetime.fromtimestamp(ns / 1e9, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def detect(home: Path | None = None, env: Mapping[str, str] | None = None,
           agents: set[str] | None = None) -> list[FoundStore]:
    """Every store on this machine holding at least one session."""
    from chinvex_adapters.discovery import existing_stores

    found: list[FoundStore] = []
    for kind, path in existing_stores(home or Path.home(), env if env is not None else os.environ,
                                      agents):
        sessions, newest = _count(kind.counter or kind.reader, path)
        if sessions:
            found.append(FoundStore(kind.agent, kind.label, kind.reader, str(path), sessions,
                                    _stamp(newest)))
    return found


def parse_entry(entry: str) -> tuple[str, str | None]:
    """("auto", None) or (agent, path) from an `includes.sessions` entry; UsageError naming the
    entry when it is neither."""
    from chinvex_adapters.discovery import kinds

    value = entry.strip()
    if value == AUTO:
        return AUTO, None
    agent, sep, path = value.partition("=")
    known = kinds()
    if not sep or not path.strip():
        raise UsageError(f"--sessions {entry!r}: give 'auto' or KIND=PATH (KIND one of "
                         f"{', '.join(sorted(known))})")
    if agent.strip() not in known:
        raise UsageError(f"--sessions {entry!r}: unknown agent {agent.strip()!r} (one of "
                         f"{', '.join(sorted(known))})")
    return agent.strip(), path.strip()


def checked_entry(entry: str) -> str:
    """An entry as stored in context.json: "auto", or KIND=<absolute path that exists>."""
    agent, path = parse_entry(entry)
    if path is None:
        return AUTO
    full = os.path.abspath(os.path.expanduser(path))
    if not os.path.exists(full):
        raise UsageError(f"--sessions {entry!r}: {path} does not exist")
    return f"{agent}={full}"


def resolve(entries: list[str], home: Path | None = None,
            env: Mapping[str, str] | None = None) -> list[tuple[str, str]]:
    """(adapter, root) for every entry: "auto" becomes every store location that exists under
    the home folder now (the ingest's own enumeration finds what they hold, so they are not
    counted first as `detect` does); KIND=PATH its adapter and path. Malformed entries raise
    UsageError."""
    from chinvex_adapters.discovery import existing_stores, kinds

    roots: list[tuple[str, str]] = []
    for entry in entries:
        agent, path = parse_entry(entry)
        if path is None:
            roots.extend((kind.reader, str(found)) for kind, found in existing_stores(
                home or Path.home(), env if env is not None else os.environ))
        else:
            roots.append((kinds()[agent].reader, os.path.abspath(os.path.expanduser(path))))
    return list(dict.fromkeys(roots))
