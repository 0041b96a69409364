"""Agent transcripts (`<cfg>/projects/<slug>/agent-transcripts/`) as conversations: the plain
text form (`<id>.txt`) and the JSONL form (`<id>.jsonl`, `<id>/<id>.jsonl`, sub-agents in
`<id>/subagents/<child>.jsonl`). The session id is the file's stem (the IDE's composer id,
the CLI's agent id). Neither form records the project folder: it is the ancestor of the
session's tool paths whose slug is the folder name above `agent-transcripts`. Times: the
JSONL form has the user's `<timestamp>` lines; the text form has none, so the file's mtime
stands for every turn.
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from chinvex.models import ConversationDoc, Turn
from chinvex.models.sources import ParseReport, SourceError, UnrecognisedSource
from chinvex_adapters.kit.jsonl import partial_tail_warning, read_jsonl
from chinvex_adapters.kit.sessionfile import conversation
from chinvex_adapters.kit.sniff import first_objects, head_bytes
from chinvex_adapters.kit.text import searchable, truncate_middle
from chinvex_adapters.kit.turns import TOOL_OUTPUT, ConversationBuilder

from .edits import PATH_KEYS, cursor_edits
from .layout import TRANSCRIPTS_DIR, TranscriptPlace, cwd_from_slug, transcript_place
from .messages import Facts, MessageReader, paths_in
from .txt import Block, split_blocks
from .usertext import parse_user_text

AGENT = "cursor"
TXT_LABEL = "Cursor agent transcript"
MAX_BYTES = 256 * 1024 * 1024
FOREIGN_KEYS = frozenset({"uuid", "parentUuid", "sessionId", "session_id", "timestamp", "payload",
                          "cwd", "parentId", "id", "dir", "projectHash"})
LINE_TYPES = frozenset({"turn_ended", "user_message", "assistant_message", "tool_call", "tool_result"})


# -- sniffing ------------------------------------------------------------------------------

def is_txt_transcript(path: Path) -> bool:
    head = head_bytes(path, 4096).decode("utf-8", "replace").lstrip("\ufeff").replace("\r\n", "\n")
    lines = head.split("\n", 2)
    return len(lines) >= 2 and lines[0] == "user:" and lines[1].startswith(("<", "[Image]"))


def _cursor_line(record: dict[str, Any]) -> bool:
    if FOREIGN_KEYS & record.keys():
        return False
    message = record.get("message")
    if record.get("role") in ("user", "assistant") and isinstance(message, dict):
        return "content" in message and "role" not in message and "parts" not in message
    kind = record.get("type")
    return isinstance(kind, str) and kind in LINE_TYPES


def is_jsonl_transcript(path: Path) -> bool:
    """Top-level `role` with a `message` holding only `content` (no envelope ids, times or
    cwd as Claude Code, Qwen, Gemini, Pi or Codex write), or `turn_ended` lines: every first
    record so; in an `agent-transcripts` folder, one so and none with another's envelope."""
    if not path.name.endswith(".jsonl"):
        return False
    records = first_objects(path, 6)
    if not records:
        return False
    if TRANSCRIPTS_DIR in path.parts:
        return any(_cursor_line(r) for r in records) and not any(FOREIGN_KEYS & r.keys() for r in records)
    return all(_cursor_line(r) for r in records)


# -- shared --------------------------------------------------------------------------------

def _mtime(path: Path) -> datetime:
    try:
        return datetime.fromtimestamp(path.stat().st_mtime, timezone.utc)
    except OSError as exc:
        raise SourceError(f"{path}: cannot read: {exc.strerror or exc}") from None


def _read_text(path: Path) -> str:
    try:
        size = path.stat().st_size
        if size > MAX_BYTES:
            raise UnrecognisedSource(f"{path}: not read as a {TXT_LABEL} ({size:,} bytes, over the "
                                     f"{MAX_BYTES:,}-byte limit)")
        return path.read_bytes().decode("utf-8", "replace")
    except OSError as exc:
        raise SourceError(f"{path}: cannot read: {exc.strerror or exc}") from None


