"""One OpenCode session as a conversation, whichever store holds it.

The JSON files, the database's `data` columns and `opencode export` hold the same objects
(Session.Info, MessageV2 messages and their parts), so one reader builds the turns: a user
message's text parts are its words (synthetic ones, injected by OpenCode, are left out) and its
file parts attachments; an assistant message gives a turn per text part, its reasoning as
thinking, and each tool part as a call with its output (call and result live in the same part).
Times are the ones inside the objects (message `time.created`, part `time.start`), never the
database's row times, which a migration sets to the moment it ran.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from typing import Any
from urllib.parse import unquote, urlparse

from chinvex.models import Attachment, ConversationDoc, Turn
from chinvex.timeutil import iso_z, to_utc
from chinvex_adapters.kit.sessionfile import conversation
from chinvex_adapters.kit.text import as_str, clean_text
from chinvex_adapters.kit.turns import ConversationBuilder

AGENT = "opencode"
DEFAULT_TITLE = re.compile(r"^(?:New session|Child session) - \d{4}-\d\d-\d\dT")
"""The title OpenCode gives a session until its title agent names it."""
SKIPPED_PARTS = frozenset({"step-start", "step-finish", "snapshot"})
"""Per-step bookkeeping (snapshots, token counts already on the message)."""
MAX_LISTED = 200

Message = tuple[dict[str, Any], list[dict[str, Any]]]


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _s(value: Any) -> str | None:
    """A non-empty string as it is: for ids, names and texts the turn builder cleans itself
    (as_str cleans too, and this runs for every part of a session)."""
    return value if isinstance(value, str) and value else None


def _num(value: Any) -> int | float | None:
    return value if isinstance(value, int | float) and not isinstance(value, bool) else None


def attachment(part: dict[str, Any]) -> Attachment | None:
    """A file part as a reference: its name, path and MIME type, never the `data:` URL bytes
    nor the mentioned file's text."""
    mime = as_str(part.get("mime"))
    url = as_str(part.get("url"))
    source = _dict(part.get("source"))
    path = as_str(source.get("path"))
    uri = url if url and not url.startswith("data:") else None
    if path is None and uri and uri.startswith("file://"):
        path = unquote(urlparse(uri).path)
    name = as_str(part.get("filename")) or (path.rsplit("/", 1)[-1] if path else None)
    if not (name or path or uri):
        return None
    kind = "image" if mime and mime.startswith("image/") else "file"
    return Attachment(kind=kind, name=name, path=path, uri=uri, mime_type=mime)


