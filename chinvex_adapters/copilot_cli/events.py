"""Copilot CLI's event log (`events.jsonl`, and the flat `<id>.jsonl` of 0.0.342-0.0.377) as
turns.

Every line is an event `{type, data, id, timestamp, parentId}` (schema: the Copilot SDK's
session-events). The conversation is `user.message`, `assistant.message` (its text, its
`reasoningText` as thinking, its `toolRequests` as tool calls) and `tool.execution_complete`
(a call's result, paired by `toolCallId`); runtime notices that carry words (errors, warnings,
notifications, compaction summaries) are system turns. The rest is bookkeeping kept as
metadata (model changes, modes, shutdown totals, sub-agents) or counted and passed over: the
40-60 KB system prompt repeated per interaction, turn markers, hooks, permissions, usage, and
`ephemeral` streaming events. Sub-agent events are inline; their turns name the sub-agent.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from datetime import datetime
from typing import Any

import orjson

from chinvex.timeutil import to_utc
from chinvex_adapters.kit.text import as_str, clean_text
from chinvex_adapters.kit.turns import ConversationBuilder

from .common import arguments, attachments, strip_wrappers

_EVENT_TYPE = re.compile(r"^[a-z][a-z_]*(?:\.[a-z_]+)+$")
_NOTIFICATION_TAG = re.compile(r"</?system_notification>")
ENVELOPE = frozenset({"type", "data", "id", "timestamp"})
FOREIGN_KEYS = frozenset({"message", "uuid", "parentUuid", "payload", "sessionId", "kind"})
"""Top-level keys of other agents' JSONL (Claude Code, Qwen Code, Codex, pi, VS Code's log)."""
MAX_LISTED = 50


def is_event(record: dict[str, Any]) -> bool:
    """Whether a record has the Copilot CLI event envelope: a dotted `type` (or `abort`), a
    `data` object, `id`, `timestamp` and the `parentId` key, and none of the keys other
    agents' records are made of."""
    kind = record.get("type")
    return (isinstance(kind, str) and (kind == "abort" or bool(_EVENT_TYPE.match(kind)))
            and isinstance(record.get("data"), dict) and ENVELOPE <= record.keys()
            and "parentId" in record and not (FOREIGN_KEYS & record.keys()))


def is_session_start(record: dict[str, Any]) -> bool:
    data = record.get("data")
    return (record.get("type") == "session.start" and isinstance(data, dict)
            and (data.get("producer") == "copilot-agent" or "copilotVersion" in data))


def _web_text(text: str) -> str:
    """An MCP result that is JSON text of `{type: output_text, text: {value}}` as its value."""
    if not text.startswith('{"type":'):
        return text
    try:
        data = orjson.loads(text)
    except orjson.JSONDecodeError:
        return text
    inner = data.get("text") if isinstance(data, dict) else None
    value = inner.get("value") if isinstance(inner, dict) else inner
    return value if isinstance(value, str) else text