def _metadata(place: TranscriptPlace, form: str, facts: Facts) -> dict[str, Any]:
    meta: dict[str, Any] = {"store": "agent_transcript", "transcript_format": form,
                            "layout": place.layout}
    if place.slug:
        meta["project_slug"] = place.slug
    if place.parent_id:
        meta["parent_thread_id"] = place.parent_id
        meta["subagent"] = True
    if facts.subagents:
        meta["subagents"] = facts.subagents[:50]
    if facts.links:
        meta["links"] = list(dict.fromkeys(facts.links))[:50]
    if facts.context_tags:
        meta["context_tags"] = facts.context_tags
    if facts.images:
        meta["pasted_images"] = facts.images
    return meta


def _finish(path: Path, place: TranscriptPlace, turns: list[Turn], cwd: str | None,
            metadata: dict[str, Any], mtime: datetime) -> ConversationDoc | None:
    doc = conversation(agent=AGENT, source_uri=str(path), thread_id=place.thread_id, turns=turns,
                       cwd=cwd, metadata=metadata)
    if doc is not None and (doc.updated_at is None or doc.updated_at < mtime):
        doc.updated_at = mtime  # the file was last written then (the last turns carry no time)
    return doc


# -- the plain-text form -------------------------------------------------------------------

def _txt_paths(blocks: list[Block]) -> list[str]:
    found: list[str] = []
    for block in blocks:
        for event in block.events:
            if event.call is not None and event.kind == "call":
                found.extend(v for k in (*PATH_KEYS, "target_directory", "working_directory")
                             if isinstance(v := event.call.args.get(k), str))
    return found


def _attach_output(turn: Turn, output: str, report: ParseReport) -> None:
    body, cut = truncate_middle(output, *TOOL_OUTPUT)
    report.counts["tool_outputs_truncated"] += 1 if cut else 0
    turn.text = searchable(f"{turn.text}\n\nResult:\n{body}")


def _txt_assistant(block: Block, b: ConversationBuilder, facts: Facts, report: ParseReport) -> None:
    """One assistant block: results pair with the block's calls by position."""
    waiting: list[Turn] = []
    for event in block.events:
        tid = f"L{event.line}"
        if event.kind == "thinking":
            b.thinking(event.text, turn_id=tid)
        elif event.kind == "text":
            b.message("assistant", event.text, turn_id=tid)
        elif event.kind == "call" and event.call is not None:
            call = event.call
            if call.name == "Task":
                facts.subagents.append({k: call.args[k] for k in ("subagent_type", "description", "model")
                                        if k in call.args})
            waiting.append(b.tool_call(call.name, call.args, turn_id=tid,
                                       edits=cursor_edits(call.name, call.args, b.cwd)))
        elif event.kind == "result" and event.call is not None:
            if not waiting:
                report.counts["tool_results_unmatched"] += 1
                continue
            turn = waiting.pop(0)
            turn.meta["status"] = "completed"
            if turn.tool is not None and turn.tool.name != event.call.name:
                report.counts["tool_results_name_mismatch"] += 1
            if event.text.strip():
                _attach_output(turn, event.text, report)
    for turn in waiting:
        turn.meta["status"] = "no result recorded"
        report.counts["tool_calls_without_result"] += 1


