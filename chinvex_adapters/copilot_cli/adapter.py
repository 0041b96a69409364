"""The `copilot_cli` adapter: GitHub Copilot CLI sessions, one conversation per session.

Three layouts (layout.py): `session-state/<id>/events.jsonl` with its `workspace.yaml`, the
flat `session-state/<id>.jsonl`, and the legacy `history-session-state/session_<id>_<ms>.json`.
The thread id is the session id, so a legacy session that a newer CLI migrated into
`session-state/`, or a store copied between `~/.copilot` and the old XDG folder, is ONE
document: `precedence_key` lets the event log win over the legacy file, then the copy updated
last. Title: `workspace.yaml`'s `name`, else its `summary`, else a `session.title_changed`,
else the first prompt; folder: the session's git context, else `workspace.yaml`'s `cwd`.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from chinvex.models import ConversationDoc
from chinvex.models.sources import (
    AdapterOptions,
    ParsedDoc,
    ParseReport,
    SkippedSource,
    SourceCandidate,
    SourceError,
    UnrecognisedSource,
)
from chinvex.timeutil import to_utc
from chinvex_adapters.kit.jsonfile import expect_object, read_json
from chinvex_adapters.kit.jsonl import partial_tail_warning, read_jsonl
from chinvex_adapters.kit.sessionfile import SessionFileAdapter, conversation
from chinvex_adapters.kit.sniff import first_objects, head_bytes, json_shape
from chinvex_adapters.kit.text import as_str
from chinvex_adapters.kit.turns import ConversationBuilder
from chinvex_adapters.kit.walk import WalkEntry

from .common import read_workspace
from .events import EventTurns, is_event, is_session_start
from .layout import EVENTS, WORKSPACE, StoreLister, folder_id, legacy_id
from .legacy import from_chat_messages, from_timeline, tool_outputs

LABEL = "Copilot CLI session"
LEGACY_KEYS = {"sessionId", "startTime"}
LAYOUT_RANK = {"events": 2, "flat": 1, "legacy": 0}
MAX_WARNINGS = 10


def sniff(path: Path) -> str | None:
    """None when the file is a Copilot CLI session (event log or legacy JSON), else why not."""
    head = head_bytes(path, 64 * 1024)
    if not head.strip():
        return "empty file"
    if head.lstrip().startswith(b"{\n") or path.suffix == ".json":
        shape = json_shape(head)
        if shape.kind == "object" and LEGACY_KEYS <= set(shape.keys) and (
                {"chatMessages", "timeline"} & set(shape.keys)):
            return None
        if shape.kind in ("object", "array") and path.suffix == ".json":
            return "no sessionId/startTime with chatMessages or timeline"
    records = first_objects(path, 3)
    if not records:
        return "no JSON object"
    if not all(is_event(r) for r in records):
        return "records are not Copilot CLI events ({type, data, id, timestamp, parentId})"
    if records[0].get("type") == "session.start" and not is_session_start(records[0]):
        return "session.start without Copilot's producer or version"
    return None


class CopilotCliAdapter(SessionFileAdapter):
    name = "copilot_cli"
    label = LABEL
    parser_version = "copilot_cli_v1"

    # -- enumeration -----------------------------------------------------------------------
    def enumerate(self, root: Path, options: AdapterOptions) -> Iterator[SourceCandidate | SkippedSource]:
        root_str = str(Path(root).expanduser().absolute())
        for found in StoreLister(Path(root_str), options.excludes).found():
            if found.skip is not None:
                yield SkippedSource(str(found.path), self.source_type, found.skip, found.detail)
                continue
            yield SourceCandidate(source_uri=str(found.path), source_type=self.source_type,
                                  adapter=self.name, root=root_str, path=found.path,
                                  size_bytes=found.size_bytes, mtime_ns=found.mtime_ns,
                                  extra={"layout": found.layout})

    def accepts(self, rel: str, entry: WalkEntry) -> bool | str:
        name = entry.path.name
        if name.endswith(".jsonl") or (name.endswith(".json") and legacy_id(entry.path)):
            return True
        return "not a Copilot CLI session (events.jsonl, <id>.jsonl or session_<id>_<ms>.json)"

    # -- routing by content ----------------------------------------------------------------
    def sniff(self, path: Path) -> str | None:
        return sniff(path)

    @staticmethod
    def precedence_key(doc: ParsedDoc) -> tuple[Any, ...]:
        """Of two files of one session: the event log over the legacy file, then the copy
        updated last, then the one with more turns."""
        layout = doc.metadata.get("layout") if isinstance(doc, ConversationDoc) else None
        updated = doc.updated_at.timestamp() if doc.updated_at else float("-inf")
        turns = len(doc.turns) if isinstance(doc, ConversationDoc) else 0
        return (LAYOUT_RANK.get(str(layout), -1), updated, turns, doc.source_uri)

    # -- reading ---------------------------------------------------------------------------
    def parse_file(self, path: Path, report: ParseReport, candidate: SourceCandidate,
                   previous_state: dict[str, Any] | None) -> Iterator[ConversationDoc]:
        if path.suffix == ".json":
            doc = self._legacy(path, report)
        else:
            doc = self._events(path, report)
        if doc is None:
            report.counts["sessions_without_messages"] += 1
            return
        yield doc

    def _events(self, path: Path, report: ParseReport) -> ConversationDoc | None:
        try:
            read = read_jsonl(path, report.counts)
        except OSError as exc:
            raise SourceError(f"{path}: cannot read: {exc.strerror or exc}") from None
        events = [line.data for line in read.lines if is_event(line.data)]
        report.counts["lines_not_events"] += len(read.lines) - len(events)
        if not events:
            raise UnrecognisedSource(f"{path}: not {_a(LABEL)} (no Copilot CLI event in it)")
        built = EventTurns(report.counts)
        for event in events:
            try:
                built.feed(event)
            except Exception as exc:  # noqa: BLE001 - one odd event must not cost the session
                report.counts["events_failed"] += 1
                if len(report.warnings) < MAX_WARNINGS:
                    report.warnings.append(f"{path}: event {as_str(event.get('id')) or '?'} "
                                           f"({event.get('type')}) skipped ({type(exc).__name__})")
        if read.partial_tail:
            report.warnings.append(partial_tail_warning(path))
        workspace = read_workspace(path.parent / WORKSPACE, report.counts) if path.name == EVENTS else {}
        facts = built.facts
        cwd = built.cwd or as_str(workspace.get("cwd"))
        built.b.cwd = built.b.cwd or cwd
        turns = built.b.finish(to_utc(facts.get("startTime")))
        if not any(t.role in ("user", "assistant") for t in turns):
            return None
        thread_id = as_str(facts.get("sessionId")) or as_str(workspace.get("id")) or folder_id(path)
        title = as_str(workspace.get("name")) or as_str(workspace.get("summary")) or built.title
        model = built.b.models.most_common(1)[0][0] if built.b.models else built.model
        metadata = _event_metadata(path, built, workspace, read.partial_tail)
        return conversation(agent=self.name, source_uri=str(path), thread_id=thread_id, turns=turns,
                            title=title, cwd=cwd, model=model, models=list(built.b.models),
                            metadata=metadata)

    def _legacy(self, path: Path, report: ParseReport) -> ConversationDoc | None:
        data = expect_object(read_json(path, LABEL), path, LABEL, "sessionId")
        timeline, messages = data.get("timeline"), data.get("chatMessages")
        if not isinstance(timeline, list) and not isinstance(messages, list):
            raise UnrecognisedSource(f"{path}: not {_a(LABEL)} (no timeline or chatMessages list)")
        timeline = timeline if isinstance(timeline, list) else []
        messages = messages if isinstance(messages, list) else []
        b = ConversationBuilder(report.counts)
        if timeline:
            from_timeline(b, timeline, tool_outputs(messages), report.counts)
        else:
            from_chat_messages(b, messages, report.counts)
        turns = b.finish(to_utc(data.get("startTime")))
        if not any(t.role in ("user", "assistant") for t in turns):
            return None
        thread_id = as_str(data.get("sessionId")) or legacy_id(path) or path.stem
        metadata = {"layout": "legacy", "file_format": "history-session-state JSON (CLI <= 0.0.341)",
                    "session_id": thread_id, "started_at": as_str(data.get("startTime")),
                    "timeline_entries": len(timeline), "chat_messages": len(messages),
                    "read_from": "timeline" if timeline else "chatMessages"}
        return conversation(agent=self.name, source_uri=str(path), thread_id=thread_id, turns=turns,
                            metadata=metadata)


def _a(noun: str) -> str:
    return f"{'an' if noun[:1].lower() in 'aeiou' else 'a'} {noun}"


def _event_metadata(path: Path, built: EventTurns, workspace: dict[str, Any],
                    partial_tail: bool) -> dict[str, Any]:
    facts, context = built.facts, built.context
    meta: dict[str, Any] = {
        "layout": "events" if path.name == EVENTS else "flat",
        "file_format": "session-state events.jsonl" if path.name == EVENTS else "session-state <id>.jsonl",
        "session_id": as_str(facts.get("sessionId")),
        "copilot_version": as_str(facts.get("copilotVersion")),
        "producer": as_str(facts.get("producer")),
        "schema_version": facts.get("version"),
        "started_at": as_str(facts.get("startTime")),
    }
    if as_str(facts.get("vscodeVersion")):
        meta["vscode_version"] = facts["vscodeVersion"]
    if as_str(facts.get("reasoningEffort")):
        meta["reasoning_effort"] = facts["reasoningEffort"]
    git = {k: context[k] for k in ("gitRoot", "branch", "repository", "headCommit", "baseCommit",
                                   "hostType") if as_str(context.get(k))}
    if git:
        meta["git"] = git
    if facts.get("other_cwds"):
        meta["other_cwds"] = list(dict.fromkeys(facts["other_cwds"]))[:20]
    if workspace:
        meta["workspace"] = workspace
    if partial_tail:
        meta["partial_last_line"] = True
    meta.update(built.summary())
    return {k: v for k, v in meta.items() if v is not None}


__all__ = ["CopilotCliAdapter", "sniff"]
