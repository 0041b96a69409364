"""A Kimi Code session (`session_<uuid>/`): `state.json` and one `agents/<id>/wire.jsonl` per
agent, the main one and its sub-agents. One conversation; the sub-agents' turns join it by
time, marked `sidechain` with their agent id.

Each wire.jsonl is a journal of operations with a `time` in ms. The user's messages are the
`context.append_message` records (the `turn.prompt` / `turn.steer` that announced them are
used only when no such message follows); the agent's output is in `context.append_loop_event`
records: `content.part` (text, `think`), `tool.call` and `tool.result` (paired by
`toolCallId`), `step.end` (usage). Reminders the agent injects as user messages
(`origin.kind: "injection"`) are left out and counted; a compaction's summary is a system turn.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chinvex.models import ConversationDoc, Turn
from chinvex.models.sources import ParseReport, SourceError
from chinvex_adapters.kit.sessionfile import conversation
from chinvex_adapters.kit.text import as_str
from chinvex_adapters.kit.turns import ConversationBuilder, render_output

from .common import Logs, injected, mark_sidechain, merge, parts_of, read_side, tool_args
from .layout import session_id_of

USAGE_KEYS = ("inputOther", "output", "inputCacheRead", "inputCacheCreation")


@dataclass
class _Run:
    """Consecutive content parts of one kind in one step (a streamed text arrives in pieces)."""

    kind: str
    step: Any
    uuid: str
    ts: Any
    texts: list[str] = field(default_factory=list)


class WireAgent:
    """One agent's wire.jsonl as turns, with the facts the session keeps."""

    def __init__(self, logs: Logs, cwd: str | None, prefix: str = "") -> None:
        self.logs = logs
        self.counts = logs.counts
        self.prefix = prefix
        self.b = ConversationBuilder(self.counts, cwd=cwd)
        self.model: str | None = None
        self.cwd: str | None = None
        self.protocol: str | None = None
        self.profile: str | None = None
        self.usage: Counter[str] = Counter()
        self.finish_reasons: Counter[str] = Counter()
        self.loop = False
        self._pending: list[tuple[str, Any, dict[str, Any]]] = []
        self._run: _Run | None = None

    def read(self, path: Path) -> None:
        lines = self.logs.lines(path)
        self.loop = any(line.data.get("type") == "context.append_loop_event" for line in lines)
        for line in lines:
            self._record(line.line_no, line.data)
        self._flush_run()
        self._flush_pending()

    # -- records ---------------------------------------------------------------------------
    def _record(self, line_no: int, data: dict[str, Any]) -> None:
        kind = data.get("type")
        ts = data.get("time")
        if kind == "context.append_loop_event":
            event = data.get("event")
            if isinstance(event, dict):
                self._loop(event, ts)
        elif kind == "context.append_message":
            message = data.get("message")
            if isinstance(message, dict):
                self._message(message, ts, line_no)
        elif kind in ("turn.prompt", "turn.steer"):
            text = parts_of(data.get("input"), self.counts).words
            origin = data.get("origin") if isinstance(data.get("origin"), dict) else {}
            if text.strip():
                self._pending.append((text, ts, origin))
        elif kind in ("config.update", "profile.bind", "llm.request", "metadata"):
            self._config(data)
        elif kind == "context.apply_compaction":
            self._compaction(data, ts, line_no)
        elif kind in ("turn.cancel", "context.clear", "context.undo", "forked"):
            self.counts[f"wire_{kind}"] += 1
        else:
            self.counts["wire_records_other"] += 1

    def _config(self, data: dict[str, Any]) -> None:
        if data.get("type") == "metadata":
            self.protocol = as_str(data.get("protocol_version"))
            return
        self.model = as_str(data.get("modelAlias")) or as_str(data.get("model")) or self.model
        self.profile = as_str(data.get("profileName")) or self.profile
        disclosure = data.get("environmentDisclosure")
        cwd = disclosure.get("cwd") if isinstance(disclosure, dict) else data.get("cwd")
        self.cwd = as_str(cwd) or self.cwd

    def _compaction(self, data: dict[str, Any], ts: Any, line_no: int) -> None:
        summary = as_str(data.get("summary")) or as_str(data.get("contextSummary"))
        self._flush_run()
        meta = {"compact_summary": True, "tokens_before": data.get("tokensBefore"),
                "tokens_after": data.get("tokensAfter"), "compacted_count": data.get("compactedCount")}
        self.b.message("system", summary, ts=ts, turn_id=f"{self.prefix}c{line_no}",
                       meta={k: v for k, v in meta.items() if v is not None})

    # -- context messages ------------------------------------------------------------------
    def _message(self, message: dict[str, Any], ts: Any, line_no: int) -> None:
        role = message.get("role")
        origin = message.get("origin") if isinstance(message.get("origin"), dict) else {}
        parts = parts_of(message.get("content"), self.counts)
        if role == "user":
            text = parts.words
            if origin.get("kind") == "injection" or injected(text):
                self.counts["injections_left_out"] += 1
                return
            self._drop_pending(text)
            self._user(text, ts, origin, parts.media, f"m{line_no}")
        elif role == "assistant" and not self.loop:
            self._flush_run()
            for n, think in enumerate(parts.think):
                self.b.thinking(think, ts=ts, turn_id=f"{self.prefix}m{line_no}.t{n}", model=self.model)
            self.b.message("assistant", parts.words, ts=ts, turn_id=f"{self.prefix}m{line_no}",
                           attachments=parts.media, model=self.model)
            for call in message.get("toolCalls") or ():
                if isinstance(call, dict):
                    self._call(as_str(call.get("name")), tool_args(call.get("arguments")),
                               as_str(call.get("id")), ts)
        elif role == "tool" and not self.loop:
            self._flush_run()
            self._result(parts.words, as_str(message.get("toolCallId")), ts, False)
        else:
            self.counts["context_messages_left_out"] += 1

    def _user(self, text: str, ts: Any, origin: dict[str, Any], attachments: list[Any], tid: str) -> None:
        self._flush_run()
        meta: dict[str, Any] = {}
        if origin.get("kind") not in (None, "user"):
            meta["origin"] = ":".join(str(origin[k]) for k in ("kind", "name") if origin.get(k))
        self.b.message("user", text, ts=ts, turn_id=f"{self.prefix}{tid}", attachments=attachments, meta=meta)

    def _drop_pending(self, text: str) -> None:
        wanted = text.strip()
        for i, (pending, _, _) in enumerate(self._pending):
            if pending.strip() == wanted:
                del self._pending[i]
                return

    def _flush_pending(self) -> None:
        """Prompts never written as context messages (older journals): the user's words."""
        pending, self._pending = self._pending, []
        for n, (text, ts, origin) in enumerate(pending):
            self.counts["prompts_without_context_message"] += 1
            self._user(text, ts, origin, [], f"p{n}-{ts}")

    # -- loop events -----------------------------------------------------------------------
    def _loop(self, event: dict[str, Any], ts: Any) -> None:
        self._flush_pending()
        kind = event.get("type")
        if kind == "content.part":
            self._part(event, ts)
            return
        self._flush_run()
        if kind == "tool.call":
            description = as_str(event.get("description"))
            self._call(as_str(event.get("name")), event.get("args"), as_str(event.get("toolCallId")), ts,
                       {"description": description} if description else None)
        elif kind == "tool.result":
            result = event.get("result")
            output, failed = _outcome(result)
            self._result(output, as_str(event.get("toolCallId")), ts, failed)
        elif kind == "step.end":
            usage = event.get("usage")
            if isinstance(usage, dict):
                self.usage.update({k: usage[k] for k in USAGE_KEYS if isinstance(usage.get(k), int)})
            reason = as_str(event.get("finishReason"))
            if reason:
                self.finish_reasons[reason] += 1
        elif kind != "step.begin":
            self.counts["loop_events_other"] += 1

    def _part(self, event: dict[str, Any], ts: Any) -> None:
        part = event.get("part")
        if not isinstance(part, dict):
            return
        kind = part.get("type")
        step = event.get("stepUuid") or event.get("step")
        text = part.get("text") if kind == "text" else part.get("think") if kind == "think" else None
        if not isinstance(text, str):
            parts = parts_of([part], self.counts)
            self._flush_run()
            if parts.media:
                self.b.message("assistant", "", ts=ts, attachments=parts.media, model=self.model,
                               turn_id=f"{self.prefix}{as_str(event.get('uuid')) or ts}")
            return
        run = self._run
        if run is None or run.kind != kind or run.step != step:
            self._flush_run()
            run = self._run = _Run(kind, step, as_str(event.get("uuid")) or f"part-{ts}", ts)
        run.texts.append(text)

    def _flush_run(self) -> None:
        run, self._run = self._run, None
        if run is None:
            return
        text, tid = "".join(run.texts), f"{self.prefix}{run.uuid}"
        if run.kind == "think":
            self.b.thinking(text, ts=run.ts, turn_id=tid, model=self.model)
        else:
            self.b.message("assistant", text, ts=run.ts, turn_id=tid, model=self.model)

    def _call(self, name: str | None, args: Any, call_id: str | None, ts: Any,
              meta: dict[str, Any] | None = None) -> None:
        tid = f"{self.prefix}{call_id}:tool" if self.prefix and call_id else None
        self.b.tool_call(name, args, ts=ts, call_id=call_id, turn_id=tid, meta=meta)

    def _result(self, output: Any, call_id: str | None, ts: Any, failed: bool) -> None:
        tid = f"{self.prefix}{call_id}" if self.prefix and call_id else None
        self.b.tool_result(output, call_id=call_id, ts=ts, is_error=failed, turn_id=tid)