def parse_txt(path: Path, report: ParseReport) -> ConversationDoc | None:
    text = _read_text(path)
    mtime = _mtime(path)
    if not text.strip():
        raise UnrecognisedSource(f"{path}: not a {TXT_LABEL} (empty file)")
    blocks, before = split_blocks(text)
    if not blocks:
        raise UnrecognisedSource(f"{path}: not a {TXT_LABEL} (no 'user:' or 'assistant:' block)")
    if before:
        report.counts["lines_before_first_block"] += before
    place = transcript_place(path)
    cwd = cwd_from_slug(place.slug, _txt_paths(blocks))
    b = ConversationBuilder(report.counts, cwd=cwd)
    facts = Facts()
    for block in blocks:
        if block.role == "user":
            found = parse_user_text("\n".join(block.lines))
            facts.links.extend(found.links)
            facts.images += found.images
            facts.context_tags.extend(t for t in found.context if t not in facts.context_tags)
            b.message("user", found.text, turn_id=f"L{block.line}", attachments=found.attachments)
        else:
            _txt_assistant(block, b, facts, report)
    turns = b.finish(fallback_ts=mtime)
    metadata = _metadata(place, "txt", facts)
    metadata["time_source"] = "file mtime (the transcript records no times)"
    return _finish(path, place, turns, cwd, metadata, mtime)


# -- the JSONL form ------------------------------------------------------------------------

def _entries(path: Path, report: ParseReport) -> tuple[list[tuple[int, str, Any]], list[str]]:
    """(line number, role, content) of each message line, and the statuses of ended turns."""
    try:
        read = read_jsonl(path, report.counts)
    except OSError as exc:
        raise SourceError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if not read.lines:
        if read.invalid or read.partial_tail:
            raise UnrecognisedSource(f"{path}: not a {TXT_LABEL} (no complete JSON line)")
        raise UnrecognisedSource(f"{path}: not a {TXT_LABEL} (empty file)")
    entries: list[tuple[int, str, Any]] = []
    ended: list[str] = []
    for line in read.lines:
        data = line.data
        message = data.get("message")
        role = data.get("role")
        kind = data.get("type")
        if role in ("user", "assistant", "system") and isinstance(message, dict):
            entries.append((line.line_no, role, message.get("content")))
        elif kind == "turn_ended":
            ended.append(str(data.get("status") or "unknown"))
        elif kind in ("user_message", "assistant_message"):
            content = message.get("content") if isinstance(message, dict) else data.get("text")
            entries.append((line.line_no, kind.split("_")[0], content))
        elif kind == "tool_call":
            entries.append((line.line_no, "assistant", [{"type": "tool_use", "name": data.get("name") or data.get("tool_name"),
                                                         "input": data.get("input") or data.get("args")}]))
        elif kind == "tool_result":
            entries.append((line.line_no, "tool", [{"type": "tool_result", "name": data.get("name"),
                                                    "content": data.get("output", data.get("result"))}]))
        else:
            report.counts[f"lines_unknown_type:{str(kind or role)[:40]}"] += 1
    if read.partial_tail:
        report.warnings.append(partial_tail_warning(path))
    return entries, ended


def parse_jsonl(path: Path, report: ParseReport) -> ConversationDoc | None:
    mtime = _mtime(path)
    entries, ended = _entries(path, report)
    if not any(role in ("user", "assistant") for _, role, _ in entries):
        raise UnrecognisedSource(f"{path}: not a {TXT_LABEL} (no user or assistant line)")
    place = transcript_place(path)
    cwd = cwd_from_slug(place.slug, paths_in([(r, c) for _, r, c in entries]))
    b = ConversationBuilder(report.counts, cwd=cwd)
    facts = Facts()
    reader = MessageReader(b, facts)
    for line_no, role, content in entries:
        try:
            reader.add(role, content, turn_id=f"L{line_no}")
        except (TypeError, ValueError, KeyError, AttributeError, RecursionError):
            report.counts["lines_failed"] += 1  # one odd line must not cost the session
    stamped = any(t.ts is not None for t in b.turns)
    turns = b.finish(fallback_ts=mtime)
    metadata = _metadata(place, "jsonl", facts)
    if ended:
        metadata["turns_ended"] = {s: ended.count(s) for s in dict.fromkeys(ended)}
    if not stamped:
        metadata["time_source"] = "file mtime (no <timestamp> in the prompts)"
    if facts.workspace and not cwd:
        cwd = facts.workspace
    return _finish(path, place, turns, cwd, metadata, mtime)
