"""The `copilot_chat` adapter: VS Code's Copilot Chat sessions, one conversation per session
file (`chatSessions/<id>.json` or `.jsonl`, session.py), its folder from the workspace's
`workspace.json` (else the folder the answers' links resolve against).

The thread id is the session id. VS Code >= 1.109 rewrites a session as `.jsonl` and may leave
the old `.json` beside it: both are read, and `precedence_key` lets the `.jsonl` write the one
document (then the copy updated last). Sessions without a request (a chat panel opened and
left) are no conversation.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from chinvex.models import ConversationDoc
from chinvex.models.sources import AdapterOptions, ParsedDoc, ParseReport, SkippedSource, SourceCandidate
from chinvex.timeutil import to_utc
from chinvex_adapters.kit.jsonl import partial_tail_warning
from chinvex_adapters.kit.sessionfile import SessionFileAdapter, conversation
from chinvex_adapters.kit.text import as_str
from chinvex_adapters.kit.walk import WalkEntry

from .layout import ChatLister, Workspace, read_workspace, workspace_dir
from .parts import base_folder
from .requests import RequestTurns
from .session import LABEL, Loaded, load, sniff

MAX_WARNINGS = 10
MAX_CACHED_WORKSPACES = 256


class CopilotChatAdapter(SessionFileAdapter):
    name = "copilot_chat"
    label = LABEL
    parser_version = "copilot_chat_v1"

    def __init__(self) -> None:
        self._workspaces: dict[Path, Workspace] = {}

    # -- enumeration -----------------------------------------------------------------------
    def enumerate(self, root: Path, options: AdapterOptions) -> Iterator[SourceCandidate | SkippedSource]:
        root_str = str(Path(root).expanduser().absolute())
        for found in ChatLister(Path(root_str), options.excludes).found():
            if found.skip is not None:
                yield SkippedSource(str(found.path), self.source_type, found.skip, found.detail)
                continue
            yield SourceCandidate(source_uri=str(found.path), source_type=self.source_type,
                                  adapter=self.name, root=root_str, path=found.path,
                                  size_bytes=found.size_bytes, mtime_ns=found.mtime_ns)

    def accepts(self, rel: str, entry: WalkEntry) -> bool | str:
        if entry.path.name.endswith((".json", ".jsonl")):
            return True
        return "not a chat session (sessions are <id>.json or <id>.jsonl)"

    # -- routing by content ----------------------------------------------------------------
    def sniff(self, path: Path) -> str | None:
        return sniff(path)

    @staticmethod
    def precedence_key(doc: ParsedDoc) -> tuple[Any, ...]:
        """Of a session's `.json` and `.jsonl`: the log, then the copy updated last, then the
        one with more turns."""
        updated = doc.updated_at.timestamp() if doc.updated_at else float("-inf")
        turns = len(doc.turns) if isinstance(doc, ConversationDoc) else 0
        return (doc.source_uri.endswith(".jsonl"), updated, turns, doc.source_uri)

    # -- reading ---------------------------------------------------------------------------
    def _workspace(self, path: Path) -> Workspace:
        folder = workspace_dir(path)
        if folder is None:
            return Workspace()
        if folder not in self._workspaces:
            if len(self._workspaces) >= MAX_CACHED_WORKSPACES:
                self._workspaces.clear()
            self._workspaces[folder] = read_workspace(folder)
        return self._workspaces[folder]

    def parse_file(self, path: Path, report: ParseReport, candidate: SourceCandidate,
                   previous_state: dict[str, Any] | None) -> Iterator[ConversationDoc]:
        loaded = load(path, report.counts)
        data = loaded.data
        requests = [r for r in data["requests"] if isinstance(r, dict)]
        report.counts["requests_invalid"] += len(data["requests"]) - len(requests)
        workspace = self._workspace(path)
        cwd = workspace.folder or base_folder(requests)
        built = RequestTurns(report.counts, cwd)
        created = to_utc(data.get("creationDate"))
        for request in requests:
            try:
                built.feed(request, created)
            except Exception as exc:  # noqa: BLE001 - one odd request must not cost the session
                report.counts["requests_failed"] += 1
                if len(report.warnings) < MAX_WARNINGS:
                    report.warnings.append(f"{path}: request {as_str(request.get('requestId')) or '?'} "
                                           f"skipped ({type(exc).__name__})")
        if loaded.partial_tail:
            report.warnings.append(partial_tail_warning(path))
        turns = built.b.finish(created)
        if not any(t.role in ("user", "assistant") for t in turns):
            report.counts["sessions_empty"] += 1
            return
        thread_id = as_str(data.get("sessionId")) or path.name.split(".", 1)[0]
        title = as_str(data.get("customTitle")) or as_str(data.get("computedTitle"))
        model = built.b.models.most_common(1)[0][0] if built.b.models else None
        metadata = _metadata(path, loaded, built, workspace, cwd)
        doc = conversation(agent=self.name, source_uri=str(path), thread_id=thread_id, turns=turns,
                           title=title, cwd=cwd, model=model, models=list(built.b.models),
                           metadata=metadata)
        if doc is not None:
            yield doc


def _metadata(path: Path, loaded: Loaded, built: RequestTurns, workspace: Workspace,
              cwd: str | None) -> dict[str, Any]:
    """What the session says beside its turns."""
    data = loaded.data
    meta: dict[str, Any] = {
        "session_id": as_str(data.get("sessionId")),
        "file_format": "jsonl mutation log (VS Code >= 1.109)" if loaded.form == "jsonl"
        else "json (VS Code < 1.109)",
        "schema_version": data.get("version") if isinstance(data.get("version"), int) else None,
        "initial_location": as_str(data.get("initialLocation")),
        "requests": len(data["requests"]),
        "created_at_ms": data.get("creationDate") if isinstance(data.get("creationDate"), int) else None,
    }
    if built.versions:
        meta["copilot_chat_version"] = built.versions[-1]
        meta["copilot_chat_versions"] = built.versions
    if built.participants:
        meta["participants"] = built.participants
    if built.modes:
        meta["modes"] = built.modes
    input_state = data.get("inputState") if isinstance(data.get("inputState"), dict) else {}
    mode = input_state.get("mode")
    if isinstance(mode, dict) and as_str(mode.get("id")):
        meta["input_mode"] = mode["id"]
    selected = input_state.get("selectedModel")
    if isinstance(selected, dict) and as_str(selected.get("identifier")):
        meta["selected_model"] = selected["identifier"]
    states = {k: v for k, v in built.states.items() if k != "complete"}
    if states:
        meta["response_states"] = states
    if built.tokens:
        meta["tokens"] = dict(built.tokens)
    if data.get("hasPendingEdits") is True:
        meta["has_pending_edits"] = True
    pending = data.get("pendingRequests")
    if isinstance(pending, list) and pending:
        meta["pending_requests"] = len(pending)
    folder = workspace_dir(path)
    if folder is not None:
        meta["workspace_id"] = folder.name
    if workspace.uri:
        meta["workspace_uri"] = workspace.uri
        meta["workspace_kind"] = workspace.kind
    if workspace.remote:
        meta["remote"] = workspace.remote
    if cwd and not workspace.folder:
        meta["cwd_from"] = "markdown baseUri"
    elif cwd:
        meta["cwd_from"] = "workspace.json"
    if path.parent.name == "emptyWindowChatSessions":
        meta["empty_window"] = True
    if loaded.form == "jsonl":
        meta["log_entries"] = loaded.entries
        if loaded.partial_tail:
            meta["partial_last_line"] = True
    return {k: v for k, v in meta.items() if v is not None}