def _outcome(result: Any) -> tuple[Any, bool]:
    """A tool.result's output and whether it failed (`isError`, or an `error` instead of output)."""
    if not isinstance(result, dict):
        return result, False
    failed = result.get("isError") is True
    output = result.get("output")
    if output is None and result.get("error") not in (None, ""):
        output, failed = result.get("error"), True
    if isinstance(output, list):
        output = render_output(output)
    return (output if output is not None else render_output(result)), failed


# -- the session -------------------------------------------------------------------------------

def _agent(path: Path, logs: Logs, cwd: str | None, prefix: str) -> WireAgent:
    agent = WireAgent(logs, cwd, prefix)
    agent.read(path)
    return agent


def read_code_session(folder: Path | None, wire: Path, report: ParseReport) -> ConversationDoc | None:
    """The conversation of the session whose main journal is `wire` (its sub-agents' journals
    beside it under `agents/`). A wire.jsonl outside a session folder is read alone."""
    counts = report.counts
    logs = Logs(counts)
    state = read_side(folder / "state.json", counts, "state_json") if folder else {}
    cwd = as_str(state.get("workDir"))
    try:
        main = _agent(wire, logs, cwd, "")
    except OSError as exc:
        raise SourceError(f"{wire}: cannot read: {exc.strerror or exc}") from None
    cwd = cwd or main.cwd
    agents_info = state.get("agents") if isinstance(state.get("agents"), dict) else {}
    subs: list[list[Turn]] = []
    sub_agents: dict[str, Any] = {}
    for other in sorted(folder.glob("agents/*/wire.jsonl")) if folder else ():
        if other == wire:
            continue
        agent_id = other.parent.name
        try:
            sub = _agent(other, logs, cwd, f"{agent_id}/")
        except OSError as exc:
            report.warnings.append(f"{other}: cannot read: {exc.strerror or exc}")
            continue
        info = agents_info.get(agent_id) if isinstance(agents_info.get(agent_id), dict) else {}
        sub_agents[agent_id] = {"type": as_str(info.get("type")), "parent": as_str(info.get("parentAgentId")),
                                "profile": sub.profile}
        subs.append(mark_sidechain(sub.b.finish(), agent_id))
        main.b.models.update(sub.b.models)
        main.usage.update(sub.usage)
    turns = merge(main.b.finish(), subs)
    logs.report_cut(report)
    return _doc(folder, wire, state, main, turns, sub_agents, cwd)


