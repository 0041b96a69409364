"""A Kimi CLI session (the Python `kimi`, `~/.kimi/sessions/<md5(work dir)>/<uuid>/`): the
messages are in `context.jsonl` (OpenAI-style roles, `tool_calls` with JSON-string arguments,
`think` parts); times are not there but in `wire.jsonl`, the UI event log (`TurnBegin` /
`SteerInput` carry the user's input, `ToolCall` / `ToolResult` their call id), so a user
message takes the time of the matching input and a call or result the time of its event; the
other turns take their neighbour's. Without a wire log, the context file's mtime.

`/clear` and checkpoint reverts move the context to `context_<n>.jsonl` and start a new one:
the older files are read first, each without the lines it shares at its start with the one
before, so the conversation keeps everything said. Bookkeeping lines (`_system_prompt`,
`_checkpoint`, `_usage`) and the `<system>CHECKPOINT n</system>` markers are not turns.
Sub-agents (`subagents/<id>/context.jsonl`) join the conversation by time, as `sidechain`.
The work directory comes from `kimi.json` (the session folder's name is an md5 of it).
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from chinvex.models import ConversationDoc, Turn
from chinvex.models.sources import ParseReport, SourceError
from chinvex.timeutil import to_utc
from chinvex_adapters.kit.edits import MAX_EDIT_CHARS, FileEdit, resolve
from chinvex_adapters.kit.sessionfile import conversation
from chinvex_adapters.kit.text import as_str
from chinvex_adapters.kit.turns import ConversationBuilder

from .common import Logs, injected, mark_sidechain, merge, parts_of, read_side, tool_args
from .layout import context_files, rotation

_CHECKPOINT = re.compile(r"^\s*<system>CHECKPOINT \d+</system>\s*$")
LOOKAHEAD = 50


@dataclass
class WireTimes:
    """What the UI event log tells about when things happened."""

    inputs: list[tuple[str, datetime | None]] = field(default_factory=list)
    calls: dict[str, datetime | None] = field(default_factory=dict)
    results: dict[str, datetime | None] = field(default_factory=dict)
    protocol: str | None = None
    events: int = 0


def wire_times(path: Path, logs: Logs) -> WireTimes:
    times = WireTimes()
    if not path.is_file():
        return times
    for line in logs.lines(path):
        data = line.data
        if data.get("type") == "metadata":
            times.protocol = as_str(data.get("protocol_version"))
            continue
        message = data.get("message")
        if not isinstance(message, dict) or not isinstance(message.get("payload"), dict):
            continue
        times.events += 1
        kind, payload, ts = message.get("type"), message["payload"], to_utc(data.get("timestamp"))
        if kind in ("TurnBegin", "SteerInput"):
            times.inputs.append((parts_of(payload.get("user_input"), Counter()).words.strip(), ts))
        elif kind == "ToolCall" and as_str(payload.get("id")):
            times.calls.setdefault(payload["id"], ts)
        elif kind == "ToolResult" and as_str(payload.get("tool_call_id")):
            times.results.setdefault(payload["tool_call_id"], ts)
    return times


class ContextReader:
    """context.jsonl records as turns, timed by the wire log."""

    def __init__(self, counts: Counter[str], cwd: str | None, times: WireTimes, prefix: str = "") -> None:
        self.counts = counts
        self.times = times
        self.prefix = prefix
        self.b = ConversationBuilder(counts, cwd=cwd)
        self.token_count: int | None = None
        self.checkpoints = 0
        self._input = 0
        self._previous_role: str | None = None

    def feed(self, data: dict[str, Any], tid: str, older: str | None) -> None:
        role = data.get("role")
        if role == "_checkpoint":
            self.checkpoints += 1
        elif role == "_usage":
            self.token_count = data.get("token_count") if isinstance(data.get("token_count"), int) else None
        elif role == "_system_prompt":
            self.counts["system_prompts_left_out"] += 1
        elif role == "user":
            self._user(data, tid, older)
        elif role == "assistant":
            self._assistant(data, tid)
        elif role == "tool":
            self._tool(data)
        elif role == "system":
            words = parts_of(data.get("content"), self.counts).words
            self.b.message("system", words, turn_id=self.prefix + tid)
        else:
            self.counts["records_other_role"] += 1
        if isinstance(role, str) and not role.startswith("_"):
            self._previous_role = role

    def _when(self, text: str) -> datetime | None:
        """The time of the user input this message is (the next one with its words)."""
        wanted = text.strip()
        inputs = self.times.inputs
        for i in range(self._input, min(len(inputs), self._input + LOOKAHEAD)):
            if inputs[i][0] == wanted:
                self._input = i + 1
                return inputs[i][1]
        return None

    def _user(self, data: dict[str, Any], tid: str, older: str | None) -> None:
        parts = parts_of(data.get("content"), self.counts)
        text = parts.words
        if _CHECKPOINT.match(text) and not parts.media:
            self.counts["checkpoint_markers"] += 1
            return
        if injected(text):
            self.counts["injections_left_out"] += 1
            return
        meta: dict[str, Any] = {}
        if not text.strip() and parts.media and self._previous_role == "tool":
            meta["tool_output_media"] = True  # a tool's images, sent as a user message
        if older:
            meta["context_file"] = older
        self.b.message("user", text, ts=self._when(text) if text else None, turn_id=self.prefix + tid,
                       attachments=parts.media, meta=meta)

    def _assistant(self, data: dict[str, Any], tid: str) -> None:
        parts = parts_of(data.get("content"), self.counts)
        for n, think in enumerate(parts.think):
            self.b.thinking(think, turn_id=f"{self.prefix}{tid}.t{n}")
        self.b.message("assistant", parts.words, turn_id=self.prefix + tid, attachments=parts.media)
        for call in data.get("tool_calls") or ():
            if not isinstance(call, dict):
                continue
            function = call.get("function") if isinstance(call.get("function"), dict) else {}
            call_id = as_str(call.get("id"))
            name, args = as_str(function.get("name")), tool_args(function.get("arguments"))
            self.b.tool_call(name, args, ts=self.times.calls.get(call_id or ""), call_id=call_id,
                             edits=self._appended(name, args),
                             turn_id=f"{self.prefix}{call_id}:tool" if self.prefix and call_id else None)

    def _appended(self, name: str | None, args: Any) -> list[FileEdit] | None:
        """`WriteFile` with `mode: append` adds its content at the end of the file: an edit,
        not the file's whole content (the kit reads any WriteFile as a write)."""
        if name != "WriteFile" or not isinstance(args, dict) or args.get("mode") != "append":
            return None
        path, content = as_str(args.get("path")), args.get("content")
        if not path or not isinstance(content, str):
            return None
        return [FileEdit(path=path, op="edit", new_text=content[:MAX_EDIT_CHARS],
                         abs_path=resolve(path, self.b.cwd), truncated=len(content) > MAX_EDIT_CHARS)]

    def _tool(self, data: dict[str, Any]) -> None:
        parts = parts_of(data.get("content"), self.counts)
        first = parts.text[0].strip() if parts.text else ""
        failed = first.startswith("<system>ERROR") or first.startswith("ERROR:")
        call_id = as_str(data.get("tool_call_id"))
        tid = f"{self.prefix}{call_id}" if self.prefix and call_id else None
        self.b.tool_result(parts.words, call_id=call_id, ts=self.times.results.get(call_id or ""),
                           is_error=failed, turn_id=tid)


