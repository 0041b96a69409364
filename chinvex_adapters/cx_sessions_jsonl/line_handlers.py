"""Rollout records → events: one handler per record type, each adding `Ev`s to the open group.

A mixin of `RolloutParser` (see `parser.py`), which owns the state the handlers write: the
running `ctx`, the open `group`, the drift `counts`, and the group boundaries (`_add`,
`_close_group`, `_open_group`, `_touch_time`).
"""

from __future__ import annotations

from collections import Counter
from datetime import datetime
from typing import TYPE_CHECKING, Any

from chinvex.timeutil import iso_z, to_utc

from .content import (
    as_dict,
    as_list,
    as_str,
    compaction_summary,
    content_parts,
    image_attachment,
    is_injected,
    join_texts,
    json_scalar,
)
from .events import (
    IGNORED_RESPONSE_TYPES,
    TASK_END_EVENTS,
    TASK_START_EVENTS,
    TOOL_EVENT_TYPES,
    TOOL_ITEM_TYPES,
    Ev,
    Group,
    event_notice,
    phase_meta,
    task_end_error,
)
from .records import Record
from .session_context import add_unique, meta_summary, token_summary
from .tool_records import piece_from_event, piece_from_item, piece_from_response_item


class LineHandlers:
    """The record handlers of `RolloutParser`."""

    ctx: dict[str, Any]
    counts: Counter[str]
    group: Group

    if TYPE_CHECKING:  # provided by RolloutParser

        def _add(self, ev: Ev, start: int) -> None: ...

        def _close_group(self, closed_by: str) -> None: ...

        def _open_group(self, start: int, *, task: bool = False) -> None: ...

        def _touch_time(self, ts: datetime | None) -> None: ...

    def _session_meta(self, rec: Record, ts: datetime | None, start: int, end: int) -> None:
        p = rec.payload
        ctx = self.ctx
        ctx["n_session_meta"] += 1
        ctx["n_setup_lines"] += 1
        sid = as_str(p.get("id"))
        if ctx["thread_id"] is None and ctx["n_session_meta"] == 1:
            ctx["thread_id"] = sid
            ctx["meta"] = meta_summary(p)
            created = to_utc(p.get("timestamp")) if isinstance(p.get("timestamp"), str) else None
            if created is not None:
                ctx["meta"]["created_at"] = iso_z(created)
                self._touch_time(created)
            cwd = as_str(p.get("cwd"))
            add_unique(ctx["repo_paths"], cwd)
            for root in as_list(p.get("runtime_workspace_roots")):
                add_unique(ctx["repo_paths"], as_str(root))
            ctx["workspace_id"] = as_str(p.get("workspace_id")) or as_str(p.get("project_id"))
            if as_str(p.get("model")):
                add_unique(ctx["models"], p["model"])
                ctx["model"] = p["model"]
        else:
            # Later session_meta lines (forked history, sub-agents, concatenated files):
            # Codex reads the first one as the file's thread; the others are kept as metadata.
            if sid and sid != ctx["thread_id"]:
                add_unique(ctx["other_session_ids"], sid, limit=50)
            self.counts["session_meta_extra"] += 1

    def _turn_context(self, rec: Record, ts: datetime | None, start: int, end: int) -> None:
        p = rec.payload
        ctx = self.ctx
        ctx["n_setup_lines"] += 1
        model = as_str(p.get("model")) or as_str(as_dict(as_dict(p.get("collaboration_mode")).get("settings")).get("model"))
        if model:
            ctx["model"] = model
            add_unique(ctx["models"], model, limit=20)
        if as_str(p.get("turn_id")):
            ctx["codex_turn_id"] = p["turn_id"]
        if ctx["n_session_meta"] <= 1:  # later metas belong to other (forked/concatenated) threads
            add_unique(ctx["repo_paths"], as_str(p.get("cwd")))

    def _compacted(self, rec: Record, ts: datetime | None, start: int, end: int) -> None:
        # The summary is kept (it is what the work so far was); `replacement_history` is not:
        # it repeats earlier user messages (and the summary itself) as the model's new context.
        summary = compaction_summary(as_str(rec.payload.get("message")) or "")
        self._add(Ev("compaction", "response", ts, text=summary), start)

    def _other_known(self, rec: Record, ts: datetime | None, start: int) -> None:
        p = rec.payload
        if rec.type == "token_usage_record":
            usage = as_dict(p.get("thread_token_usage"))
            if usage:
                self.ctx["token_usage"] = token_summary(usage)
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
                             role="assistant", meta=phase_meta(p)), start)
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
            self._task_end(kind, p, ts, start, end)
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
                         role="assistant", meta=phase_meta(p)), start)
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
                    add_unique(ctx["child_thread_ids"], child, limit=100)
                self._add(Ev("tool", "event", ts, piece=piece), start)
            return
        if kind == "token_count":
            info = as_dict(p.get("info"))
            usage = as_dict(info.get("total_token_usage"))
            if usage:
                ctx["token_usage"] = token_summary(usage)
            ctx["n_setup_lines"] += 1
            return
        if kind == "thread_name_updated":
            name = as_str(p.get("thread_name"))
            if name and name.strip():
                ctx["thread_name"] = name.strip()[:300]
            ctx["n_setup_lines"] += 1
            return
        if kind == "sub_agent_activity":
            add_unique(ctx["child_thread_ids"], as_str(p.get("agent_thread_id")), limit=100)
            ctx["n_setup_lines"] += 1
            return
        notice = event_notice(kind, p)
        if notice is not None:
            role, text, meta = notice
            self._add(Ev("notice", "event", ts, text=text, role=role, meta=meta), start)
            return
        ctx["n_setup_lines"] += 1
        self.counts["events_ignored"] += 1

    def _task_end(self, kind: str, p: dict, ts: datetime | None, start: int, end: int) -> None:
        """A task's end: the error it carries, unless the group shows it already, and the group
        closed."""
        notice = task_end_error(p)
        if notice is not None and not self._error_shown(notice[1]):
            self._add(Ev("notice", "event", ts, text=notice[1], role=notice[0], meta=notice[2]), start)
        else:
            if notice is not None:
                self.counts["task_errors_already_shown"] += 1
            self.ctx["n_setup_lines"] += 1
        if kind == "turn_aborted":
            self.counts["turns_aborted"] += 1
        if self.group.task_open:
            self.group.task_open = False
            self._close_group("task_end")
            self._open_group(end)

    def _error_shown(self, text: str) -> bool:
        """Whether the open group already shows this error (an `error` event before the end)."""
        for e in self.group.events:
            shown = e.text.strip()
            if e.kind == "notice" and e.meta.get("kind") == "error" and shown and (
                    text == shown or text.startswith(shown + "\n")):
                return True
        return False

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
                         role="assistant", meta={**meta, **phase_meta(item)}), start)
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
            notice = event_notice("entered_review_mode" if kind == "EnteredReviewMode"
                                   else "exited_review_mode", item)
            if notice is not None:
                role, text, nmeta = notice
                self._add(Ev("notice", "item", ts, text=text, role=role, meta={**meta, **nmeta}), start)
        elif kind in TOOL_ITEM_TYPES:
            piece = piece_from_item(kind, item)
            if piece is not None:
                for child in piece.child_thread_ids:
                    add_unique(self.ctx["child_thread_ids"], child, limit=100)
                self._add(Ev("tool", "item", ts, piece=piece, meta=meta), start)
        else:
            self.counts["items_ignored"] += 1
            self._add(Ev("context", "item", ts, meta=meta), start)

    # -- resolution --------------------------------------------------------------------------