class EventTurns:
    """Feeds events in file order into a ConversationBuilder; keeps the session's facts."""

    def __init__(self, counts: Counter[str], include_thinking: bool = True) -> None:
        self.counts = counts
        self.b = ConversationBuilder(counts, include_thinking=include_thinking)
        self.facts: dict[str, Any] = {}
        self.context: dict[str, Any] = {}
        self.model: str | None = None
        self.title: str | None = None
        self.model_changes: list[str] = []
        self.modes: list[str] = []
        self.shutdowns: list[dict[str, Any]] = []
        self.subagents: dict[str, dict[str, Any]] = {}
        self.skills: list[str] = []
        self.resumes = 0
        self.requested: set[str] = set()
        self.reasoning: set[str] = set()
        self.events = 0

    # -- dispatch -----------------------------------------------------------------------
    def feed(self, event: dict[str, Any]) -> None:
        kind = event["type"]
        self.events += 1
        if event.get("ephemeral") is True:
            self.counts["events_ephemeral"] += 1
            return
        handler = HANDLERS.get(kind)
        if handler is None:
            self.counts[f"events_skipped:{kind[:60]}"] += 1
            return
        handler(self, event["data"], event)

    @property
    def cwd(self) -> str | None:
        return as_str(self.context.get("cwd"))

    def _set_context(self, context: Any) -> None:
        if isinstance(context, dict) and as_str(context.get("cwd")):
            if self.context and context.get("cwd") != self.context.get("cwd"):
                self.facts.setdefault("other_cwds", []).append(clean_text(str(context["cwd"])))
            if not self.context:
                self.context = context
                self.b.cwd = self.cwd

    @staticmethod
    def _ts(event: dict[str, Any]) -> datetime | None:
        return to_utc(event.get("timestamp"))

    def _agent_meta(self, data: dict[str, Any], event: dict[str, Any]) -> dict[str, Any]:
        """Which sub-agent produced an event (its parent `task` call), {} for the main agent."""
        agent = as_str(event.get("agentId")) or as_str(data.get("parentToolCallId"))
        if not agent:
            return {}
        meta: dict[str, Any] = {"subagent": agent}
        name = self.subagents.get(agent, {}).get("agent")
        if name:
            meta["subagent_name"] = name
        return meta

    # -- session facts ------------------------------------------------------------------
    def session_start(self, data: dict[str, Any], event: dict[str, Any]) -> None:
        for key in ("sessionId", "copilotVersion", "producer", "version", "startTime",
                    "reasoningEffort", "vscodeVersion"):
            if data.get(key) is not None and key not in self.facts:
                self.facts[key] = data[key]
        self.model = as_str(data.get("selectedModel")) or self.model
        self._set_context(data.get("context"))

    def session_resume(self, data: dict[str, Any], event: dict[str, Any]) -> None:
        self.resumes += 1
        self.model = as_str(data.get("selectedModel")) or self.model
        self._set_context(data.get("context"))

    def context_changed(self, data: dict[str, Any], event: dict[str, Any]) -> None:
        self._set_context(data)

    def model_change(self, data: dict[str, Any], event: dict[str, Any]) -> None:
        new = as_str(data.get("newModel"))
        if new:
            self.model = new
            if not self.model_changes or self.model_changes[-1] != new:
                self.model_changes.append(new)

    def mode_changed(self, data: dict[str, Any], event: dict[str, Any]) -> None:
        mode = as_str(data.get("newMode"))
        if mode:
            self.modes.append(mode)

    def title_changed(self, data: dict[str, Any], event: dict[str, Any]) -> None:
        self.title = as_str(data.get("title")) or self.title

    def shutdown(self, data: dict[str, Any], event: dict[str, Any]) -> None:
        kept = {k: data[k] for k in ("shutdownType", "totalPremiumRequests", "totalApiDurationMs",
                                     "currentModel", "codeChanges", "modelMetrics", "errorReason")
                if data.get(k) is not None}
        kept["at"] = event.get("timestamp")
        self.shutdowns.append(kept)
        self.model = self.model or as_str(data.get("currentModel"))

    def subagent(self, data: dict[str, Any], event: dict[str, Any]) -> None:
        call = as_str(data.get("toolCallId"))
        if call:
            entry = self.subagents.setdefault(call, {"agent": as_str(data.get("agentName"))})
            entry["status"] = event["type"].rsplit(".", 1)[-1]
            for key in ("model", "durationMs", "totalToolCalls"):
                if data.get(key) is not None:
                    entry[key] = data[key]

    def skill(self, data: dict[str, Any], event: dict[str, Any]) -> None:
        name = as_str(data.get("name"))
        if name and name not in self.skills:
            self.skills.append(name)

    # -- words --------------------------------------------------------------------------
    def user_message(self, data: dict[str, Any], event: dict[str, Any]) -> None:
        source = as_str(data.get("source")) or ""
        text = data.get("content") if isinstance(data.get("content"), str) else ""
        meta = {k: data[k] for k in ("agentMode", "interactionId") if as_str(data.get(k))}
        if source.startswith("skill-"):
            self.counts["skill_injections_skipped"] += 1
            return
        if source.startswith("agent-") or not text.strip():
            # A prompt the runtime wrote (another agent's, an autopilot nudge): a system turn.
            body = text.strip() or strip_wrappers(str(data.get("transformedContent") or ""))
            meta["injected"] = source or "autopilot_continuation"
            self.b.message("system", body, ts=self._ts(event), turn_id=event.get("id"), meta=meta)
            return
        found = attachments(data.get("attachments"), self.counts)
        self.b.message("user", text, ts=self._ts(event), turn_id=event.get("id"), meta=meta,
                       attachments=found)

    def reasoning_event(self, data: dict[str, Any], event: dict[str, Any]) -> None:
        text = data.get("content")
        if isinstance(text, str) and text.strip():
            self.reasoning.add(text.strip())
            turn = self.b.thinking(text, ts=self._ts(event), turn_id=event.get("id"), model=self.model)
            if turn is not None:
                turn.meta.update(self._agent_meta(data, event))

    def assistant_message(self, data: dict[str, Any], event: dict[str, Any]) -> None:
        ts, model = self._ts(event), as_str(data.get("model")) or self.model
        meta = self._agent_meta(data, event)
        thinking = data.get("reasoningText")
        if isinstance(thinking, str) and thinking.strip() and thinking.strip() not in self.reasoning:
            turn = self.b.thinking(thinking, ts=ts, turn_id=f"{event.get('id')}:thinking", model=model)
            if turn is not None:
                turn.meta.update(meta)
        if data.get("reasoningOpaque") or data.get("encryptedContent"):
            self.counts["encrypted_reasoning_dropped"] += 1
        content = data.get("content")
        if isinstance(content, str) and content.strip():
            self.b.message("assistant", content, ts=ts, turn_id=event.get("id"), model=model, meta=meta)
        requests = data.get("toolRequests")
        for request in requests if isinstance(requests, list) else ():
            if not isinstance(request, dict):
                continue
            call_id = as_str(request.get("toolCallId"))
            tool_meta = dict(meta)
            for key in ("intentionSummary", "mcpServerName"):
                if as_str(request.get(key)):
                    tool_meta[key] = request[key]
            self.b.tool_call(as_str(request.get("name")) or "tool", arguments(request.get("arguments")),
                             ts=ts, call_id=call_id, meta=tool_meta)
            if call_id:
                self.requested.add(call_id)

    def tool_start(self, data: dict[str, Any], event: dict[str, Any]) -> None:
        """A call no assistant message requested (a user's `!` command, a sub-agent's): its
        start is its only record."""
        call_id = as_str(data.get("toolCallId"))
        if call_id and call_id in self.requested:
            return
        meta = self._agent_meta(data, event)
        if event["type"] == "tool.user_requested":
            meta["user_requested"] = True
        if as_str(data.get("mcpServerName")):
            meta["mcpServerName"] = data["mcpServerName"]
        self.b.tool_call(as_str(data.get("toolName")) or "tool", arguments(data.get("arguments")),
                         ts=self._ts(event), call_id=call_id, meta=meta)
        if call_id:
            self.requested.add(call_id)

    def tool_complete(self, data: dict[str, Any], event: dict[str, Any]) -> None:
        result = data.get("result") if isinstance(data.get("result"), dict) else {}
        output: Any = result.get("content")
        if not output:
            output = result.get("detailedContent") or result.get("contents")
        if isinstance(output, str):
            output = _web_text(output)
        error = data.get("error")
        if isinstance(error, dict) and as_str(error.get("message")):
            output = f"{output}\n{error['message']}" if output else error["message"]
        if result.get("binaryResultsForLlm"):
            self.counts["tool_binary_results_dropped"] += 1
        self.b.tool_result(output if output is not None else "", call_id=as_str(data.get("toolCallId")),
                           ts=self._ts(event), is_error=data.get("success") is False)

    def notice(self, data: dict[str, Any], event: dict[str, Any]) -> None:
        """Errors, warnings, notifications, aborts and compaction summaries: system turns."""
        kind = event["type"]
        if kind == "session.compaction_complete":
            text = data.get("summaryContent")
            label = "Conversation summary (compaction)"
        elif kind == "system.notification":
            text = _NOTIFICATION_TAG.sub("", str(data.get("content") or ""))
            label = "Notification"
        elif kind == "abort":
            text = as_str(data.get("reason"))
            label = "Aborted"
        else:
            text = data.get("message")
            label = {"session.error": "Error", "session.warning": "Warning"}.get(kind, kind)
            detail = as_str(data.get("errorType")) or as_str(data.get("warningType"))
            label = f"{label} ({detail})" if detail else label
        if isinstance(text, str) and text.strip():
            self.b.message("system", f"{label}: {text.strip()}", ts=self._ts(event),
                           turn_id=event.get("id"), meta={"event": kind})

    def summary(self) -> dict[str, Any]:
        """The bookkeeping worth keeping, as metadata."""
        out: dict[str, Any] = {"events": self.events}
        if self.model_changes:
            out["model_changes"] = self.model_changes[:MAX_LISTED]
        if self.modes:
            out["modes"] = list(dict.fromkeys(self.modes))
        if self.resumes:
            out["resumes"] = self.resumes
        if self.shutdowns:
            out["shutdown"] = self.shutdowns[-1]
            out["shutdowns"] = len(self.shutdowns)
        if self.subagents:
            out["subagents"] = [{"tool_call_id": k, **v} for k, v in list(self.subagents.items())[:MAX_LISTED]]
        if self.skills:
            out["skills"] = self.skills[:MAX_LISTED]
        return out