def read_contexts(files: list[Path], reader: ContextReader, logs: Logs) -> None:
    """Every context file, oldest first, each without the lines it repeats from the previous."""
    counts = logs.counts
    previous: list[dict[str, Any]] = []
    for path in files:
        records = [line.data for line in logs.lines(path)]
        same = 0
        while same < min(len(records), len(previous)) and records[same] == previous[same]:
            same += 1
        counts["context_lines_repeated"] += same
        older = path.name if rotation(path) else None
        for n, data in enumerate(records[same:], start=same):
            reader.feed(data, f"{rotation(path)}:{n}" if older else f"{n}", older)
        previous = records


class WorkDirs:
    """Kimi CLI's `kimi.json`: the work directory of each md5-named sessions folder, read once
    per version of the file."""

    def __init__(self) -> None:
        self._cache: dict[str, tuple[int, dict[str, str]]] = {}

    def lookup(self, share: Path, bucket: str, session_id: str) -> str | None:
        path = share / "kimi.json"
        try:
            mtime = path.stat().st_mtime_ns
        except OSError:
            return None
        cached = self._cache.get(str(path))
        if cached is None or cached[0] != mtime:
            cached = (mtime, _work_dirs(path))
            self._cache[str(path)] = cached
        return cached[1].get(f"session:{session_id}") or cached[1].get(bucket)


