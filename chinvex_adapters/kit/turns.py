"""Building a conversation's turns the same way for every agent.

What the chunker reads is `Turn.text`, so whatever must be findable goes there: a message's
words, thinking (marked `meta.thinking`), and for a tool call one `role="tool"` turn holding the
readable call and its result (head and tail kept when long). A call and its result arrive
apart in most formats; `tool_result` pairs them by call id, else with the oldest unanswered
call of that name. File edits found in a call's arguments go to `meta["edits"]` (kit.edits).
"""

from __future__ import annotations

import json
from collections import Counter
from datetime import datetime
from typing import Any

from chinvex.models import Attachment, ToolCall, Turn
from chinvex.timeutil import to_utc
from chinvex_adapters.kit.text import as_str, clean_text, fill_times, searchable, truncate_middle
from chinvex_adapters.kit.edits import FileEdit, edits_from_call

TOOL_INPUT_VALUE = (1200, 300)
TOOL_OUTPUT = (2000, 1000)
SMALL_INPUT_VALUE = 300

ROLE_ALIASES = {
    "user": "user", "human": "user", "you": "user", "me": "user", "customer": "user",
    "assistant": "assistant", "model": "assistant", "gemini": "assistant", "ai": "assistant",
    "bot": "assistant", "agent": "assistant", "claude": "assistant", "copilot": "assistant",
    "system": "system", "developer": "system", "info": "system",
    "tool": "tool", "function": "tool", "toolresult": "tool", "tool_result": "tool",
}


def role_of(value: Any) -> str | None:
    """A role word of any agent as a `Turn.role`, None when it is not one."""
    return ROLE_ALIASES.get(value.strip().lower()) if isinstance(value, str) else None


def dump(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError, RecursionError):
        return str(value)


def small_input(value: Any) -> Any:
    """A tool input for `ToolCall.input`: keys kept, long values shortened (the whole input is
    in the turn's text, cut in the middle when long)."""
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for i, (key, item) in enumerate(value.items()):
            if i >= 30:
                out["…"] = f"{len(value) - 30} more keys"
                break
            out[clean_text(str(key))] = small_input(item) if isinstance(item, dict) else _small(item)
        return out
    return _small(value)


def _small(value: Any) -> Any:
    if value is None or isinstance(value, bool | int):
        return value
    if isinstance(value, float):
        return value if value == value and value not in (float("inf"), float("-inf")) else None
    text = clean_text(value if isinstance(value, str) else dump(value))
    return text if len(text) <= SMALL_INPUT_VALUE else text[:SMALL_INPUT_VALUE] + "…"