def _doc(folder: Path | None, wire: Path, state: dict[str, Any], main: WireAgent, turns: list[Turn],
         sub_agents: dict[str, Any], cwd: str | None) -> ConversationDoc | None:
    thread_id = as_str(state.get("id")) or (session_id_of(folder) if folder else wire.parent.name)
    title = as_str(state.get("customTitle")) if state.get("isCustomTitle") else None
    title = title or as_str(state.get("title"))
    meta: dict[str, Any] = {"layout": "kimi_code", "wire_protocol": main.protocol,
                            "created": as_str(state.get("createdAt")),
                            "state_updated": as_str(state.get("updatedAt"))}
    if folder is not None and folder.parent.name.startswith("wd_"):
        meta["work_dir_bucket"] = folder.parent.name
    if state.get("archived"):
        meta["archived"] = True
    if main.profile:
        meta["profile"] = main.profile
    if sub_agents:
        meta["sub_agents"] = sub_agents
    if main.usage:
        meta["usage"] = dict(main.usage)
    if main.finish_reasons:
        meta["finish_reasons"] = dict(main.finish_reasons)
    models = list(main.b.models)
    model = main.b.models.most_common(1)[0][0] if models else main.model
    return conversation(agent="kimi", source_uri=str(wire), thread_id=thread_id, turns=turns, title=title,
                        cwd=cwd, model=model, models=models,
                        metadata={k: v for k, v in meta.items() if v is not None})
