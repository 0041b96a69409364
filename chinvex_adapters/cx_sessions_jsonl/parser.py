"""RolloutLine records → conversation turns, in resumable groups.

Lines are collected into *groups* (one Codex task, i.e. one user request and everything the
agent did for it) and a group is turned into turns only when it is closed. Deciding per group
is what makes de-duplication possible: the same message is written twice in a rollout
(`response_item` and `event_msg` in legacy files, `response_item` and `item_completed` in
paginated ones), in either order, and which copy is canonical can only be told once the whole
task has been seen.

Group boundaries depend only on lines already read, never on what follows, so a parse that
restarts at a group start (the append-aware re-ingest) meets exactly the same boundaries and
decisions as a full parse. Everything a group's resolution needs from before the group lives
in `ctx`, a JSON-able dict whose value at the start of the last group is stored as resume state.

Channel choice inside a group (the de-duplication rules):
- users: `item_completed/UserMessage` > `event_msg/user_message` > `response_item` user
  messages. In a task-structured file the response copies never become user turns when the
  group lacks an event-channel one: a task of a file that writes `user_message` events, or
  lines written outside any task (the session's initial context before the first
  `task_started`), hold only injected context there (AGENTS.md, skills, environment, ...),
  even when it cannot be recognised by its prefix (e.g. redacted). Response user messages
  are used where nothing else exists: era B, filtered or hand-made files without tasks.
- assistant messages and reasoning: `item_completed` > `event_msg` > `response_item`; in a
  paginated group (one with `item_completed` lines) response copies are never used — they
  are the model context, and what Codex shows is the items (a compaction turn's model reply
  is not shown, for instance).
- tool calls: call, output and completion event are merged by call id (see `tools.py`).
- compaction: one system turn per `compacted` line (its `replacement_history` is never
  rendered); the `context_compacted` / `ContextCompaction` markers only count when a group
  has no `compacted` line.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import orjson

from chinvex.jsonio import dumps
from chinvex.models import Attachment, ToolCall, Turn
from chinvex.timeutil import iso_z, to_utc
from chinvex_adapters.kit.edits import FileEdit, resolve

from .content import (
    as_dict,
    as_int,
    as_list,
    as_str,
    content_parts,
    image_attachment,
    image_placeholder,
    is_injected,
    join_texts,
    json_scalar,
    scrub,
    strip_request_prefix,
)
from .records import ENVELOPE_TYPES, Record, classify
from .tools import (
    ToolPiece,
    ToolSlot,
    piece_from_event,
    piece_from_item,
    piece_from_response_item,
    render_slot,
)

PENDING_CALLS_MAX = 64
IGNORED_RESPONSE_TYPES = {"ghost_snapshot", "compaction", "context_compaction", "additional_tools",
                          "configuration_update", "other", "compaction_trigger"}
TOOL_EVENT_TYPES = {"exec_command_end", "mcp_tool_call_end", "patch_apply_end", "web_search_end",
                    "image_generation_end", "view_image_tool_call", "dynamic_tool_call_request",
                    "dynamic_tool_call_response", "collab_agent_spawn_end", "collab_waiting_end",
                    "collab_close_end", "collab_agent_interaction_end"}
TOOL_ITEM_TYPES = {"CommandExecution", "McpToolCall", "FileChange", "WebSearch", "ImageGeneration",
                   "ImageView", "DynamicToolCall", "CollabAgentToolCall", "Extension"}
TASK_START_EVENTS = {"task_started", "turn_started"}
TASK_END_EVENTS = {"task_complete", "turn_complete", "turn_aborted"}


def new_context() -> dict[str, Any]:
    return {
        "v": 1,
        "thread_id": None,
        "meta": {},
        "other_session_ids": [],
        "child_thread_ids": [],
        "models": [],
        "repo_paths": [],
        "workspace_id": None,
        "thread_name": None,
        "first_user_text": None,
        "created_at": None,
        "updated_at": None,
        "next_turn": 0,
        "last_turn_id": None,
        "pending_calls": {},
        "era": None,
        "lines_seen": 0,
        "model": None,
        "codex_turn_id": None,
        "event_users_seen": False,
        "token_usage": None,
        "rollout_reference": None,
        "n_session_meta": 0,
        "n_conversation_lines": 0,
        "n_setup_lines": 0,
        "n_unrecognised_lines": 0,
        "unknown_types": [],
    }


def copy_context(ctx: dict[str, Any]) -> dict[str, Any]:
    """A deep copy that is also what the stored resume state will hold: JSON, and writable by
    orjson (`dumps` turns what orjson refuses, e.g. a >64-bit integer from a line only the
    stdlib parser read, into a string)."""
    return orjson.loads(dumps(ctx))


def _add_unique(items: list[Any], value: Any, limit: int = 200) -> None:
    if value is not None and value != "" and value not in items and len(items) < limit:
        items.append(value)


@dataclass
class Ev:
    kind: str  # user | injected | context | assistant | reasoning | tool | compaction | notice
    channel: str  # item | event | response
    ts: datetime | None
    text: str = ""
    attachments: list[Attachment] = field(default_factory=list)
    piece: ToolPiece | None = None
    role: str = "system"
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass
class Group:
    start: int
    snapshot: dict[str, Any]
    task_open: bool = False
    ever_task_open: bool = False
    has_activity: bool = False  # anything but user input: decides where a new request begins
    events: list[Ev] = field(default_factory=list)


class RolloutParser:
    """Feed decoded lines in file order; `finish()` resolves the last group.

    `ctx` is either a fresh `new_context()` (full parse) or the snapshot stored with the
    previous run's state (resumed parse starting at that snapshot's group start).
    """

    def __init__(self, ctx: dict[str, Any], start_offset: int, counts: Counter[str]):
        self.ctx = ctx
        self.counts = counts
        self.turns: list[Turn] = []
        self.group = Group(start=start_offset, snapshot=copy_context(ctx))

    # -- groups ------------------------------------------------------------------------------

    def _close_group(self, closed_by: str) -> None:
        self._resolve(self.group, closed_by)

    def _open_group(self, start: int, *, task: bool = False) -> None:
        self.group = Group(start=start, snapshot=copy_context(self.ctx), task_open=task,
                           ever_task_open=task)

    def resume_point(self) -> tuple[int, dict[str, Any]]:
        """Where a later run restarts: the start of the last (possibly unfinished) group."""
        return self.group.start, self.group.snapshot

    # -- input -------------------------------------------------------------------------------

    def feed_invalid(self) -> None:
        """A complete line that is not JSON at all (garbage, a torn write in the middle)."""
        self.ctx["lines_seen"] += 1
        self.ctx["n_unrecognised_lines"] += 1
        self.counts["lines_drift"] += 1

    def feed(self, obj: Any, start: int, end: int) -> None:
        ctx = self.ctx
        first = ctx["lines_seen"] == 0
        ctx["lines_seen"] += 1
        rec = classify(obj, first_line=first, era_b=ctx["era"] == "B")
        if isinstance(rec, str):
            if rec == "era_b_state":
                ctx["n_setup_lines"] += 1
                self.counts["lines_era_b_state"] += 1
            else:
                ctx["n_unrecognised_lines"] += 1
                self.counts["lines_drift"] += 1
            return
        if rec.era_b and rec.type == "session_meta":
            ctx["era"] = "B"
        elif rec.ordinal is not None and ctx["era"] != "B":
            ctx["era"] = "D"
        elif ctx["era"] is None and not rec.era_b:
            ctx["era"] = "C"
        ts = to_utc(rec.timestamp) if isinstance(rec.timestamp, str) else None
        self._touch_time(ts)
        handler = {
            "session_meta": self._session_meta,
            "response_item": self._response_item,
            "event_msg": self._event_msg,
            "turn_context": self._turn_context,
            "compacted": self._compacted,
        }.get(rec.type)
        if handler is not None:
            handler(rec, ts, start, end)
            return
        if rec.type in ENVELOPE_TYPES:
            ctx["n_setup_lines"] += 1
            self._other_known(rec, ts, start)
            return
        ctx["n_unrecognised_lines"] += 1
        self.counts["lines_unknown_type"] += 1
        _add_unique(ctx["unknown_types"], rec.type[:40], limit=10)

    def _touch_time(self, ts: datetime | None) -> None:
        if ts is None:
            return
        value = iso_z(ts)
        ctx = self.ctx
        if ctx["created_at"] is None or value < ctx["created_at"]:
            ctx["created_at"] = value
        if ctx["updated_at"] is None or value > ctx["updated_at"]:
            ctx["updated_at"] = value

    def _add(self, ev: Ev, start: int) -> None:
        group = self.group
        if ev.kind == "user" and not group.task_open and group.has_activity:
            # A new request outside task markers (era B, filtered files): a new group.
            self._close_group("user")
            self._open_group(start)
            group = self.group
        if ev.kind in ("assistant", "reasoning", "tool", "compaction", "notice"):
            group.has_activity = True
        if ev.kind in ("user", "assistant", "reasoning", "tool", "compaction", "notice"):
            self.ctx["n_conversation_lines"] += 1
        else:
            self.ctx["n_setup_lines"] += 1
        ev.meta.setdefault("codex_turn_id", self.ctx["codex_turn_id"])
        group.events.append(ev)

    # -- record handlers ---------------------------------------------------------------------

    def _session_meta(self, rec: Record, ts: datetime | None, start: int, end: int) -> None:
        p = rec.payload
        ctx = self.ctx
        ctx["n_session_meta"] += 1
        ctx["n_setup_lines"] += 1
        sid = as_str(p.get("id"))
        if ctx["thread_id"] is None and ctx["n_session_meta"] == 1:
            ctx["thread_id"] = sid
            ctx["meta"] = _meta_summary(p)
            created = to_utc(p.get("timestamp")) if isinstance(p.get("timestamp"), str) else None
            if created is not None:
                ctx["meta"]["created_at"] = iso_z(created)
                self._touch_time(created)
            cwd = as_str(p.get("cwd"))
            _add_unique(ctx["repo_paths"], cwd)
            for root in as_list(p.get("runtime_workspace_roots")):
                _add_unique(ctx["repo_paths"], as_str(root))
            ctx["workspace_id"] = as_str(p.get("workspace_id")) or as_str(p.get("project_id"))
            if as_str(p.get("model")):
                _add_unique(ctx["models"], p["model"])
                ctx["model"] = p["model"]
        else:
            # Later session_meta lines (forked history, sub-agents, concatenated files):
            # Codex reads the first one as the file's thread; the others are kept as metadata.
            if sid and sid != ctx["thread_id"]:
                _add_unique(ctx["other_session_ids"], sid, limit=50)
            self.counts["session_meta_extra"] += 1

    def _turn_context(self, rec: Record, ts: datetime | None, start: int, end: int) -> None:
        p = rec.payload
        ctx = self.ctx
        ctx["n_setup_lines"] += 1
        model = as_str(p.get("model")) or as_str(as_dict(as_dict(p.get("collaboration_mode")).get("settings")).get("model"))
        if model:
            ctx["model"] = model
            _add_unique(ctx["models"], model, limit=20)
        if as_str(p.get("turn_id")):
            ctx["codex_turn_id"] = p["turn_id"]
        if ctx["n_session_meta"] <= 1:  # later metas belong to other (forked/concatenated) threads
            _add_unique(ctx["repo_paths"], as_str(p.get("cwd")))

    def _compacted(self, rec: Record, ts: datetime | None, start: int, end: int) -> None:
        summary = as_str(rec.payload.get("message")) or ""
        self._add(Ev("compaction", "response", ts, meta={"summary_chars": len(summary)}), start)

    def _other_known(self, rec: Record, ts: datetime | None, start: int) -> None:
        p = rec.payload
        if rec.type == "token_usage_record":
            usage = as_dict(p.get("thread_token_usage"))
            if usage:
                self.ctx["token_usage"] = _token_summary(usage)
        elif rec.type == "rollout_reference":
            self.ctx["rollout_reference"] = {
                k: json_scalar(p.get(k)) for k in ("rollout_path", "thread_id", "segment_id")
                if json_scalar(p.get(k)) is not None
            }
        elif rec.type == "inter_agent_communication":
            texts, _ = content_parts(p.get("content"))
            text = join_texts(texts) or as_str(p.get("message")) or ""
            if text.strip():
                self._add(Ev("notice", "response", ts, text=text, role="system",
                             meta={"kind": "inter_agent"}), start)

    def _response_item(self, rec: Record, ts: datetime | None, start: int, end: int) -> None:
        p = rec.payload
        kind = as_str(p.get("type")) or ""
        if kind == "message":
            role = as_str(p.get("role")) or ""
            texts, atts = content_parts(p.get("content"))
            if role == "user":
                if any(is_injected(t) for t in texts):
                    self._add(Ev("injected", "response", ts), start)
                    return
                text = join_texts(texts)
                if not text and not atts:
                    self._add(Ev("context", "response", ts), start)
                    return
                self._add(Ev("user", "response", ts, text=text, attachments=atts, role="user"), start)
            elif role == "assistant":
                self._add(Ev("assistant", "response", ts, text=join_texts(texts), attachments=atts,
                             role="assistant", meta=_phase(p)), start)
            else:  # developer / system: instructions, permissions, skills: never turns
                self._add(Ev("context", "response", ts), start)
            return
        if kind == "reasoning":
            parts = [as_str(as_dict(s).get("text")) for s in as_list(p.get("summary"))]
            if p.get("encrypted_content"):
                self.counts["reasoning_encrypted_skipped"] += 1
            self._add(Ev("reasoning", "response", ts, text="\n\n".join(x for x in parts if x and x.strip()),
                         role="assistant"), start)
            return
        if kind == "agent_message":  # inter-agent message (multi-agent threads)
            texts, _ = content_parts(p.get("content"))
            text = join_texts(texts)
            who = " → ".join(x for x in (as_str(p.get("author")), as_str(p.get("recipient"))) if x)
            if text:
                self._add(Ev("notice", "response", ts, text=(f"Message {who}:\n" if who else "") + text,
                             role="system", meta={"kind": "inter_agent"}), start)
            else:
                self._add(Ev("context", "response", ts), start)
            return
        piece = piece_from_response_item(kind, p)
        if piece is not None:
            self._add(Ev("tool", "response", ts, piece=piece), start)
            return
        if kind in IGNORED_RESPONSE_TYPES:
            self.counts["response_items_ignored"] += 1
        else:
            self.counts["response_items_unknown"] += 1
        self._add(Ev("context", "response", ts), start)

    def _event_msg(self, rec: Record, ts: datetime | None, start: int, end: int) -> None:
        p = rec.payload
        kind = as_str(p.get("type")) or ""
        ctx = self.ctx
        if kind in TASK_START_EVENTS:
            self._close_group("task_started")
            self._open_group(start, task=True)
            if as_str(p.get("turn_id")):
                ctx["codex_turn_id"] = p["turn_id"]
            ctx["n_setup_lines"] += 1
            return
        if kind in TASK_END_EVENTS:
            ctx["n_setup_lines"] += 1
            if kind == "turn_aborted":
                self.counts["turns_aborted"] += 1
            if self.group.task_open:
                self.group.task_open = False
                self._close_group("task_end")
                self._open_group(end)
            return
        if kind == "user_message":
            message = as_str(p.get("message")) or ""
            atts = [a for a in (image_attachment(url=u) for u in as_list(p.get("images"))) if a]
            atts += [a for a in (image_attachment(path=x) for x in as_list(p.get("local_images"))) if a]
            ctx["event_users_seen"] = True
            if is_injected(message):
                self._add(Ev("injected", "event", ts), start)
            elif message.strip() or atts:
                self._add(Ev("user", "event", ts, text=message, attachments=atts, role="user"), start)
            else:
                self._add(Ev("context", "event", ts), start)
            return
        if kind == "agent_message":
            self._add(Ev("assistant", "event", ts, text=as_str(p.get("message")) or "",
                         role="assistant", meta=_phase(p)), start)
            return
        if kind == "agent_reasoning":
            self._add(Ev("reasoning", "event", ts, text=as_str(p.get("text")) or "", role="assistant"), start)
            return
        if kind == "context_compacted":
            self._add(Ev("compaction", "event", ts), start)
            return
        if kind == "item_completed":
            self._item(as_dict(p.get("item")), ts, start, as_str(p.get("turn_id")))
            return
        if kind in TOOL_EVENT_TYPES:
            piece = piece_from_event(kind, p)
            if piece is not None:
                for child in piece.child_thread_ids:
                    _add_unique(ctx["child_thread_ids"], child, limit=100)
                self._add(Ev("tool", "event", ts, piece=piece), start)
            return
        if kind == "token_count":
            info = as_dict(p.get("info"))
            usage = as_dict(info.get("total_token_usage"))
            if usage:
                ctx["token_usage"] = _token_summary(usage)
            ctx["n_setup_lines"] += 1
            return
        if kind == "thread_name_updated":
            name = as_str(p.get("thread_name"))
            if name and name.strip():
                ctx["thread_name"] = name.strip()[:300]
            ctx["n_setup_lines"] += 1
            return
        if kind == "sub_agent_activity":
            _add_unique(ctx["child_thread_ids"], as_str(p.get("agent_thread_id")), limit=100)
            ctx["n_setup_lines"] += 1
            return
        notice = _event_notice(kind, p)
        if notice is not None:
            role, text, meta = notice
            self._add(Ev("notice", "event", ts, text=text, role=role, meta=meta), start)
            return
        ctx["n_setup_lines"] += 1
        self.counts["events_ignored"] += 1

    def _item(self, item: dict[str, Any], ts: datetime | None, start: int, turn_id: str | None) -> None:
        kind = as_str(item.get("type")) or ""
        meta: dict[str, Any] = {"codex_turn_id": turn_id} if turn_id else {}
        if kind == "UserMessage":
            texts, atts = content_parts(item.get("content"))
            text = join_texts(texts)
            self.ctx["event_users_seen"] = True
            if any(is_injected(t) for t in texts):
                self._add(Ev("injected", "item", ts, meta=meta), start)
            elif text or atts:
                self._add(Ev("user", "item", ts, text=text, attachments=atts, role="user", meta=meta), start)
            else:
                self._add(Ev("context", "item", ts, meta=meta), start)
        elif kind == "AgentMessage":
            texts, atts = content_parts(item.get("content"))
            self._add(Ev("assistant", "item", ts, text=join_texts(texts), attachments=atts,
                         role="assistant", meta={**meta, **_phase(item)}), start)
        elif kind == "Reasoning":
            parts = [x for x in as_list(item.get("summary_text")) if isinstance(x, str) and x.strip()]
            self._add(Ev("reasoning", "item", ts, text="\n\n".join(parts), role="assistant", meta=meta), start)
        elif kind == "ContextCompaction":
            self._add(Ev("compaction", "item", ts, meta=meta), start)
        elif kind == "Plan":
            text = as_str(item.get("text")) or ""
            if text.strip():
                self._add(Ev("notice", "item", ts, text=text, role="assistant",
                             meta={**meta, "kind": "plan"}), start)
            else:
                self._add(Ev("context", "item", ts, meta=meta), start)
        elif kind in ("EnteredReviewMode", "ExitedReviewMode"):
            notice = _event_notice("entered_review_mode" if kind == "EnteredReviewMode"
                                   else "exited_review_mode", item)
            if notice is not None:
                role, text, nmeta = notice
                self._add(Ev("notice", "item", ts, text=text, role=role, meta={**meta, **nmeta}), start)
        elif kind in TOOL_ITEM_TYPES:
            piece = piece_from_item(kind, item)
            if piece is not None:
                for child in piece.child_thread_ids:
                    _add_unique(self.ctx["child_thread_ids"], child, limit=100)
                self._add(Ev("tool", "item", ts, piece=piece, meta=meta), start)
        else:
            self.counts["items_ignored"] += 1
            self._add(Ev("context", "item", ts, meta=meta), start)

    # -- resolution --------------------------------------------------------------------------

    def _resolve(self, group: Group, closed_by: str) -> None:
        evs = group.events
        if not evs:
            return
        paginated = any(e.channel == "item" for e in evs)
        user_ch = self._user_channel(evs, group, closed_by)
        asst_ch = _message_channel(evs, "assistant", paginated)
        reas_ch = _message_channel(evs, "reasoning", paginated)
        comp_ch = _compaction_channel(evs)

        # Build the ordered outputs: single events, or tool slots placed at their first piece.
        outputs: list[tuple[str, Any, Ev]] = []
        slots_by_key: dict[str, ToolSlot] = {}
        keyless: list[ToolSlot] = []
        for ev in evs:
            if ev.kind == "tool" and ev.piece is not None:
                slot = self._slot_for(ev.piece, slots_by_key, keyless)
                if slot is None:
                    slot = ToolSlot(key=ev.piece.key)
                    if ev.piece.key is not None:
                        slots_by_key[ev.piece.key] = slot
                    else:
                        keyless.append(slot)
                    outputs.append(("slot", slot, ev))
                slot.add(ev.piece)
                continue
            outputs.append(("ev", None, ev))

        prev_reasoning: Turn | None = None
        for what, slot, ev in outputs:
            turn: Turn | None = None
            if what == "slot":
                turn = self._tool_turn(slot, ev)
            elif ev.kind == "user":
                if ev.channel == user_ch:
                    turn = self._user_turn(ev)
                else:
                    self.counts["user_duplicates_skipped" if user_ch else "user_context_skipped"] += 1
            elif ev.kind == "assistant":
                if ev.channel != asst_ch:
                    self.counts["assistant_duplicates_skipped"] += 1
                elif ev.text.strip() or ev.attachments:
                    turn = self._simple_turn("assistant", ev, {"kind": "message"})
                else:
                    self.counts["assistant_empty_skipped"] += 1
            elif ev.kind == "reasoning":
                if ev.channel != reas_ch:
                    self.counts["reasoning_duplicates_skipped"] += 1
                elif not ev.text.strip():
                    self.counts["reasoning_without_summary"] += 1
                elif prev_reasoning is not None:
                    # Consecutive summary parts of one reasoning step: one turn.
                    prev_reasoning.text = prev_reasoning.text + "\n\n" + scrub(ev.text)[0]
                    continue
                else:
                    turn = self._simple_turn("assistant", ev, {"kind": "reasoning"})
                    self._emit(turn)
                    prev_reasoning = turn
                    continue
            elif ev.kind == "compaction":
                if ev.channel == comp_ch:
                    self.counts["compactions"] += 1
                    turn = self._simple_turn("system", ev, {"kind": "compaction"}, text="Context compacted.")
                else:
                    self.counts["compaction_markers_skipped"] += 1
            elif ev.kind == "notice":
                turn = self._simple_turn(ev.role, ev, {})
            elif ev.kind == "injected":
                self.counts["injected_context_skipped"] += 1
            elif ev.kind == "context":
                self.counts["context_messages_skipped"] += 1
            if turn is not None:
                self._emit(turn)
                prev_reasoning = None

    def _user_channel(self, evs: list[Ev], group: Group, closed_by: str) -> str | None:
        chans = {e.channel for e in evs if e.kind in ("user", "injected") and e.channel != "response"}
        users = {e.channel for e in evs if e.kind == "user"}
        if "item" in users or "item" in chans:
            return "item"
        if "event" in users or "event" in chans:
            return "event"
        if group.ever_task_open and self.ctx["event_users_seen"]:
            return None  # inside a task of a file that writes user_message events
        if closed_by == "task_started" and not group.ever_task_open:
            return None  # context written outside tasks (the session's initial context)
        return "response"

    @staticmethod
    def _slot_for(piece: ToolPiece, by_key: dict[str, ToolSlot], keyless: list[ToolSlot]) -> ToolSlot | None:
        if piece.key is not None:
            slot = by_key.get(piece.key)
            return slot if slot is not None and slot.accepts(piece) else None
        if piece.role == "call":
            return None
        for slot in reversed(keyless):
            if slot.accepts(piece) and (piece.name is None or slot.name in (None, piece.name)):
                return slot
        return None

    # -- turn building -----------------------------------------------------------------------

    def _next_id(self) -> str:
        return f"t{self.ctx['next_turn']:05d}"

    def _emit(self, turn: Turn) -> None:
        self.turns.append(turn)
        self.ctx["next_turn"] += 1
        self.ctx["last_turn_id"] = turn.turn_id

    def _meta(self, ev: Ev, extra: dict[str, Any]) -> dict[str, Any]:
        meta = {k: v for k, v in ev.meta.items() if v is not None}
        meta.update(extra)
        return meta

    def _simple_turn(self, role: str, ev: Ev, extra: dict[str, Any], text: str | None = None) -> Turn:
        body, n = scrub(ev.text if text is None else text)
        if n:
            self.counts["inline_data_removed"] += n
        meta = self._meta(ev, extra)
        if role == "assistant" and self.ctx["model"] and "model" not in meta:
            meta["model"] = self.ctx["model"]
        return Turn(turn_id=self._next_id(), ts=ev.ts, role=role, text=body.strip(),
                    attachments=list(ev.attachments), meta=meta)

    def _user_turn(self, ev: Ev) -> Turn:
        body, n = scrub(ev.text)
        if n:
            self.counts["inline_data_removed"] += n
        lines = [body.strip()] if body.strip() else []
        lines += [image_placeholder(a) for a in ev.attachments]
        if ev.attachments:
            self.counts["images_attached"] += len(ev.attachments)
        if self.ctx["first_user_text"] is None:
            request = strip_request_prefix(body)
            if request:
                self.ctx["first_user_text"] = request[:500]
        return Turn(turn_id=self._next_id(), ts=ev.ts, role="user", text="\n".join(lines),
                    attachments=list(ev.attachments), meta=self._meta(ev, {"channel": ev.channel}))

    def _tool_turn(self, slot: ToolSlot, ev: Ev) -> Turn:
        pending = self.ctx["pending_calls"]
        orphan = "call" not in slot.roles and slot.key is not None and slot.key in pending
        fallback = pending[slot.key]["name"] if orphan else None
        rendered = render_slot(slot, fallback)
        self.counts["tool_calls"] += 1
        if rendered.output_truncated:
            self.counts["tool_outputs_truncated"] += 1
        if rendered.input_truncated:
            self.counts["tool_inputs_truncated"] += 1
        if rendered.images_scrubbed:
            self.counts["inline_data_removed"] += rendered.images_scrubbed
        extra: dict[str, Any] = {}
        if slot.key is not None:
            extra["call_id"] = slot.key
        if slot.exit_code is not None:
            extra["exit_code"] = slot.exit_code
        if slot.status:
            extra["status"] = slot.status
        if orphan:
            extra["call_turn_id"] = pending.pop(slot.key)["turn_id"]
        if "call" in slot.roles and not ({"output", "event"} & slot.roles):
            extra["output_missing"] = True
            self.counts["tool_outputs_missing"] += 1
        elif "call" not in slot.roles:
            self.counts["tool_outputs_without_call"] += 1
        if self.ctx["model"]:
            extra["model"] = self.ctx["model"]
        if slot.edits:
            cwd = self.ctx["repo_paths"][-1] if self.ctx["repo_paths"] else None
            extra["edits"] = [FileEdit(e.path, e.op, e.old_text, e.new_text, resolve(e.path, cwd),
                                       e.truncated).as_meta() for e in slot.edits]
            self.counts["file_edits"] += len(slot.edits)
        turn = Turn(turn_id=self._next_id(), ts=ev.ts, role="tool", text=rendered.text,
                    tool=ToolCall(name=rendered.name, input=rendered.input, output=None),
                    attachments=list(slot.attachments), meta=self._meta(ev, extra))
        if extra.get("output_missing") and slot.key is not None:
            pending[slot.key] = {"name": rendered.name, "turn_id": turn.turn_id}
            while len(pending) > PENDING_CALLS_MAX:
                pending.pop(next(iter(pending)))
        return turn

    # -- end ---------------------------------------------------------------------------------

    def finish(self) -> tuple[int, dict[str, Any]]:
        """Resolve the open group; returns the resume point (its start, ctx before it)."""
        point = self.resume_point()
        self._resolve(self.group, "eof")
        return point


def _message_channel(evs: list[Ev], kind: str, paginated: bool) -> str | None:
    chans = {e.channel for e in evs if e.kind == kind}
    if "item" in chans:
        return "item"
    if "event" in chans:
        return "event"
    if paginated:
        return None
    return "response"


def _compaction_channel(evs: list[Ev]) -> str | None:
    chans = {e.channel for e in evs if e.kind == "compaction"}
    for ch in ("response", "item", "event"):
        if ch in chans:
            return ch
    return None


def _phase(p: dict[str, Any]) -> dict[str, Any]:
    phase = as_str(p.get("phase"))
    return {"phase": phase} if phase else {}


def _token_summary(usage: dict[str, Any]) -> dict[str, int]:
    out = {}
    for key in ("input_tokens", "cached_input_tokens", "output_tokens", "reasoning_output_tokens",
                "total_tokens"):
        value = as_int(usage.get(key))
        if value is not None:
            out[key] = value
    return out


def _source_kind(source: Any) -> str | None:
    """`cli`, `vscode`, `exec`, ... or `subagent:<kind>` for sub-agent threads."""
    if isinstance(source, str):
        return source
    d = as_dict(source)
    if not d:
        return None
    (key, value), = list(d.items())[:1]
    if key in ("subagent", "subAgent", "sub_agent"):
        if isinstance(value, str):
            return f"subagent:{value}"
        inner = as_dict(value)
        return f"subagent:{next(iter(inner))}" if inner else "subagent"
    return str(key)


def _meta_summary(p: dict[str, Any]) -> dict[str, Any]:
    """The small, stable facts of the file's own session_meta (never base_instructions)."""
    out: dict[str, Any] = {}
    for key in ("session_id", "cli_version", "originator", "model_provider", "history_mode",
                "memory_mode", "forked_from_id", "parent_thread_id", "agent_nickname", "agent_role",
                "agent_path", "thread_source"):
        value = json_scalar(p.get(key))
        if value is not None and value != "":
            out[key] = value
    kind = _source_kind(p.get("source"))
    if kind:
        out["source_kind"] = kind
    spawn = as_dict(as_dict(as_dict(p.get("source")).get("subagent")).get("thread_spawn"))
    if as_str(spawn.get("parent_thread_id")) and "parent_thread_id" not in out:
        out["parent_thread_id"] = spawn["parent_thread_id"]
    base = as_dict(p.get("history_base"))
    if as_str(base.get("thread_id")):
        out["history_base_thread_id"] = base["thread_id"]
    git = as_dict(p.get("git"))
    git_out = {k: git[k] for k in ("repository_url", "branch", "commit_hash") if as_str(git.get(k))}
    if git_out:
        out["git"] = git_out
    return out