def _work_dirs(path: Path) -> dict[str, str]:
    data = read_side(path, Counter(), "kimi_json")
    found: dict[str, str] = {}
    for entry in data.get("work_dirs") or ():
        work_dir = as_str(entry.get("path")) if isinstance(entry, dict) else None
        if work_dir:
            digest = hashlib.md5(work_dir.encode("utf-8")).hexdigest()  # noqa: S324 - Kimi's folder name
            kaos = as_str(entry.get("kaos"))
            found[digest if kaos in (None, "local") else f"{kaos}_{digest}"] = work_dir
    mapping = data.get("session_to_workdir")
    for session_id, work_dir in (mapping.items() if isinstance(mapping, dict) else ()):
        if isinstance(work_dir, str):
            found[f"session:{session_id}"] = work_dir
    return found


@dataclass
class CliSession:
    folder: Path
    contexts: list[Path]
    thread_id: str
    legacy: bool = False


def cli_session(path: Path) -> CliSession:
    """The session a Kimi CLI file belongs to (a flat `<uuid>.jsonl` is a session alone)."""
    if path.name.startswith("context") or path.name == "wire.jsonl":
        return CliSession(path.parent, context_files(path.parent), path.parent.name)
    return CliSession(path.parent, [path], path.name[: -len(".jsonl")], legacy=True)


def _subagents(session: CliSession, logs: Logs,
               cwd: str | None) -> tuple[list[list[Turn]], dict[str, Any]]:
    counts = logs.counts
    subs: list[list[Turn]] = []
    info: dict[str, Any] = {}
    for context in sorted(session.folder.glob("subagents/*/context.jsonl")) if not session.legacy else ():
        agent_id = context.parent.name
        meta = read_side(context.parent / "meta.json", counts, "subagent_meta")
        reader = ContextReader(counts, cwd, wire_times(context.parent / "wire.jsonl", logs), f"{agent_id}/")
        read_contexts([context], reader, logs)
        fallback = to_utc(meta.get("created_at"))
        subs.append(mark_sidechain(reader.b.finish(fallback), agent_id))
        info[agent_id] = {k: meta.get(k) for k in ("subagent_type", "description", "status") if meta.get(k)}
    return subs, info


def read_cli_session(path: Path, report: ParseReport, work_dirs: WorkDirs) -> ConversationDoc | None:
    counts = report.counts
    logs = Logs(counts)
    session = cli_session(path)
    bucket = session.folder if session.legacy else session.folder.parent  # sessions/<md5>/
    cwd = work_dirs.lookup(bucket.parent.parent, bucket.name, session.thread_id) \
        if bucket.parent.name == "sessions" else None
    state = {} if session.legacy else read_side(session.folder / "state.json", counts, "state_json")
    try:
        times = wire_times(session.folder / "wire.jsonl", logs) if not session.legacy else WireTimes()
        reader = ContextReader(counts, cwd, times)
        read_contexts(session.contexts, reader, logs)
        newest = max((p.stat().st_mtime for p in session.contexts), default=path.stat().st_mtime)
        fallback = datetime.fromtimestamp(newest, timezone.utc)
        subs, sub_info = _subagents(session, logs, cwd)
    except OSError as exc:
        raise SourceError(f"{path}: cannot read: {exc.strerror or exc}") from None
    logs.report_cut(report)
    turns = merge(reader.b.finish(fallback), subs)
    meta: dict[str, Any] = {"layout": "kimi_cli_legacy" if session.legacy else "kimi_cli",
                            "wire_protocol": times.protocol, "context_tokens": reader.token_count,
                            "checkpoints": reader.checkpoints or None,
                            "older_context_files": sum(1 for p in session.contexts if rotation(p)) or None,
                            "times_from": "wire.jsonl" if times.events else "file mtime (no wire.jsonl)",
                            "sub_agents": sub_info or None,
                            "archived": True if state.get("archived") else None}
    if isinstance(state.get("todos"), list):
        meta["todos"] = state["todos"][:50]
    return conversation(agent="kimi", source_uri=str(path), thread_id=session.thread_id, turns=turns,
                        title=as_str(state.get("custom_title")), cwd=cwd,
                        metadata={k: v for k, v in meta.items() if v is not None})
