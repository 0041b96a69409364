"""App-server items → chinvex turns, one method per item kind (`ITEM_KINDS` says which).

`TurnBuilder` keeps the turns of one thread, their counts, and the ids already given (an item
id seen twice gets a `#n` suffix so turn ids stay unique).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

from chinvex.models import Attachment, ToolCall
from chinvex.models import Turn as DocTurn
from chinvex.timeutil import to_utc

from . import schemas
from .item_text import (
    NormalizeOptions,
    change_edits,
    clip,
    content_items_text,
    find_text,
    from_ms,
    json_text,
    mcp_result_text,
    scrub,
    tool_text,
    user_message_text,
)


class TurnBuilder:
    def __init__(self, thread: schemas.Thread, options: NormalizeOptions):
        self.thread = thread
        self.options = options
        self.counts: Counter[str] = Counter()
        self.turns: list[DocTurn] = []
        self._seen_ids: Counter[str] = Counter()

    def _turn_id(self, turn: schemas.Turn, item_id: str | None, index: int) -> str:
        base = f"{turn.id}:{item_id if item_id else f'#{index}'}"
        self._seen_ids[base] += 1
        if self._seen_ids[base] > 1:
            self.counts["duplicate_item_ids"] += 1
            return f"{base}#{self._seen_ids[base]}"
        return base

    def add(
        self,
        turn: schemas.Turn,
        item: Any,
        index: int,
        role: str,
        text: str,
        *,
        tool: ToolCall | None = None,
        attachments: list[Attachment] | None = None,
        meta: dict[str, Any] | None = None,
    ) -> None:
        ts = from_ms(getattr(item, "started_at_ms", None) or getattr(item, "completed_at_ms", None))
        if ts is None and turn.started_at is not None:
            ts = to_utc(turn.started_at)
        full_meta: dict[str, Any] = {"item_type": getattr(item, "type", "unknown"), "codex_turn_id": turn.id}
        if turn.status and turn.status != "completed":
            full_meta["turn_status"] = turn.status
        if meta:
            full_meta.update({k: v for k, v in meta.items() if v is not None})
        self.turns.append(
            DocTurn(
                turn_id=self._turn_id(turn, getattr(item, "id", None), index),
                ts=ts,
                role=role,  # type: ignore[arg-type]
                text=text,
                tool=tool,
                attachments=attachments or [],
                meta=full_meta,
            )
        )
        self.counts[f"turns_{role}"] += 1

    def _tool(
        self, turn: schemas.Turn, item: Any, index: int, name: str, input_value: Any,
        input_text: str | None, output: str | None, exit_code: int | None = None,
        attachments: list[Attachment] | None = None, meta: dict[str, Any] | None = None,
        status: str | None = None,
    ) -> None:
        """One `role="tool"` turn: the call and its output in the rollout adapter's layout."""
        text = tool_text(name, input_text, output, exit_code, self.options, self.counts)
        self.add(turn, item, index, "tool", text,
                 tool=ToolCall(name=name, input=input_value, output=None),
                 attachments=attachments,
                 meta={"kind": "tool", "status": status, "exit_code": exit_code, **(meta or {})})

    # -- per item kind ----------------------------------------------------------------------
    def item(self, turn: schemas.Turn, item: Any, index: int) -> None:
        self.counts["items_total"] += 1
        self.counts[f"items_{getattr(item, 'type', 'unknown')}"] += 1
        for kind, handle in ITEM_KINDS:
            if isinstance(item, kind):
                handle(self, turn, item, index)
                return
        self._unknown(turn, item, index)

    # messages

    def _user(self, turn: schemas.Turn, item: schemas.UserMessageItem, index: int) -> None:
        text, attachments = user_message_text(item, self.counts)
        if not text and not attachments:
            self.counts["items_empty_skipped"] += 1
            return
        self.add(turn, item, index, "user", text, attachments=attachments,
                 meta={"kind": "message", "client_id": item.client_id})

    def _agent(self, turn: schemas.Turn, item: schemas.AgentMessageItem, index: int) -> None:
        text = scrub(item.text.strip(), self.counts)
        if not text:
            self.counts["items_empty_skipped"] += 1
            return
        self.add(turn, item, index, "assistant", text, meta={"kind": "message", "phase": item.phase})

    def _reasoning(self, turn: schemas.Turn, item: schemas.ReasoningItem, index: int) -> None:
        summary = "\n\n".join(p.strip() for p in item.summary if p and p.strip())
        if not self.options.include_reasoning or not summary:
            self.counts["reasoning_skipped"] += 1
            return
        self.add(turn, item, index, "assistant", scrub(summary, self.counts), meta={"kind": "reasoning"})

    def _plan(self, turn: schemas.Turn, item: schemas.PlanItem, index: int) -> None:
        if not item.text.strip():
            self.counts["items_empty_skipped"] += 1
            return
        self.add(turn, item, index, "assistant", scrub(item.text.strip(), self.counts),
                 meta={"kind": "plan"})

    # tool calls

    def _command(self, turn: schemas.Turn, item: schemas.CommandExecutionItem, index: int) -> None:
        where = f"\n(in {item.cwd})" if item.cwd else ""
        self._tool(turn, item, index, "exec_command", {"command": item.command, "cwd": item.cwd},
                   f"$ {item.command}{where}", item.aggregated_output, item.exit_code,
                   status=item.status,
                   meta={"source": item.source, "duration_ms": item.duration_ms,
                         "output_chars": len(item.aggregated_output or "")})

    def _file_change(self, turn: schemas.Turn, item: schemas.FileChangeItem, index: int) -> None:
        paths: list[str] = []
        diffs: list[str] = []
        for change in item.changes:
            kind = change.kind.get("type") if isinstance(change.kind, dict) else change.kind
            move = change.kind.get("move_path") if isinstance(change.kind, dict) else None
            paths.append(change.path)
            header = f"{kind or 'change'} {change.path}" + (f" -> {move}" if move else "")
            diffs.append(header + (f"\n{change.diff.rstrip()}" if change.diff.strip() else ""))
        if not paths:
            self.counts["items_empty_skipped"] += 1
            return
        edits = [e.as_meta() for change in item.changes for e in change_edits(change)]
        self.counts["file_edits"] += len(edits)
        self._tool(turn, item, index, "apply_patch", {"files": paths},
                   "files: " + ", ".join(paths) + "\n" + "\n\n".join(diffs), None, status=item.status,
                   meta={"edits": edits} if edits else None)

    def _mcp_call(self, turn: schemas.Turn, item: schemas.McpToolCallItem, index: int) -> None:
        result, media = mcp_result_text(item.result, self.counts)
        error = (item.error or {}).get("message") if item.error else None
        if error:
            result = (result + "\n" if result else "") + f"Error: {error}"
        self._tool(turn, item, index, f"{item.server}.{item.tool}", item.arguments,
                   json_text(item.arguments), result,
                   status=item.status, meta={"server": item.server, "media_omitted": media or None})

    def _dynamic_call(self, turn: schemas.Turn, item: schemas.DynamicToolCallItem, index: int) -> None:
        name = f"{item.namespace}.{item.tool}" if item.namespace else item.tool
        result, media = content_items_text(item.content_items, self.counts)
        self._tool(turn, item, index, name, item.arguments, json_text(item.arguments), result,
                   status=item.status, meta={"success": item.success, "media_omitted": media or None})

    def _function_output(
        self, turn: schemas.Turn, item: schemas.FunctionCallOutputItem, index: int
    ) -> None:
        if isinstance(item.output, list):
            body, media = content_items_text(item.output, self.counts)
        else:
            body, media = scrub(item.output or "", self.counts), 0
        if not body.strip() and not media:
            self.counts["items_empty_skipped"] += 1
            return
        name = f"{item.namespace}.{item.name}" if item.namespace else (item.name or "function")
        self._tool(turn, item, index, name, None, None, body, meta={"media_omitted": media or None})

    def _web_search(self, turn: schemas.Turn, item: schemas.WebSearchItem, index: int) -> None:
        action = item.action or {}
        details = [item.query] if item.query else []
        for key in ("queries", "url", "pattern"):
            value = action.get(key)
            if isinstance(value, list):
                details.extend(str(v) for v in value if v and v != item.query)
            elif value:
                details.append(str(value))
        results = find_text(item.results) if item.results else None
        self._tool(turn, item, index, "web_search", {"query": item.query, "action": action or None},
                   "\n".join(details), results)

    def _image_view(self, turn: schemas.Turn, item: schemas.ImageViewItem, index: int) -> None:
        self.counts["attachments"] += 1
        self._tool(turn, item, index, "view_image", {"path": item.path}, item.path, None,
                   attachments=[Attachment(kind="image", path=item.path,
                                           name=item.path.rsplit("/", 1)[-1])])

    def _image_generation(
        self, turn: schemas.Turn, item: schemas.ImageGenerationItem, index: int
    ) -> None:
        attachments = []
        if item.saved_path:
            self.counts["attachments"] += 1
            attachments.append(Attachment(kind="image", name="generated image", path=item.saved_path))
        prompt = (item.revised_prompt or "").strip()
        self._tool(turn, item, index, "image_generation",
                   {"revised_prompt": prompt} if prompt else None, prompt, None,
                   attachments=attachments, status=item.status)

    def _collab_call(
        self, turn: schemas.Turn, item: schemas.CollabAgentToolCallItem, index: int
    ) -> None:
        receivers = ", ".join(item.receiver_thread_ids)
        text = (item.prompt or "") + (f"\n(agents: {receivers})" if receivers else "")
        self._tool(turn, item, index, item.tool,
                   {"receivers": item.receiver_thread_ids} if receivers else None, text, None,
                   status=item.status, meta={"child_thread_ids": item.receiver_thread_ids or None})

    # events of the session

    def _sub_agent(self, turn: schemas.Turn, item: schemas.SubAgentActivityItem, index: int) -> None:
        self.add(turn, item, index, "system",
                 f"Sub-agent {item.agent_path or item.agent_thread_id}: {item.kind}",
                 meta={"kind": "sub_agent", "agent_thread_id": item.agent_thread_id})

    def _hook_prompt(self, turn: schemas.Turn, item: schemas.HookPromptItem, index: int) -> None:
        text = "\n\n".join(f.text.strip() for f in item.fragments if f.text.strip())
        if not text:
            self.counts["items_empty_skipped"] += 1
            return
        self.add(turn, item, index, "system", scrub(text, self.counts), meta={"kind": "hook_prompt"})

    def _review_start(
        self, turn: schemas.Turn, item: schemas.EnteredReviewModeItem, index: int
    ) -> None:
        self.add(turn, item, index, "system", f"Review started: {item.review}".strip().rstrip(":"),
                 meta={"kind": "review_start"})

    def _review_end(self, turn: schemas.Turn, item: schemas.ExitedReviewModeItem, index: int) -> None:
        # The review's findings are the model's output: searchable assistant text.
        review = scrub(item.review.strip(), self.counts)
        if review:
            self.add(turn, item, index, "assistant", "Review:\n" + review, meta={"kind": "review"})
        else:
            self.add(turn, item, index, "system", "Exited review mode.", meta={"kind": "review_end"})

    def _compaction(
        self, turn: schemas.Turn, item: schemas.ContextCompactionItem, index: int
    ) -> None:
        self.add(turn, item, index, "system", "Context compacted.", meta={"kind": "compaction"})

    def _sleep(self, turn: schemas.Turn, item: schemas.SleepItem, index: int) -> None:
        self.counts["items_dropped_sleep"] += 1

    def _unknown(self, turn: schemas.Turn, item: Any, index: int) -> None:
        """An UnknownItem: its text-like values are kept as a system turn, if it has any."""
        raw = getattr(item, "raw", {}) or {}
        text = scrub(find_text({k: v for k, v in raw.items() if k != "type"}), self.counts)
        if text:
            self.counts["unknown_items_kept"] += 1
            self.add(turn, item, index, "system",
                     clip(text, self.options.max_tool_output_chars, self.counts, "tool_outputs_truncated"),
                     meta={"kind": "unknown", "unknown_item": True})
        else:
            self.counts["unknown_items_dropped"] += 1

    def turn_error(self, turn: schemas.Turn) -> None:
        if turn.error and turn.error.message:
            self.counts["turn_errors"] += 1
            self.turns.append(
                DocTurn(
                    turn_id=f"{turn.id}:error",
                    ts=to_utc(turn.completed_at) if turn.completed_at else None,
                    role="system",
                    text=f"Error: {turn.error.message}",
                    meta={"kind": "error", "item_type": "turnError", "codex_turn_id": turn.id,
                          "turn_status": turn.status},
                )
            )
            self.counts["turns_system"] += 1