class SessionReader:
    """The turns and facts of one session, fed message by message (with its parts)."""

    def __init__(self, info: dict[str, Any], counts: Counter[str]) -> None:
        self.info = info
        self.counts = counts
        self.cwd = as_str(info.get("directory"))
        self.b = ConversationBuilder(counts, cwd=self.cwd)
        self.agents: dict[str, None] = {}
        self.children: dict[str, None] = {}
        self.patched: dict[str, None] = {}
        self.tokens: Counter[str] = Counter()
        self.cost = 0.0
        self.errors: Counter[str] = Counter()
        self.messages = 0
        self.parts = 0

    # -- messages ------------------------------------------------------------------------
    def add(self, message: dict[str, Any], parts: list[dict[str, Any]]) -> None:
        self.messages += 1
        self.parts += len(parts)
        role = message.get("role")
        agent = _s(message.get("agent")) or _s(message.get("mode"))
        if agent:
            self.agents.setdefault(agent, None)
        if role == "user":
            self._user(message, parts, agent)
        elif role == "assistant":
            self._assistant(message, parts, agent)
        else:
            self.counts["messages_unknown_role"] += 1

    def _user(self, message: dict[str, Any], parts: list[dict[str, Any]], agent: str | None) -> None:
        created = _dict(message.get("time")).get("created")
        texts: list[str] = []
        files: list[Attachment] = []
        meta: dict[str, Any] = {"agent": agent} if agent else {}
        later: list[dict[str, Any]] = []
        for part in parts:
            kind = part.get("type")
            if kind == "text":
                text = self._text_of(part)
                if text:
                    texts.append(text)
            elif kind == "file":
                self._attach(files, part)
            elif kind == "subtask":
                later.append(part)  # after the prompt that asked for it
            else:
                self._other(part, meta, created)
        if texts or files:
            self.b.message("user", "\n\n".join(texts), ts=created, turn_id=_s(message.get("id")),
                           meta=meta, attachments=files)
        else:
            self.counts["user_messages_without_text"] += 1
        for part in later:
            self._other(part, meta, created)

    def _assistant(self, message: dict[str, Any], parts: list[dict[str, Any]], agent: str | None) -> None:
        times = _dict(message.get("time"))
        created = times.get("created")
        model = self._model(message)
        self._usage(message)
        if self.cwd is None:  # a session without its directory: the first reply's working folder
            self.cwd = as_str(_dict(message.get("path")).get("cwd"))
            self.b.cwd = self.cwd
        meta: dict[str, Any] = {"agent": agent} if agent else {}
        if message.get("summary") is True:
            meta["compaction_summary"] = True
        last: Turn | None = None
        for part in parts:
            kind = part.get("type")
            pid = _s(part.get("id"))
            start = _dict(part.get("time")).get("start") or created
            if kind == "text":
                text = self._text_of(part)
                if text:
                    last = self.b.message("assistant", text, ts=start, turn_id=pid, model=model, meta=meta) or last
            elif kind == "reasoning":
                last = self.b.thinking(_s(part.get("text")), ts=start, turn_id=pid, model=model) or last
            elif kind == "tool":
                last = self._tool(part, created)
            elif kind == "file":
                self._file_turn(part, last, created, model)
            else:
                self._other(part, meta, created)
        self._error(message, times)

    def _model(self, message: dict[str, Any]) -> str | None:
        model = _s(message.get("modelID"))
        provider = _s(message.get("providerID"))
        return f"{provider}/{model}" if model and provider else model

    def _usage(self, message: dict[str, Any]) -> None:
        cost = _num(message.get("cost"))
        if cost:
            self.cost += cost
        tokens = _dict(message.get("tokens"))
        for key in ("input", "output", "reasoning"):
            value = _num(tokens.get(key))
            if value:
                self.tokens[key] += int(value)
        cache = _dict(tokens.get("cache"))
        for key in ("read", "write"):
            value = _num(cache.get(key))
            if value:
                self.tokens[f"cache_{key}"] += int(value)

    def _error(self, message: dict[str, Any], times: dict[str, Any]) -> None:
        """A failed or aborted reply (APIError, MessageAbortedError, ...) as one system line."""
        error = _dict(message.get("error"))
        if not error:
            return
        name = as_str(error.get("name")) or "Error"
        detail = as_str(_dict(error.get("data")).get("message")) or ""
        self.errors[name] += 1
        mid = as_str(message.get("id")) or "message"
        self.b.message("system", f"{name}: {detail}".rstrip(": "), ts=times.get("completed") or times.get("created"),
                       turn_id=f"{mid}:error", meta={"error": name})

    # -- parts ---------------------------------------------------------------------------
    def _text_of(self, part: dict[str, Any]) -> str | None:
        if part.get("synthetic") is True:
            self.counts["synthetic_text_left_out"] += 1
            return None
        if part.get("ignored") is True:
            self.counts["ignored_text_left_out"] += 1
            return None
        return _s(part.get("text"))

    def _tool(self, part: dict[str, Any], created: Any) -> Turn:
        state = _dict(part.get("state"))
        status = _s(state.get("status"))
        args: Any = state.get("input")
        if not args and isinstance(state.get("raw"), str):
            args = state["raw"]
        output: Any = None
        is_error = False
        if status == "completed":
            output = state.get("output") if state.get("output") is not None else ""
        elif status == "error":
            output, is_error = state.get("error") or "error", True
        else:
            self.counts["tool_calls_unfinished"] += 1
        meta: dict[str, Any] = {}
        title = _s(state.get("title"))
        if title:
            meta["title"] = title
        if _dict(state.get("time")).get("compacted"):
            meta["output_compacted"] = True
        child = as_str(_dict(state.get("metadata")).get("sessionId"))
        if child:
            meta["child_session_id"] = child
            self.children.setdefault(child, None)
        start = _dict(state.get("time")).get("start") or created
        turn = self.b.tool_call(_s(part.get("tool")), args, ts=start, call_id=_s(part.get("callID")),
                                turn_id=_s(part.get("id")), output=output, is_error=is_error,
                                status=status, meta=meta)
        for item in state.get("attachments") or ():
            if isinstance(item, dict):
                self._attach(turn.attachments, item)
        return turn

    def _attach(self, into: list[Attachment], part: dict[str, Any]) -> None:
        found = attachment(part)
        if found is not None:
            into.append(found)
            self.counts["attachments"] += 1

    def _file_turn(self, part: dict[str, Any], last: Turn | None, created: Any, model: str | None) -> None:
        """A file the model produced: on its last turn, else a turn of its own."""
        if last is not None:
            self._attach(last.attachments, part)
            return
        files: list[Attachment] = []
        self._attach(files, part)
        if files:
            self.b.message("assistant", "", ts=created, turn_id=as_str(part.get("id")), model=model,
                           attachments=files)

    def _other(self, part: dict[str, Any], meta: dict[str, Any], created: Any) -> None:
        kind = part.get("type")
        if kind in SKIPPED_PARTS:
            return
        if kind == "patch":
            for path in part.get("files") or ():
                if isinstance(path, str):
                    self.patched.setdefault(clean_text(path), None)
        elif kind == "agent":
            name = as_str(part.get("name"))
            if name:
                meta["mentions"] = [*meta.get("mentions", ()), name]
        elif kind == "subtask":
            prompt = as_str(part.get("prompt")) or ""
            head = " ".join(p for p in (as_str(part.get("agent")), as_str(part.get("description"))) if p)
            self.b.message("system", f"Subtask {head}\n{prompt}".strip(), ts=created,
                           turn_id=as_str(part.get("id")), meta={"subtask": True})
        elif kind == "compaction":
            self.counts["compactions"] += 1
        elif kind == "retry":
            self.counts["retries"] += 1
        else:
            self.counts[f"parts_unknown:{str(kind)[:40]}"] += 1

    # -- the document --------------------------------------------------------------------
    def document(self, *, source_uri: str, thread_id: str, store: str,
                 location: dict[str, Any], agent: str = AGENT) -> ConversationDoc | None:
        info = self.info
        times = _dict(info.get("time"))
        turns = self.b.finish(to_utc(times.get("created")))
        title = as_str(info.get("title"))
        meta = self._metadata(store, location)
        if title and DEFAULT_TITLE.match(title):
            meta["default_title"] = title
            title = None
        cwd = self.cwd
        model = self.b.models.most_common(1)[0][0] if self.b.models else None
        return conversation(agent=agent, source_uri=source_uri, thread_id=thread_id, turns=turns,
                            title=title, cwd=cwd, model=model, models=list(self.b.models), metadata=meta)

    def _metadata(self, store: str, location: dict[str, Any]) -> dict[str, Any]:
        info = self.info
        times = _dict(info.get("time"))
        meta: dict[str, Any] = {"store": store, **location, "session_id": info.get("id"),
                                "messages": self.messages, "parts": self.parts}
        for key, name in (("version", "opencode_version"), ("projectID", "project_id"),
                          ("parentID", "parent_session_id"), ("slug", "slug"),
                          ("workspaceID", "workspace_id")):
            value = as_str(info.get(key))
            if value:
                meta[name] = value
        project = _dict(info.get("project"))
        if project:
            meta["project"] = project
        summary = {k: v for k, v in _dict(info.get("summary")).items()
                   if k in ("additions", "deletions", "files") and _num(v) is not None}
        if summary:
            meta["summary"] = summary
        archived = to_utc(times.get("archived"))
        if archived:
            meta["archived_at"] = iso_z(archived)
        if self.agents:
            meta["agents"] = list(self.agents)
        if self.children:
            meta["sub_sessions"] = list(self.children)[:MAX_LISTED]
        if self.patched:
            meta["files_changed"] = list(self.patched)[:MAX_LISTED]
        if self.tokens:
            meta["tokens"] = dict(self.tokens)
        if self.cost:
            meta["cost"] = round(self.cost, 6)
        if self.errors:
            meta["errors"] = dict(self.errors)
        return meta


def build(info: dict[str, Any], messages: Iterable[Message], counts: Counter[str], *, source_uri: str,
          thread_id: str, store: str, location: dict[str, Any], agent: str = AGENT) -> ConversationDoc | None:
    """The conversation of one session (None when it holds no turn); `agent` is "kilo" for a
    store of Kilo Code, the OpenCode fork that keeps OpenCode's schema (layout.agent_of)."""
    reader = SessionReader(info, counts)
    for message, parts in messages:
        reader.add(message, parts)
    return reader.document(source_uri=source_uri, thread_id=thread_id, store=store, location=location,
                           agent=agent)
