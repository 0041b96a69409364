"""The `kimi` adapter: Moonshot's Kimi Code (`~/.kimi-code/sessions`) and Kimi CLI
(`~/.kimi/sessions`). One conversation per session folder, whose candidate is its main
transcript (Kimi Code: `agents/main/wire.jsonl`; Kimi CLI: `context.jsonl`) with the size and
mtime of every file it is read with; the thread id is the session's uuid.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from chinvex.models import ConversationDoc
from chinvex.models.sources import (
    AdapterOptions,
    ParseReport,
    SkippedSource,
    SourceCandidate,
    UnrecognisedSource,
)
from chinvex_adapters.kit.sessionfile import SessionFileAdapter
from chinvex_adapters.kit.sniff import first_objects
from chinvex_adapters.kit.walk import WalkEntry, walk

from .cli import WorkDirs, read_cli_session
from .code import read_code_session
from .layout import Session, context_files, role_of, rotation, walk_root

BOOKKEEPING = frozenset({"_system_prompt", "_checkpoint", "_usage"})
ROLES = frozenset({"user", "assistant", "tool", "system"})


def shape_of(path: Path) -> tuple[str | None, str]:
    """("code" | "cli_wire" | "cli_context", "") by the first records, or (None, why not)."""
    objects = first_objects(path, count=6, limit=8 * 1024 * 1024)
    if not objects:
        return None, "empty file or no JSON object on its first lines"
    first, rest = objects[0], objects[1:]
    if first.get("type") == "metadata" and isinstance(first.get("protocol_version"), str):
        if "created_at" in first or any(isinstance(o.get("type"), str) and "." in o["type"] and "time" in o
                                        for o in rest):
            return "code", ""
        if not rest or any(isinstance(o.get("message"), dict) and "timestamp" in o for o in rest):
            return "cli_wire", ""
        return None, "a wire metadata line followed by records of neither Kimi journal"
    if all("role" in o and "type" not in o for o in objects):
        if any(o.get("role") in BOOKKEEPING for o in objects):
            return "cli_context", ""
        if (path.name.startswith("context") or role_of(path)[1] == "cli_legacy") and \
                all(o.get("role") in ROLES for o in objects):
            return "cli_context", ""
    kind = first.get("type")
    what = f"its first record is of type {kind!r}" if isinstance(kind, str) else "its first records"
    return None, f"{what}, not a Kimi wire journal or context"


class KimiAdapter(SessionFileAdapter):
    name = "kimi"
    label = "Kimi Code or Kimi CLI session"
    parser_version = "kimi_v1"

    def __init__(self) -> None:
        self.work_dirs = WorkDirs()

    # -- enumeration -----------------------------------------------------------------------
    def enumerate(self, root: Path, options: AdapterOptions) -> Iterator[SourceCandidate | SkippedSource]:
        root_str = str(Path(root).expanduser().absolute())
        sessions: dict[Path, Session] = {}
        for entry in walk(walk_root(Path(root_str)), options.excludes):
            if entry.skip is not None:
                yield SkippedSource(str(entry.path), self.source_type, entry.skip, entry.detail)
                continue
            folder, role, detail = role_of(entry.path, tuple(entry.rel.split("/")))
            if role == "store":
                yield SkippedSource(str(entry.path), self.source_type, "ignored", detail)
                continue
            session = sessions.setdefault(folder, Session(folder))
            stat = (entry.size_bytes or 0, entry.mtime_ns or 0)
            if role == "side":
                session.side[entry.path] = detail
            else:
                session.read[entry.path] = stat
                if role in ("code_wire", "cli_context", "cli_rotated", "cli_legacy"):
                    session.transcripts.append(entry.path)
                    session.kind = "code" if role == "code_wire" else session.kind or "cli"
        for session in sessions.values():
            yield from self._flush(session, root_str)

    def _flush(self, session: Session, root: str) -> Iterator[SourceCandidate | SkippedSource]:
        primary, why = _primary(session)
        for path, detail in session.side.items():
            yield SkippedSource(str(path), self.source_type, "ignored", detail)
        for path in session.read:
            if path != primary:
                detail = why or f"read with its session's {primary.name if primary else 'transcript'}"
                yield SkippedSource(str(path), self.source_type, "ignored", detail)
        if primary is not None:
            yield SourceCandidate(
                source_uri=str(primary), source_type=self.source_type, adapter=self.name, root=root,
                path=primary, size_bytes=session.size_bytes, mtime_ns=session.mtime_ns,
                extra={"layout": "kimi_code" if session.kind == "code" else "kimi_cli"})

    def accepts(self, rel: str, entry: WalkEntry) -> bool | str:
        _, role, detail = role_of(entry.path, tuple(rel.split("/")))
        return True if role in ("code_wire", "cli_context", "cli_rotated", "cli_legacy") else \
            (detail or "read with its session's transcript")


    # -- routing by content ----------------------------------------------------------------
    def sniff(self, path: Path) -> str | None:
        found, why = shape_of(path)
        return None if found is not None else why or "its content is not of this format"

    # -- reading ---------------------------------------------------------------------------
    def parse_file(self, path: Path, report: ParseReport, candidate: SourceCandidate,
                   previous_state: dict[str, Any] | None) -> Iterator[ConversationDoc]:
        shape, why = shape_of(path)
        if shape is None:
            raise UnrecognisedSource(f"{path}: not a {self.label} ({why})")
        if shape == "code":
            in_session = path.parent.parent.name == "agents" and path.name == "wire.jsonl"
            folder = path.parents[2] if in_session else None
            main = folder / "agents" / "main" / "wire.jsonl" if folder else path
            wire = main if main.is_file() and main != path and shape_of(main)[0] == "code" else path
            doc = read_code_session(folder, wire, report)
        else:
            if shape == "cli_wire" and not context_files(path.parent):
                raise UnrecognisedSource(f"{path}: not read (a Kimi CLI wire log without its context.jsonl)")
            doc = read_cli_session(path, report, self.work_dirs)
        if doc is None:
            report.counts["sessions_without_turns"] += 1
            return
        yield doc


def _primary(session: Session) -> tuple[Path | None, str]:
    """The session's candidate, or None and why the session is not read."""
    if session.kind == "code":
        main = [p for p in session.transcripts if p.parent.name == "main"]
        return (main or sorted(session.transcripts))[0], ""
    if not session.transcripts:
        return None, "a session folder without a transcript (no context.jsonl or agents/*/wire.jsonl)"
    legacy = [p for p in session.transcripts if role_of(p)[1] == "cli_legacy"]
    if legacy:
        return legacy[0], ""
    written = [p for p in session.transcripts if session.read[p][0] > 0]
    if not written:
        return None, "an empty Kimi CLI session (no message yet)"
    current = [p for p in written if p.name == "context.jsonl"]
    return (current or sorted(written, key=rotation))[-1], ""