def render_output(value: Any) -> str:
    """A tool's output as text: strings as they are, text-bearing blocks by their text, a web
    search hit (`type: knowledge`) by its title, address and text, an uploaded image
    (`type: image` with a `file_name` or `file_uuid`) as a placeholder naming it, the rest as
    JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(p for p in (render_output(v) for v in value) if p)
    if isinstance(value, dict):
        kind = value.get("type")
        if kind == "knowledge":
            found = _knowledge(value)
            if found:
                return found
        elif kind == "image" and not value.get("text"):
            name = as_str(value.get("file_name")) or as_str(value.get("file_uuid"))
            if name:
                return f"[image: {name}]"
        for key in ("text", "output", "content", "result", "llmContent", "stdout"):
            inner = value.get(key)
            if isinstance(inner, str | list) and inner:
                text = render_output(inner)
                stderr = value.get("stderr")
                if key == "stdout" and isinstance(stderr, str) and stderr.strip():
                    text = f"{text}\n{stderr}"
                return text
        return dump(value)
    return dump(value)


def _knowledge(value: dict[str, Any]) -> str:
    """A claude.ai web search or fetch hit: `title (url)` on one line, then its text; the
    metadata (site name, favicon) is left out. Empty when it has none of the three."""
    title, url = as_str(value.get("title")) or "", as_str(value.get("url")) or ""
    head = f"{title} ({url})" if title and url else title or url
    body = render_output(value.get("text")) if isinstance(value.get("text"), str | list) else ""
    return "\n".join(p for p in (head, body) if p)


class ConversationBuilder:
    """Turns in order, with unique ids. `cwd` resolves relative paths of file edits."""

    def __init__(self, counts: Counter[str], *, cwd: str | None = None,
                 include_thinking: bool = True) -> None:
        self.counts = counts
        self.cwd = cwd
        self.include_thinking = include_thinking
        self.turns: list[Turn] = []
        self.models: Counter[str] = Counter()
        self._ids: set[str] = set()
        self._calls: dict[str, Turn] = {}
        self._unanswered: list[Turn] = []

    # -- ids and times -------------------------------------------------------------------
    def _id(self, wanted: str | None, suffix: str = "") -> str:
        base = (wanted or f"turn-{len(self.turns) + 1}") + suffix
        candidate, n = base, 1
        while candidate in self._ids:
            n += 1
            candidate = f"{base}#{n}"
        self._ids.add(candidate)
        return candidate

    @staticmethod
    def ts(value: Any) -> datetime | None:
        return value if isinstance(value, datetime) else to_utc(value)

    # -- messages ------------------------------------------------------------------------
    def message(self, role: str, text: str | None, *, ts: Any = None, turn_id: str | None = None,
                meta: dict[str, Any] | None = None, attachments: list[Attachment] | None = None,
                model: str | None = None) -> Turn | None:
        """A user, assistant or system message; None (counted) when it has no words and no
        attachment."""
        body = searchable(text or "").strip()
        if not body and not attachments:
            self.counts["messages_empty"] += 1
            return None
        turn_meta = dict(meta or {})
        if model:
            turn_meta["model"] = model
            self.models[model] += 1
        resolved = role_of(role) or "user"
        turn = Turn(turn_id=self._id(turn_id), ts=self.ts(ts), role=resolved, text=body,  # type: ignore[arg-type]
                    attachments=list(attachments or []), meta=turn_meta)
        self.turns.append(turn)
        return turn

    def thinking(self, text: str | None, *, ts: Any = None, turn_id: str | None = None,
                 model: str | None = None) -> Turn | None:
        """The model's reasoning, kept as an assistant turn marked `thinking` (it is often where
        the reason for a change is written down), unless the context turned thinking off."""
        if not self.include_thinking:
            self.counts["thinking_left_out"] += 1
            return None
        return self.message("assistant", text, ts=ts, turn_id=turn_id, model=model,
                            meta={"thinking": True})

    # -- tools ---------------------------------------------------------------------------
    def tool_call(self, name: str | None, args: Any, *, ts: Any = None, call_id: str | None = None,
                  turn_id: str | None = None, output: Any = None, is_error: bool = False,
                  status: str | None = None, edits: list[FileEdit] | None = None,
                  meta: dict[str, Any] | None = None) -> Turn:
        """One call, with its output when the format keeps both together; else the output comes
        later through `tool_result`."""
        tool_name = clean_text(name or "tool") or "tool"
        lines = [f"Tool call: {tool_name}"]
        if isinstance(args, dict):
            for key, value in args.items():
                text, cut = truncate_middle(clean_text(value if isinstance(value, str) else dump(value)),
                                            *TOOL_INPUT_VALUE)
                self.counts["tool_inputs_truncated"] += 1 if cut else 0
                lines.append(f"{clean_text(str(key))}: {text}")
        elif args not in (None, "", {}):
            text, cut = truncate_middle(clean_text(args if isinstance(args, str) else dump(args)),
                                        *TOOL_INPUT_VALUE)
            self.counts["tool_inputs_truncated"] += 1 if cut else 0
            lines.append(text)
        turn_meta = dict(meta or {})
        if call_id:
            turn_meta["tool_use_id"] = call_id
        if status:
            turn_meta["status"] = status
        found = edits if edits is not None else edits_from_call(tool_name, args, self.cwd)
        if found:
            turn_meta["edits"] = [e.as_meta() for e in found]
            self.counts["file_edits"] += len(found)
        turn = Turn(turn_id=self._id(turn_id or call_id, "" if turn_id else ":tool"),
                    ts=self.ts(ts), role="tool", text=searchable("\n".join(lines)),
                    tool=ToolCall(name=tool_name, input=small_input(args)), meta=turn_meta)
        self.turns.append(turn)
        self.counts["tool_calls"] += 1
        if output is not None or is_error:
            self._attach(turn, output, is_error)
        else:
            if call_id:
                self._calls.setdefault(call_id, turn)
            self._unanswered.append(turn)
        return turn

    def _attach(self, turn: Turn, output: Any, is_error: bool) -> None:
        body, cut = truncate_middle(clean_text(render_output(output)).strip("\n"), *TOOL_OUTPUT)
        if cut:
            self.counts["tool_outputs_truncated"] += 1
        label = "Result (error)" if is_error else "Result"
        piece = f"{label}:\n{body}" if body.strip() else f"{label}: (no output)"
        turn.text = searchable(f"{turn.text}\n\n{piece}")
        if is_error:
            turn.meta["is_error"] = True

    def tool_result(self, output: Any, *, call_id: str | None = None, name: str | None = None,
                    ts: Any = None, is_error: bool = False, turn_id: str | None = None) -> Turn:
        """A result: added to its call's turn (by id, else the oldest unanswered call of that
        name), or a tool turn of its own when no call is known."""
        target = self._calls.pop(call_id, None) if call_id else None
        if target is None and not call_id:
            wanted = name.lower() if name else None
            target = next((t for t in self._unanswered if wanted is None or
                           (t.tool is not None and t.tool.name.lower() == wanted)), None)
        if target is not None:
            self._unanswered = [t for t in self._unanswered if t is not target]
            self._attach(target, output, is_error)
            return target
        self.counts["tool_results_unmatched"] += 1
        turn = Turn(turn_id=self._id(turn_id or call_id, ":result"), ts=self.ts(ts), role="tool",
                    text=searchable(f"Tool result: {clean_text(name or 'tool')}"),
                    tool=ToolCall(name=clean_text(name or "tool") or "tool"),
                    meta={"unmatched_result": True, **({"tool_use_id": call_id} if call_id else {})})
        self._attach(turn, output, is_error)
        self.turns.append(turn)
        return turn

    # -- end -----------------------------------------------------------------------------
    def finish(self, fallback_ts: datetime | None = None) -> list[Turn]:
        """The turns; those without a time take their neighbour's (else `fallback_ts`)."""
        fill_times(self.turns, fallback_ts)
        return self.turns

    def edited_paths(self) -> list[str]:
        """Every path an edit of this conversation touched, first seen first."""
        seen: dict[str, None] = {}
        for turn in self.turns:
            for edit in turn.meta.get("edits") or ():
                seen.setdefault(edit.get("abs_path") or edit.get("path"), None)
        return [p for p in seen if p]
