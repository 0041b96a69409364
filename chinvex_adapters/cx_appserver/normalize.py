"""App-server threads → `ConversationDoc` (one document per Codex thread).

Conventions (shared with the rollout-file adapter so one thread gives one document whichever
adapter read it; see the report / docs/ARCHITECTURE.md):
- doc_id = `thread_doc_id("codex_session", thread_id)`; source_uri = `codex://thread/<id>` (the
  adapter puts the rollout file's path there when the thread has one under the include root).
- One chinvex `Turn` per message-like item; its id is `<codex turn id>:<item id>`, stable
  across re-reads because Codex item ids are persisted (legacy replays number them
  `item-N` in file order, which appending to the rollout does not change).
- Everything searchable is in `Turn.text`. Tool outputs and diffs are clipped head+tail with a
  visible marker; `data:` URLs (base64) never reach the text, images become `Attachment`s.
- Reasoning: only the summary, as an assistant turn with `meta.kind == "reasoning"` (raw
  reasoning content is usually empty or encrypted; the summary says what was intended).
- Same rendering as the rollout-file adapter (chinvex_adapters/cx_sessions_jsonl): tool turns read
  "Tool: <name>" / input / "Output (exit code N):" / output, 8000-character limits cut in the
  middle (3/4 head), MCP tools named `server.tool`, `meta.kind` in message | reasoning | plan |
  compaction | review | review_start | error | …, "Context compacted." markers, 80-character
  titles. `meta.item_type` keeps the app-server item type.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from chinvex.ids import thread_doc_id
from chinvex.models import Attachment, ConversationDoc, ConversationLinks, ToolCall
from chinvex.models import Turn as DocTurn
from chinvex.timeutil import to_utc
from chinvex_adapters.kit.edits import FileEdit, patch_edits, resolve

from . import schemas

SOURCE = "cx_appserver"
SOURCE_TYPE = "codex_session"
TITLE_MAX_CHARS = 80

_DATA_URL = re.compile(r"data:[\w.+-]+/[\w.+-]+(?:;[\w=.+-]+)*;base64,[A-Za-z0-9+/=\s]{16,}")
_LONG_B64_MIN = 400  # same threshold as the rollout-file adapter
_LONG_B64 = re.compile(r"[A-Za-z0-9+/]{%d,}={0,2}" % _LONG_B64_MIN)
_WS = re.compile(r"\s+")
_TEXT_KEYS = ("text", "message", "summary", "content", "review", "prompt", "query", "output")


@dataclass(frozen=True)
class NormalizeOptions:
    max_tool_output_chars: int = 8000
    max_tool_input_chars: int = 8000
    include_reasoning: bool = True


def source_uri_for(thread_id: str) -> str:
    return f"codex://thread/{thread_id}"


def clip(text: str, limit: int, counts: Counter[str], counter: str) -> str:
    """Head and tail of `text` with a marker saying how much was cut (errors and results
    tend to sit at the end of tool output, the command's intent at the start)."""
    if limit <= 0 or len(text) <= limit:
        return text
    counts[counter] += 1
    head = (limit * 3) // 4
    tail = limit - head
    omitted = len(text) - head - tail
    return f"{text[:head]}\n[… {omitted} characters omitted …]\n{text[-tail:]}"


def scrub(text: str, counts: Counter[str]) -> str:
    """Replace inline base64 (data URLs, long bare runs), which would flood the index."""
    if "base64," not in text and len(text) < _LONG_B64_MIN:
        return text

    def _sub(match: re.Match[str]) -> str:
        counts["data_urls_removed"] += 1
        mime = match.group(0).split(";", 1)[0][5:]
        return f"[{mime} data omitted]"

    def _sub_run(match: re.Match[str]) -> str:
        counts["base64_runs_removed"] += 1
        return f"[base64 data, {len(match.group(0))} chars omitted]"

    return _LONG_B64.sub(_sub_run, _DATA_URL.sub(_sub, text))


def _one_line(text: str) -> str:
    return _WS.sub(" ", text).strip()


def make_title(thread: schemas.Thread) -> str | None:
    for candidate in (thread.name, thread.preview):
        if candidate and candidate.strip():
            line = _one_line(candidate)
            if len(line) > TITLE_MAX_CHARS:
                cut = line[: TITLE_MAX_CHARS - 1]
                space = cut.rfind(" ")
                if space >= TITLE_MAX_CHARS // 2:
                    cut = cut[:space]
                line = cut.rstrip() + "…"
            return line
    return None


def _ms(value: int | None) -> Any:
    return None if value is None else to_utc(value / 1000)


def _json_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(value)


def tool_text(
    name: str,
    input_text: str | None,
    output: str | None,
    exit_code: int | None,
    options: NormalizeOptions,
    counts: Counter[str],
) -> str:
    """`Tool: name` / input / `Output (exit code N):` / output — the rollout adapter's layout."""
    lines = [f"Tool: {name}"]
    if input_text and input_text.strip():
        lines.append(clip(scrub(input_text, counts), options.max_tool_input_chars, counts,
                          "tool_inputs_truncated").rstrip())
    if output is not None and output.strip():
        body = clip(scrub(output, counts), options.max_tool_output_chars, counts, "tool_outputs_truncated")
        label = "Output" + (f" (exit code {exit_code})" if exit_code is not None else "")
        lines.append(f"{label}:\n{body.rstrip()}")
    elif exit_code is not None:
        lines.append(f"Exit code: {exit_code}")
    return "\n".join(lines)


def _image_attachment(url: str | None, file_id: str | None, counts: Counter[str]) -> Attachment:
    counts["attachments"] += 1
    if url and url.startswith("data:"):
        mime = url[5:].split(";", 1)[0] or None
        return Attachment(kind="image", mime_type=mime, size_bytes=(len(url) * 3) // 4)
    return Attachment(kind="image", uri=url, name=file_id)


def _user_message(item: schemas.UserMessageItem, counts: Counter[str]) -> tuple[str, list[Attachment]]:
    texts: list[str] = []
    markers: list[str] = []
    attachments: list[Attachment] = []
    for part in item.content:
        if isinstance(part, schemas.TextInput):
            if part.text.strip():
                texts.append(part.text.strip())
        elif isinstance(part, schemas.ImageInput):
            attachments.append(_image_attachment(part.url, part.file_id, counts))
            if part.url and not part.url.startswith("data:"):
                markers.append(f"[image: {part.url}]")
            else:
                markers.append("[image]")
        elif isinstance(part, schemas.LocalImageInput):
            counts["attachments"] += 1
            attachments.append(Attachment(kind="image", path=part.path, name=part.path.rsplit("/", 1)[-1]))
            markers.append(f"[image: {part.path}]")
        elif isinstance(part, (schemas.AudioInput, schemas.LocalAudioInput)):
            counts["attachments"] += 1
            path = getattr(part, "path", None)
            url = getattr(part, "url", None)
            uri = url if url and not url.startswith("data:") else None
            attachments.append(Attachment(kind="audio", path=path, uri=uri))
            markers.append(f"[audio: {path or uri}]" if (path or uri) else "[audio]")
        elif isinstance(part, schemas.SkillInput):
            counts["attachments"] += 1
            attachments.append(Attachment(kind="skill", name=part.name, path=part.path))
            markers.append(f"[skill: {part.name}]")
        elif isinstance(part, schemas.MentionInput):
            counts["attachments"] += 1
            attachments.append(Attachment(kind="mention", name=part.name, path=part.path))
            markers.append(f"[mention: {part.name}" + (f" ({part.path})]" if part.path else "]"))
        else:
            counts["user_inputs_unknown"] += 1
            found = _find_text(getattr(part, "raw", {}))
            if found:
                texts.append(found)
    text = "\n\n".join(texts)
    if markers:
        text = (text + "\n" if text else "") + " ".join(markers)
    return scrub(text, counts), attachments


def _find_text(raw: Any, depth: int = 0) -> str:
    """Best-effort text of an unknown structure: string values under text-like keys."""
    if depth > 4:
        return ""
    if isinstance(raw, str):
        return raw.strip()
    if isinstance(raw, list):
        parts = [_find_text(v, depth + 1) for v in raw]
        return "\n".join(p for p in parts if p)
    if isinstance(raw, dict):
        parts = []
        for key in _TEXT_KEYS:
            if key in raw:
                found = _find_text(raw[key], depth + 1)
                if found:
                    parts.append(found)
        return "\n".join(parts)
    return ""


def _mcp_result_text(result: dict[str, Any] | None, counts: Counter[str]) -> tuple[str, int]:
    """Text blocks of an MCP CallToolResult; images/audio are counted, never inlined."""
    if not result:
        return "", 0
    texts: list[str] = []
    media = 0
    for block in result.get("content") or []:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            texts.append(block["text"])
        elif kind in ("image", "audio"):
            media += 1
        elif kind == "resource" and isinstance(block.get("resource"), dict):
            res = block["resource"]
            if isinstance(res.get("text"), str):
                texts.append(res["text"])
            elif res.get("uri"):
                texts.append(f"[resource: {res['uri']}]")
        elif kind == "resource_link" and block.get("uri"):
            texts.append(f"[resource: {block['uri']}]")
    if not texts and result.get("structuredContent") is not None:
        texts.append(json.dumps(result["structuredContent"], ensure_ascii=False, sort_keys=True))
    return scrub("\n".join(texts), counts), media


def _content_items_text(items: Iterable[dict[str, Any]] | None, counts: Counter[str]) -> tuple[str, int]:
    """Responses/dynamic-tool content items: keep text, count (never inline) media."""
    texts: list[str] = []
    media = 0
    for block in items or []:
        if not isinstance(block, dict):
            continue
        if isinstance(block.get("text"), str):
            texts.append(block["text"])
        elif block.get("type") in ("input_image", "inputImage", "input_audio", "inputAudio"):
            media += 1
    return scrub("\n".join(texts), counts), media


def _change_edits(change: Any) -> list[FileEdit]:
    """A FileChange as edits: its unified diff's removed and added lines (an added file's
    content is the diff itself when it has no hunks), at the path it ends up at."""
    kind = change.kind.get("type") if isinstance(change.kind, dict) else change.kind
    move = change.kind.get("move_path") if isinstance(change.kind, dict) else None
    path = move or change.path
    diff = change.diff or ""
    if kind == "delete":
        return [FileEdit(path=path, op="delete", abs_path=resolve(path, None))]
    if "@@" in diff:
        found = patch_edits(f"--- a/{path}\n+++ b/{path}\n{diff}" if "+++ " not in diff else diff, None)
        return [FileEdit(path=path, op="write" if kind == "add" else "patch", old_text=e.old_text,
                         new_text=e.new_text, abs_path=resolve(path, None), truncated=e.truncated)
                for e in found]
    if kind == "add":
        return [FileEdit(path=path, op="write", new_text=diff, abs_path=resolve(path, None))]
    return []


class _Builder:
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
        ts = _ms(getattr(item, "started_at_ms", None) or getattr(item, "completed_at_ms", None))
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
        for kind, handle in _ITEM_KINDS:
            if isinstance(item, kind):
                handle(self, turn, item, index)
                return
        self._unknown(turn, item, index)

    # messages

    def _user(self, turn: schemas.Turn, item: schemas.UserMessageItem, index: int) -> None:
        text, attachments = _user_message(item, self.counts)
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
        edits = [e.as_meta() for change in item.changes for e in _change_edits(change)]
        self.counts["file_edits"] += len(edits)
        self._tool(turn, item, index, "apply_patch", {"files": paths},
                   "files: " + ", ".join(paths) + "\n" + "\n\n".join(diffs), None, status=item.status,
                   meta={"edits": edits} if edits else None)

    def _mcp_call(self, turn: schemas.Turn, item: schemas.McpToolCallItem, index: int) -> None:
        result, media = _mcp_result_text(item.result, self.counts)
        error = (item.error or {}).get("message") if item.error else None
        if error:
            result = (result + "\n" if result else "") + f"Error: {error}"
        self._tool(turn, item, index, f"{item.server}.{item.tool}", item.arguments,
                   _json_text(item.arguments), result,
                   status=item.status, meta={"server": item.server, "media_omitted": media or None})

    def _dynamic_call(self, turn: schemas.Turn, item: schemas.DynamicToolCallItem, index: int) -> None:
        name = f"{item.namespace}.{item.tool}" if item.namespace else item.tool
        result, media = _content_items_text(item.content_items, self.counts)
        self._tool(turn, item, index, name, item.arguments, _json_text(item.arguments), result,
                   status=item.status, meta={"success": item.success, "media_omitted": media or None})

    def _function_output(
        self, turn: schemas.Turn, item: schemas.FunctionCallOutputItem, index: int
    ) -> None:
        if isinstance(item.output, list):
            body, media = _content_items_text(item.output, self.counts)
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
        results = _find_text(item.results) if item.results else None
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
        text = scrub(_find_text({k: v for k, v in raw.items() if k != "type"}), self.counts)
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


_ITEM_KINDS: tuple[tuple[type, Callable[[_Builder, schemas.Turn, Any, int], None]], ...] = (
    (schemas.UserMessageItem, _Builder._user),
    (schemas.AgentMessageItem, _Builder._agent),
    (schemas.ReasoningItem, _Builder._reasoning),
    (schemas.PlanItem, _Builder._plan),
    (schemas.CommandExecutionItem, _Builder._command),
    (schemas.FileChangeItem, _Builder._file_change),
    (schemas.McpToolCallItem, _Builder._mcp_call),
    (schemas.DynamicToolCallItem, _Builder._dynamic_call),
    (schemas.FunctionCallOutputItem, _Builder._function_output),
    (schemas.WebSearchItem, _Builder._web_search),
    (schemas.ImageViewItem, _Builder._image_view),
    (schemas.ImageGenerationItem, _Builder._image_generation),
    (schemas.CollabAgentToolCallItem, _Builder._collab_call),
    (schemas.SubAgentActivityItem, _Builder._sub_agent),
    (schemas.HookPromptItem, _Builder._hook_prompt),
    (schemas.EnteredReviewModeItem, _Builder._review_start),
    (schemas.ExitedReviewModeItem, _Builder._review_end),
    (schemas.ContextCompactionItem, _Builder._compaction),
    (schemas.SleepItem, _Builder._sleep),
)
"""Which method turns an item of each kind into turns, tried in order (`isinstance`); any
other item is an UnknownItem (`_Builder._unknown`)."""


def _last_activity(turns: list[schemas.Turn]) -> Any:
    stamps: list[int] = []
    for turn in turns:
        if turn.completed_at:
            stamps.append(turn.completed_at * 1000)
        elif turn.started_at:
            stamps.append(turn.started_at * 1000)
        for item in turn.items:
            value = getattr(item, "completed_at_ms", None) or getattr(item, "started_at_ms", None)
            if value:
                stamps.append(value)
    return _ms(max(stamps)) if stamps else None


def thread_to_conversation(
    thread: schemas.Thread, turns: list[schemas.Turn] | None = None, options: NormalizeOptions | None = None
) -> tuple[ConversationDoc, Counter[str]]:
    """Build the document of one thread from its (validated) turns, in chronological order.

    `turns` defaults to `thread.turns` (what `thread/read includeTurns` returns).
    """
    options = options or NormalizeOptions()
    turns = thread.turns if turns is None else turns
    builder = _Builder(thread, options)
    for turn in turns:
        builder.counts["codex_turns"] += 1
        if turn.status and turn.status != "completed":
            builder.counts[f"codex_turns_{turn.status}"] += 1
        for index, item in enumerate(turn.items):
            builder.item(turn, item, index)
        builder.turn_error(turn)

    git = thread.git_info
    link_extra = {"git_origin_url": git.origin_url} if git and git.origin_url else {}
    links = ConversationLinks(repo_paths=[thread.cwd] if thread.cwd else [], **link_extra)

    kind = schemas.source_kind(thread.source)
    metadata: dict[str, Any] = {
        "model": thread.model,
        "model_provider": thread.model_provider,
        "cli_version": thread.cli_version,
        "originator": thread.originator,
        "source_kind": kind,
        "source": thread.source if isinstance(thread.source, (dict, str)) else None,
        "history_mode": thread.history_mode,
        "forked_from_id": thread.forked_from_id,
        "parent_thread_id": thread.parent_thread_id,
        "agent_nickname": thread.agent_nickname,
        "agent_role": thread.agent_role,
        "session_id": thread.session_id,
        "reasoning_effort": thread.reasoning_effort,
        "name": thread.name,
        "rollout_path": thread.path,
        "server_updated_at": thread.updated_at,
        "codex_turns": len(turns),
    }
    if git:
        metadata["git"] = {"sha": git.sha, "branch": git.branch, "origin_url": git.origin_url}
    metadata = {k: v for k, v in metadata.items() if v is not None}

    last = _last_activity(turns)
    updated = to_utc(thread.updated_at)
    doc = ConversationDoc(
        source=SOURCE,
        source_type=SOURCE_TYPE,
        source_uri=source_uri_for(thread.id),
        doc_id=thread_doc_id(SOURCE_TYPE, thread.id),
        thread_id=thread.id,
        title=make_title(thread),
        created_at=to_utc(thread.created_at),
        # The server's updatedAt of a never-indexed legacy rollout is the file's mtime (a copy
        # shows the copy time), so the newest content timestamp wins when there is one.
        updated_at=last or updated,
        turns=builder.turns,
        links=links,
        metadata=metadata,
    )
    return doc, builder.counts
