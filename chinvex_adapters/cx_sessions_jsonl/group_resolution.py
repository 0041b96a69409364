"""A closed group → turns: which copy of each message is canonical, tool calls merged by slot.

A mixin of `RolloutParser` (see `parser.py` for the channel rules). It reads the running
`ctx` (the model, pending calls, the next turn number) and appends to `turns`.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from chinvex.models import ToolCall, Turn
from chinvex_adapters.kit.edits import FileEdit, resolve

from .content import image_placeholder, scrub, strip_request_prefix
from .events import Ev, Group
from .tools import ToolPiece, ToolSlot, render_slot

PENDING_CALLS_MAX = 64


class GroupResolution:
    """The group resolution and turn building of `RolloutParser`."""

    ctx: dict[str, Any]
    counts: Counter[str]
    turns: list[Turn]

    def _resolve(self, group: Group, closed_by: str) -> None:
        evs = group.events
        if not evs:
            return
        paginated = any(e.channel == "item" for e in evs)
        user_ch = self._user_channel(evs, group, closed_by)
        asst_ch = _message_channel(evs, "assistant", paginated)
        reas_ch = _message_channel(evs, "reasoning", paginated)
        comp_ch = _compaction_channel(evs)
        # A local compaction's reply (the summary, written only as the compaction task's
        # `response_item` assistant message) is kept once: as the compaction turn.
        summaries = {e.text.strip() for e in evs if e.kind == "compaction" and e.channel == comp_ch
                     and e.text.strip()}

        prev_reasoning: Turn | None = None
        for what, slot, ev in self._ordered_outputs(evs):
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
                elif ev.channel == "response" and summaries and ev.text.strip() in summaries:
                    self.counts["compaction_replies_skipped"] += 1
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
                turn = self._compaction_turn(ev, comp_ch)
            elif ev.kind == "notice":
                turn = self._simple_turn(ev.role, ev, {})
            elif ev.kind == "injected":
                self.counts["injected_context_skipped"] += 1
            elif ev.kind == "context":
                self.counts["context_messages_skipped"] += 1
            if turn is not None:
                self._emit(turn)
                prev_reasoning = None

    def _ordered_outputs(self, evs: list[Ev]) -> list[tuple[str, Any, Ev]]:
        """The group's outputs in order: single events, or tool slots placed at their first piece."""
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
        return outputs

    def _compaction_turn(self, ev: Ev, comp_ch: str | None) -> Turn | None:
        """A compaction of the group's compaction channel: its summary when Codex wrote one (a
        local compaction), else a marker (a remote one keeps its summary encrypted)."""
        if ev.channel != comp_ch:
            self.counts["compaction_markers_skipped"] += 1
            return None
        self.counts["compactions"] += 1
        if ev.text.strip():
            self.counts["compaction_summaries"] += 1
            return self._simple_turn("system", ev, {"kind": "compaction", "compact_summary": True},
                                     text="Context compacted. Summary:\n" + ev.text)
        return self._simple_turn("system", ev, {"kind": "compaction"}, text="Context compacted.")

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
