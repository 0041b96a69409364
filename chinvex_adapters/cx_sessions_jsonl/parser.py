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
- compaction: one system turn per `compacted` line, holding its summary (`message` without
  Codex's framing for the model; meta `compact_summary`), or "Context compacted." when the
  message is empty (remote compaction); its `replacement_history` is never rendered (it repeats
  earlier user messages), and the compaction task's own reply, which is the summary, is not
  shown again. The `context_compacted` / `ContextCompaction` markers only count when a group
  has no `compacted` line.
- a `task_complete` / `turn_complete` carrying an `error` shows it the way an `error` event is,
  unless the group already shows the same error.
"""

from __future__ import annotations

from collections import Counter
from datetime import datetime
from typing import Any

from chinvex.models import Turn
from chinvex.timeutil import iso_z, to_utc

from .events import Ev, Group
from .group_resolution import GroupResolution
from .line_handlers import LineHandlers
from .records import ENVELOPE_TYPES, classify
from .session_context import add_unique, copy_context, new_context

__all__ = ["RolloutParser", "copy_context", "new_context"]


class RolloutParser(LineHandlers, GroupResolution):
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
        add_unique(ctx["unknown_types"], rec.type[:40], limit=10)

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

    # -- end ---------------------------------------------------------------------------------

    def finish(self) -> tuple[int, dict[str, Any]]:
        """Resolve the open group; returns the resume point (its start, ctx before it)."""
        point = self.resume_point()
        self._resolve(self.group, "eof")
        return point