def _skip(counter: str) -> Callable[[EventTurns, dict[str, Any], dict[str, Any]], None]:
    def handler(self: EventTurns, data: dict[str, Any], event: dict[str, Any]) -> None:
        self.counts[counter] += 1
    return handler


HANDLERS: dict[str, Callable[[EventTurns, dict[str, Any], dict[str, Any]], None]] = {
    "session.start": EventTurns.session_start,
    "session.resume": EventTurns.session_resume,
    "session.context_changed": EventTurns.context_changed,
    "session.model_change": EventTurns.model_change,
    "session.mode_changed": EventTurns.mode_changed,
    "session.title_changed": EventTurns.title_changed,
    "session.shutdown": EventTurns.shutdown,
    "session.error": EventTurns.notice,
    "session.warning": EventTurns.notice,
    "session.compaction_complete": EventTurns.notice,
    "system.notification": EventTurns.notice,
    "abort": EventTurns.notice,
    "system.message": _skip("system_prompts_skipped"),
    "user.message": EventTurns.user_message,
    "assistant.reasoning": EventTurns.reasoning_event,
    "assistant.message": EventTurns.assistant_message,
    "tool.execution_start": EventTurns.tool_start,
    "tool.user_requested": EventTurns.tool_start,
    "tool.execution_complete": EventTurns.tool_complete,
    "subagent.started": EventTurns.subagent,
    "subagent.completed": EventTurns.subagent,
    "subagent.failed": EventTurns.subagent,
    "skill.invoked": EventTurns.skill,
}
