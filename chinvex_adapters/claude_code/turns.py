"""Claude Code records (already on the chosen branch, in order) → `Turn`s.

- One API message is written as several lines sharing `message.id` (one per content block):
  they are merged into one assistant turn, and their repeated `usage` is counted once.
- A `tool_use` block and the `tool_result` that answers it (matched by id) become one
  `role="tool"` turn whose text holds the readable call and the result, head and tail kept
  when long: the chunker reads only `Turn.text`, so what must be findable goes there.
- Thinking text is kept (marked `[thinking]`): it is often where the reason for a change is
  written down. Signatures and `redacted_thinking` never are.
- Post-compaction summaries (`isCompactSummary`) become one system turn each distinct text.
- Injected user records (`isMeta`: caveats, command output) and interrupt markers are skipped.
- A prompt queued while the agent worked and read by the model mid-turn (tree.queued_prompts,
  tree.queued_commands) is a user turn marked `queued`.
- A sub-agent's message known only from a `progress` record (tree.subagent_progress) becomes
  the turn it would be in the sub-agent's transcript, marked `sidechain` with its `agent_id`.
- Images and documents become `Attachment`s; their base64 never reaches a turn.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from datetime import datetime
from typing import Any

from chinvex.ids import sha256_hex
from chinvex.models import Attachment, ToolCall, Turn
from chinvex.timeutil import to_utc
from chinvex_adapters.kit.edits import edits_from_call
from chinvex_adapters.kit.text import as_str, clean_text, fill_times, searchable, truncate_middle
from chinvex_adapters.kit.turns import dump, small_input

from .records import Record
from .tree import progress_message, queued_command

TOOL_INPUT_VALUE = (1200, 300)
TOOL_OUTPUT = (2000, 1000)
_INTERRUPT = re.compile(r"^\[Request interrupted by user[^\]]*\]$")
_SERVER_RESULT = re.compile(r"^[a-z_]+_tool_result$")


def _d(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _media_attachment(block: dict[str, Any], kind: str) -> Attachment:
    source = _d(block.get("source"))
    size = source.get("data_chars")
    return Attachment(
        kind=kind,
        name=as_str(block.get("title")),
        mime_type=as_str(source.get("media_type")),
        uri=as_str(source.get("url")) or as_str(source.get("file_id")),
        size_bytes=(size * 3) // 4 if isinstance(size, int) and not isinstance(size, bool) else None,
    )


class TurnBuilder:
    def __init__(self, counts: Counter[str], *, include_thinking: bool = True) -> None:
        self.counts = counts
        self.include_thinking = include_thinking
        self.turns: list[Turn] = []
        self._ids: set[str] = set()
        self._calls: dict[str, Turn] = {}
        self._unanswered: list[Turn] = []
        self._group_id: str | None = None
        self._group_turn: Turn | None = None
        self._compact_seen: set[str] = set()
        self.usage: dict[str, dict[str, Any]] = {}
        self.models: Counter[str] = Counter()
        # attachment / progress records chosen to become turns (tree.Selection.rendered)
        self.rendered: set[int] = set()

    # -- helpers -------------------------------------------------------------------------
    def _turn_id(self, record: Record, suffix: str = "") -> str:
        base = as_str(record.data.get("uuid")) or f"line-{record.line_no}"
        candidate = base + suffix
        n = 1
        while candidate in self._ids:
            n += 1
            candidate = f"{base}{suffix}#{n}"
        self._ids.add(candidate)
        return candidate

    @staticmethod
    def _ts(record: Record) -> datetime | None:
        value = record.data.get("timestamp")
        return to_utc(value) if isinstance(value, str | int | float) and not isinstance(value, bool) else None

    def _blocks(self, message: dict[str, Any]) -> Iterator[str | dict[str, Any]]:
        """A message's content blocks in order: a string content is one block; a block that is
        neither a string nor a mapping is counted as unknown and passed over."""
        content = message.get("content")
        blocks = [content] if isinstance(content, str) else content if isinstance(content, list) else []
        for block in blocks:
            if isinstance(block, (str, dict)):
                yield block
            else:
                self.counts["blocks_unknown"] += 1

    def _unknown_block_text(self, block: dict[str, Any]) -> str | None:
        """A block of a type not known here is counted by its type; its text, if it has one,
        is still kept."""
        self.counts[f"blocks_unknown:{str(block.get('type'))[:40]}"] += 1
        text = block.get("text")
        return text if isinstance(text, str) else None

    def _close_group(self) -> None:
        self._group_id = None
        self._group_turn = None

    # -- dispatch ------------------------------------------------------------------------
    def add(self, record: Record) -> None:
        kind = record.type
        if kind == "user":
            self._user(record)
        elif kind == "assistant":
            self._assistant(record)
        elif kind == "queue-operation":  # chosen by tree.queued_prompts
            self._queued(record)
        elif kind == "attachment" and record.pos in self.rendered:  # tree.queued_commands
            self._queued_command(record)
        elif kind == "progress" and record.pos in self.rendered:  # tree.subagent_progress
            self._progress(record)
        elif kind == "tool_use":  # drift: a call written as its own record
            self._call(record, {"id": record.data.get("id") or record.data.get("uuid"),
                                "name": record.data.get("name"), "input": record.data.get("input")})
        elif kind == "tool_result":  # drift: a result written as its own record
            self._result(record, {
                "tool_use_id": record.data.get("tool_use_id"),
                "content": record.data.get("output", record.data.get("content")),
                "is_error": record.data.get("is_error"),
            }, tool_name=as_str(record.data.get("name")))

    # -- user ----------------------------------------------------------------------------
    def _user(self, record: Record) -> None:
        message = _d(record.data.get("message"))
        texts: list[str] = []
        attachments: list[Attachment] = []
        for block in self._blocks(message):
            if isinstance(block, str):
                texts.append(block)
                continue
            btype = block.get("type")
            if btype == "text":
                texts.append(block.get("text") if isinstance(block.get("text"), str) else "")
            elif btype == "image":
                attachments.append(_media_attachment(block, "image"))
            elif btype == "document":
                attachments.append(_media_attachment(block, "file"))
            elif btype == "tool_result":
                self._result(record, block)
            else:
                unknown = self._unknown_block_text(block)
                if unknown is not None:
                    texts.append(unknown)
        text = "\n\n".join(t.strip("\n") for t in texts if t and t.strip())
        if not text and not attachments:
            return
        data = record.data
        if data.get("isCompactSummary") is True:
            key = sha256_hex(clean_text(text))
            if key in self._compact_seen:
                self.counts["compact_summaries_repeated"] += 1
                return
            self._compact_seen.add(key)
            self._close_group()
            self.turns.append(Turn(turn_id=self._turn_id(record), ts=self._ts(record), role="system",
                                   text=searchable(text), attachments=attachments,
                                   meta={"compact_summary": True}))
            return
        if data.get("isMeta") is True:
            self.counts["user_meta_skipped"] += 1
            return
        if not attachments and _INTERRUPT.match(text.strip()):
            self.counts["interrupt_markers_skipped"] += 1
            return
        self._close_group()
        meta: dict[str, Any] = {}
        if data.get("isSidechain") is True:
            meta["sidechain"] = True
        self.turns.append(Turn(turn_id=self._turn_id(record), ts=self._ts(record), role="user",
                               text=searchable(text), attachments=attachments, meta=meta))

    def _queued(self, record: Record) -> None:
        """A prompt the user typed while the agent worked and that the model read mid-turn:
        a user turn (marked `queued`) where it was queued. It can fall between the lines of
        one assistant message, which still form one turn."""
        text = record.data.get("content")
        if not isinstance(text, str) or not text.strip():
            return
        self.counts["queued_prompts_kept"] += 1
        self.turns.append(Turn(turn_id=self._turn_id(record), ts=self._ts(record), role="user",
                               text=searchable(text.strip("\n")), meta={"queued": True}))

    def _queued_command(self, record: Record) -> None:
        """A `queued_command` attachment (2.1.80+): what was sent to the model mid-turn, a user
        turn marked `queued` (and its `command_mode` when not a typed prompt)."""
        attachment = queued_command(record)
        if attachment is None:
            return
        prompt = attachment.get("prompt")
        before = len(self.turns)
        self._user(Record(pos=record.pos, line_no=record.line_no, data={
            **{k: v for k, v in record.data.items() if k not in ("attachment", "type", "message")},
            "type": "user", "message": {"role": "user", "content": prompt}}))
        if len(self.turns) == before:
            return
        turn = self.turns[-1]
        turn.meta["queued"] = True
        mode = attachment.get("commandMode")
        if isinstance(mode, str) and mode and mode != "prompt":
            turn.meta["command_mode"] = mode[:60]
        self.counts["queued_commands_kept"] += 1

    def _progress(self, record: Record) -> None:
        """A sub-agent's message from an `agent_progress` record, read as the record it would be
        in the sub-agent's transcript (`isSidechain`); its turns carry the sub-agent's id."""
        found = progress_message(record)
        if found is None:
            return
        agent_id, message = found
        data = {**message, "isSidechain": True, "agentId": agent_id}
        if "cwd" not in data and isinstance(record.data.get("cwd"), str):
            data["cwd"] = record.data["cwd"]
        before = len(self.turns)
        inner = Record(pos=record.pos, line_no=record.line_no, data=data)
        if message.get("type") == "user":
            self._user(inner)
        else:
            self._assistant(inner)
        for turn in self.turns[before:]:  # text merged into an earlier turn is that agent's too
            turn.meta["agent_id"] = agent_id[:80]
        self.counts["subagent_progress_messages"] += 1

    # -- assistant -----------------------------------------------------------------------
    def _assistant(self, record: Record) -> None:
        message = _d(record.data.get("message"))
        message_id = as_str(message.get("id"))
        if message_id is None or message_id != self._group_id:
            self._group_id = message_id
            self._group_turn = None
        elif message_id is not None:
            self.counts["assistant_lines_merged"] += 1
        usage = message.get("usage")
        if message_id and isinstance(usage, dict):
            self.usage[message_id] = usage  # repeated on every line: the last one is complete
        model = as_str(message.get("model"))
        if model and model != "<synthetic>":
            self.models[model] += 1
        for block in self._blocks(message):
            if isinstance(block, str):
                self._assistant_text(record, block, model)
                continue
            btype = block.get("type")
            if btype == "text":
                self._assistant_text(record, block.get("text"), model)
            elif btype == "thinking":
                thinking = block.get("thinking")
                if self.include_thinking and isinstance(thinking, str) and thinking.strip():
                    self._assistant_text(record, f"[thinking]\n{thinking}", model, thinking=True)
                else:
                    self.counts["thinking_blocks_skipped"] += 1
            elif btype == "redacted_thinking":
                self.counts["redacted_thinking_skipped"] += 1
            elif btype in ("tool_use", "server_tool_use", "mcp_tool_use"):
                self._call(record, block)
            elif isinstance(btype, str) and _SERVER_RESULT.match(btype):
                self._result(record, block)
            else:
                unknown = self._unknown_block_text(block)
                if unknown is not None:
                    self._assistant_text(record, unknown, model)

    def _assistant_text(self, record: Record, text: Any, model: str | None, thinking: bool = False) -> None:
        if not isinstance(text, str) or not text.strip():
            return
        turn = self._group_turn
        if turn is None:
            meta: dict[str, Any] = {}
            if self._group_id:
                meta["message_id"] = self._group_id
            if model:
                meta["model"] = model
            if record.data.get("isApiErrorMessage") is True:
                meta["api_error"] = True
            if record.data.get("isSidechain") is True:
                meta["sidechain"] = True
            turn = Turn(turn_id=self._turn_id(record), ts=self._ts(record), role="assistant", meta=meta)
            self.turns.append(turn)
            self._group_turn = turn
        if thinking:
            turn.meta["thinking"] = True
        turn.text = searchable(f"{turn.text}\n\n{text.strip()}" if turn.text else text.strip())

    # -- tools ---------------------------------------------------------------------------
    def _call(self, record: Record, block: dict[str, Any]) -> None:
        name = as_str(block.get("name")) or "tool"
        call_id = as_str(block.get("id"))
        raw_input = block.get("input")
        lines = [f"Tool call: {name}"]
        if isinstance(raw_input, dict):
            for key, value in raw_input.items():
                text = value if isinstance(value, str) else dump(value)
                text, cut = truncate_middle(clean_text(text), *TOOL_INPUT_VALUE)
                if cut:
                    self.counts["tool_inputs_truncated"] += 1
                lines.append(f"{clean_text(str(key))}: {text}")
        elif raw_input is not None:
            text, cut = truncate_middle(clean_text(dump(raw_input)), *TOOL_INPUT_VALUE)
            if cut:
                self.counts["tool_inputs_truncated"] += 1
            lines.append(text)
        meta: dict[str, Any] = {}
        if call_id:
            meta["tool_use_id"] = call_id
        if record.data.get("isSidechain") is True:
            meta["sidechain"] = True
        cwd = record.data.get("cwd")
        edits = edits_from_call(name, raw_input, cwd if isinstance(cwd, str) else None)
        if edits:  # Edit, MultiEdit, Write, NotebookEdit: what blame matches lines against
            meta["edits"] = [e.as_meta() for e in edits]
            self.counts["file_edits"] += len(edits)
        suffix = f":{call_id}" if call_id else ":tool"
        turn = Turn(turn_id=self._turn_id(record, suffix), ts=self._ts(record), role="tool",
                    text=searchable("\n".join(lines)),
                    tool=ToolCall(name=name, input=small_input(raw_input)), meta=meta)
        self.turns.append(turn)
        if call_id:
            self._calls.setdefault(call_id, turn)
        self._unanswered.append(turn)

    def _render_result(self, content: Any) -> tuple[str, list[Attachment]]:
        attachments: list[Attachment] = []
        pieces: list[str] = []
        items = content if isinstance(content, list) else [content]
        for item in items:
            if item is None:
                continue
            if isinstance(item, str):
                pieces.append(item)
            elif isinstance(item, dict):
                itype = item.get("type")
                if itype == "text" and isinstance(item.get("text"), str):
                    pieces.append(item["text"])
                elif itype == "image":
                    attachments.append(_media_attachment(item, "image"))
                elif itype == "document":
                    attachments.append(_media_attachment(item, "file"))
                elif isinstance(item.get("title"), str) and isinstance(item.get("url"), str):
                    pieces.append(f"{item['title']} <{item['url']}>")  # web search results
                else:
                    pieces.append(dump(item))
            else:
                pieces.append(dump(item))
        return "\n".join(p for p in pieces if p), attachments

    def _result(self, record: Record, block: dict[str, Any], tool_name: str | None = None) -> None:
        call_id = as_str(block.get("tool_use_id"))
        target = self._calls.get(call_id) if call_id else None
        if target is None and call_id is None:
            candidates = [t for t in self._unanswered if tool_name is None or
                          (t.tool is not None and t.tool.name.lower() == tool_name.lower())]
            target = candidates[0] if candidates else None
        body, attachments = self._render_result(block.get("content"))
        if not body.strip():
            extra = record.data.get("toolUseResult")
            if isinstance(extra, dict):
                body = "\n".join(v for k, v in extra.items() if k in ("stdout", "stderr")
                                 and isinstance(v, str) and v.strip())
            elif isinstance(extra, str):
                body = extra
        if not body.strip() and isinstance(block.get("text"), str):
            body = block["text"]
        body, cut = truncate_middle(clean_text(body).strip("\n"), *TOOL_OUTPUT)
        if cut:
            self.counts["tool_outputs_truncated"] += 1
        is_error = block.get("is_error") is True
        label = "Result (error)" if is_error else "Result"
        piece = f"{label}:\n{body}" if body.strip() else f"{label}: (no output)"
        if target is not None:
            target.text = searchable(f"{target.text}\n\n{piece}")
            target.attachments.extend(attachments)
            if is_error:
                target.meta["is_error"] = True
            self._unanswered = [t for t in self._unanswered if t is not target]
            return
        self.counts["tool_results_unmatched"] += 1
        meta: dict[str, Any] = {"unmatched_result": True}
        if call_id:
            meta["tool_use_id"] = call_id
        if is_error:
            meta["is_error"] = True
        name = tool_name or "tool"
        self.turns.append(Turn(turn_id=self._turn_id(record, ":result"), ts=self._ts(record),
                               role="tool", text=searchable(f"Tool result: {name}\n{piece}"),
                               tool=ToolCall(name=name), attachments=attachments, meta=meta))

    # -- end -----------------------------------------------------------------------------
    def finish(self) -> list[Turn]:
        for turn in self.turns:
            message_id = turn.meta.get("message_id")
            usage = self.usage.get(message_id) if message_id else None
            if usage:
                tokens = {k: usage[k] for k in ("input_tokens", "output_tokens",
                          "cache_read_input_tokens", "cache_creation_input_tokens")
                          if isinstance(usage.get(k), int) and not isinstance(usage.get(k), bool)}
                if tokens:
                    turn.meta["tokens"] = tokens
        fill_times(self.turns, None)
        return self.turns

    def usage_totals(self) -> dict[str, int]:
        totals: Counter[str] = Counter()
        for usage in self.usage.values():
            for key in ("input_tokens", "output_tokens", "cache_read_input_tokens",
                        "cache_creation_input_tokens"):
                value = usage.get(key)
                if isinstance(value, int) and not isinstance(value, bool):
                    totals[key] += value
        return dict(totals)