ITEM_KINDS: tuple[tuple[type, Callable[[TurnBuilder, schemas.Turn, Any, int], None]], ...] = (
    (schemas.UserMessageItem, TurnBuilder._user),
    (schemas.AgentMessageItem, TurnBuilder._agent),
    (schemas.ReasoningItem, TurnBuilder._reasoning),
    (schemas.PlanItem, TurnBuilder._plan),
    (schemas.CommandExecutionItem, TurnBuilder._command),
    (schemas.FileChangeItem, TurnBuilder._file_change),
    (schemas.McpToolCallItem, TurnBuilder._mcp_call),
    (schemas.DynamicToolCallItem, TurnBuilder._dynamic_call),
    (schemas.FunctionCallOutputItem, TurnBuilder._function_output),
    (schemas.WebSearchItem, TurnBuilder._web_search),
    (schemas.ImageViewItem, TurnBuilder._image_view),
    (schemas.ImageGenerationItem, TurnBuilder._image_generation),
    (schemas.CollabAgentToolCallItem, TurnBuilder._collab_call),
    (schemas.SubAgentActivityItem, TurnBuilder._sub_agent),
    (schemas.HookPromptItem, TurnBuilder._hook_prompt),
    (schemas.EnteredReviewModeItem, TurnBuilder._review_start),
    (schemas.ExitedReviewModeItem, TurnBuilder._review_end),
    (schemas.ContextCompactionItem, TurnBuilder._compaction),
    (schemas.SleepItem, TurnBuilder._sleep),
)
"""Which method turns an item of each kind into turns, tried in order (`isinstance`); any
other item is an UnknownItem (`TurnBuilder._unknown`)."""