def _event_notice(kind: str, p: dict[str, Any]) -> tuple[str, str, dict[str, Any]] | None:
    """Events the user saw in the transcript that are neither messages nor tools."""
    if kind == "error":
        message = as_str(p.get("message"))
        return ("system", f"Error: {message}", {"kind": "error"}) if message else None
    if kind == "thread_rolled_back":
        n = as_int(p.get("num_turns"))
        return "system", f"Rolled back {n if n is not None else 'some'} turn(s).", {"kind": "rollback"}
    if kind == "entered_review_mode":
        target = as_dict(p.get("target"))
        hint = as_str(p.get("user_facing_hint")) or as_str(target.get("title")) or as_str(p.get("prompt"))
        what = as_str(target.get("type"))
        text = "Entered review mode" + (f" ({what})" if what else "") + (f": {hint}" if hint else ".")
        return "system", text, {"kind": "review_start"}
    if kind == "exited_review_mode":
        review = as_dict(p.get("review_output") or p.get("review"))
        lines = []
        for finding in as_list(review.get("findings")):
            f = as_dict(finding)
            title, body = as_str(f.get("title")), as_str(f.get("body"))
            loc = as_dict(f.get("code_location"))
            where = as_str(loc.get("absolute_file_path"))
            if title or body:
                lines.append("- " + " — ".join(x for x in (title, body) if x) + (f" ({where})" if where else ""))
        explanation = as_str(review.get("overall_explanation"))
        if explanation:
            lines.insert(0, explanation)
        if lines:
            return "assistant", "Review:\n" + "\n".join(lines), {"kind": "review"}
        return "system", "Exited review mode.", {"kind": "review_end"}
    return None
