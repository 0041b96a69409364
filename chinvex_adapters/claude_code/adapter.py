"""The `claude_code` adapter: Claude Code transcripts under `claude_session_roots`
(typically `~/.claude/projects`), one `ConversationDoc` per transcript file, and the project
memory files beside them (`<project>/memory/*.md`, see memory.py), one note each.

Thread ids: a main session is its session uuid (the file name, which Claude Code derives from
the session id; the `sessionId` inside the records when the name is not a uuid). A sub-agent
is `<parent session id>/agent-<agent id>`, so it never collides with its parent and sorts
beside it; its parent comes from the folder (2.1.x layout) or from its records (older).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from chinvex.files.walk import absolute_root
from chinvex.fmt import noun
from chinvex.ids import thread_doc_id
from chinvex.models import ConversationDoc, ConversationLinks
from chinvex.models.sources import (
    AdapterDefaults,
    AdapterOptions,
    ParsedDoc,
    ParseReport,
    SkippedSource,
    SourceCandidate,
    SourceError,
    UnrecognisedSource,
)
from chinvex_adapters.kit.jsonl import partial_tail_warning
from chinvex_adapters.kit.sniff import first_objects
from chinvex_adapters.kit.text import as_str, clean_text, json_safe, one_line
from chinvex_adapters.kit.textfile import DEFAULT_MAX_FILE_BYTES
from chinvex_adapters.kit.walk import WalkEntry, walk
from chinvex_adapters.walked import source_candidate, walked_sources

from .layout import NOT_TRANSCRIPTS, classify, is_uuid, read_sidecar
from .memory import CLAUDE_MEMORY_SOURCE_TYPE, is_memory_file, memory_extra, parse_memory
from .records import ReadResult, Record, read_records
from .tree import Selection, is_content, select
from .turns import TurnBuilder

SOURCE = "claude_code"
SOURCE_TYPE = "agent_session"
MAX_LISTED = 10
MAX_WARNINGS = 10


def _looks_like_path(value: str) -> bool:
    return value.startswith(("/", "~", "\\\\")) or (len(value) > 2 and value[1] == ":" and value[2] in "\\/")


def _distinct(values: list[str], limit: int = MAX_LISTED) -> list[str]:
    out: list[str] = []
    for value in values:
        if value not in out:
            out.append(value)
            if len(out) >= limit:
                break
    return out


def _strings(records: list[Record], key: str) -> list[str]:
    return [clean_text(v) for r in records if isinstance(v := r.data.get(key), str) and v.strip()]


def _recognisable(record: Record) -> bool:
    return bool(record.type) or "message" in record.data or "uuid" in record.data


def _skip_category(record: Record) -> str:
    kind = record.type or "untyped"
    if kind == "system" and isinstance(record.data.get("subtype"), str):
        kind = f"system/{record.data['subtype']}"
    return kind[:60]


class ClaudeCodeAdapter(AdapterDefaults):
    name = "claude_code"
    source_type = SOURCE_TYPE
    parser_version = "claude_code_v3"  # v2: file edits as data; v3: parallel tool calls, glued lines, queued prompts kept
    include_key = "claude_session_roots"

    def enumerate(
        self, root: Path, options: AdapterOptions
    ) -> Iterator[SourceCandidate | SkippedSource]:
        root_str = str(Path(root).expanduser().absolute())
        walked = absolute_root(root)  # as `walk` sees it
        anchor = (walked.parent if walked.is_file() else walked).name
        include_thinking = bool(options.settings.get("claude_code_include_thinking", True))
        yield from walked_sources(walk(Path(root), options.excludes), self.source_type,
                                  lambda entry: self._source(entry, root_str, anchor, include_thinking))

    def _source(
        self, entry: WalkEntry, root: str, anchor: str, include_thinking: bool
    ) -> SourceCandidate | SkippedSource:
        """What a file the walk kept becomes: a transcript or memory candidate, or the reason
        it is neither."""
        uri = str(entry.path)
        name = entry.path.name
        if is_memory_file(anchor, entry.rel):
            return self._memory_candidate(entry, root)
        if not name.endswith(".jsonl"):
            if name.endswith(".meta.json") and entry.path.parent.name == "subagents":
                return SkippedSource(uri, self.source_type, "ignored",
                                     "sub-agent metadata, read with its transcript")
            return SkippedSource(uri, self.source_type, "not_supported",
                                 "not a Claude Code transcript (*.jsonl) or memory file "
                                 "(memory/*.md)")
        if name in NOT_TRANSCRIPTS:
            return SkippedSource(uri, self.source_type, "not_supported", NOT_TRANSCRIPTS[name])
        layout = classify(entry.path)
        extra: dict[str, Any] = {"layout": layout.kind, "include_thinking": include_thinking}
        if layout.agent_id:
            extra["agent_id"] = layout.agent_id
        if layout.parent_session_id:
            extra["parent_session_id"] = layout.parent_session_id
        return source_candidate(entry, source_type=self.source_type, adapter=self.name, root=root,
                                extra=extra)

    def _memory_candidate(self, entry: WalkEntry, root: str) -> SourceCandidate | SkippedSource:
        uri = str(entry.path)
        if entry.size_bytes is not None and entry.size_bytes > DEFAULT_MAX_FILE_BYTES:
            return SkippedSource(uri, CLAUDE_MEMORY_SOURCE_TYPE, "too_large",
                                 f"{entry.size_bytes:,} bytes, over the "
                                 f"{DEFAULT_MAX_FILE_BYTES:,}-byte limit for memory files")
        return source_candidate(entry, source_type=CLAUDE_MEMORY_SOURCE_TYPE, adapter=self.name, root=root,
                                extra=memory_extra(entry.path, entry.rel))

    def parse(
        self, candidate: SourceCandidate, report: ParseReport, previous_state: dict[str, Any] | None
    ) -> Iterator[ParsedDoc]:
        if candidate.extra.get("kind") == "memory":
            yield parse_memory(candidate, report)
            return
        path = Path(candidate.path or candidate.source_uri).absolute()
        if not self.recognises(path):
            # Another agent's JSONL kept among Claude Code's (Qwen Code writes look-alikes):
            # read by the adapter whose format it is, else skipped below with the reason.
            from chinvex_adapters.agents import identify

            other = identify(path, exclude=self.name)
            if other is not None:
                report.counts[f"routed_to:{other.name}"] += 1
                yield from other.parse_file(path, report, candidate, previous_state)
                return
        yield from self.parse_file(path, report, candidate, previous_state)

    # -- routing by content (chinvex_adapters.agents) -------------------------------------
    def recognises(self, path: Path) -> bool:
        """A Claude Code transcript: JSONL whose first records carry Claude Code's envelope
        (a record type, and messages with Anthropic `content`, never Gemini `parts`)."""
        if not path.name.endswith(".jsonl"):
            return False
        records = first_objects(path)
        return any(_claude_record(r) for r in records) and not any(_foreign_record(r) for r in records)

    def parse_file(self, path: Path, report: ParseReport, candidate: SourceCandidate,
                   previous_state: dict[str, Any] | None) -> Iterator[ConversationDoc]:
        doc = parse_transcript(path, report,
                               include_thinking=bool(candidate.extra.get("include_thinking", True)))
        if doc is not None:
            yield doc


_CLAUDE_TYPES = frozenset({"user", "assistant", "summary", "system", "custom-title", "ai-title",
                           "file-history-snapshot", "progress", "queue-operation", "attachment"})


def _claude_record(record: dict[str, Any]) -> bool:
    kind = record.get("type")
    message = record.get("message")
    if not isinstance(kind, str):
        return False
    if kind in ("user", "assistant"):
        return isinstance(message, dict) and "content" in message
    return kind in _CLAUDE_TYPES and ("uuid" in record or "sessionId" in record or "summary" in record
                                      or "leafUuid" in record or "messageId" in record)


def _foreign_record(record: dict[str, Any]) -> bool:
    """A record of a look-alike format: Gemini-style `parts` in place of `content`."""
    message = record.get("message")
    return isinstance(message, dict) and "parts" in message and "content" not in message


def _thread_id(path: Path, records: list[Record]) -> tuple[str, dict[str, Any]]:
    layout = classify(path)
    session_ids = _distinct(_strings(records, "sessionId") + _strings(records, "session_id"))
    info: dict[str, Any] = {"layout": layout.kind}
    if session_ids:
        info["session_ids"] = session_ids
    if layout.kind == "session":
        stem = path.name[: -len(".jsonl")] if path.name.endswith(".jsonl") else path.stem
        return (stem if is_uuid(stem) else session_ids[0] if session_ids else stem), info
    agent_id = layout.agent_id or "unknown"
    agent_ids = _distinct(_strings(records, "agentId"))
    if agent_ids and agent_ids[0] != agent_id:
        info["record_agent_ids"] = agent_ids
    parent = layout.parent_session_id
    if parent is None:
        parent = next((s for s in session_ids if not s.startswith("agent-")), None)
    info["agent_id"] = agent_id
    info["parent_session_id"] = parent
    sidecar = read_sidecar(path)
    if sidecar:
        info["agent_meta"] = json_safe(sidecar)
    return f"{parent or 'unknown-session'}/agent-{agent_id}", info


def _title(
    records: list[Record], branch_uuids: set[str], counts: Counter[str]
) -> tuple[str | None, dict[str, Any]]:
    """custom-title (set by the user) > ai-title > a summary record of this branch."""
    custom = _strings([r for r in records if r.type == "custom-title"], "customTitle")
    ai = _strings([r for r in records if r.type == "ai-title"], "aiTitle")
    summaries: list[str] = []
    for record in records:
        if record.type != "summary" or not isinstance(record.data.get("summary"), str):
            continue
        leaf = record.data.get("leafUuid")
        if isinstance(leaf, str) and leaf in branch_uuids:
            summaries.append(clean_text(record.data["summary"]))
        else:
            counts["summaries_of_other_leaves"] += 1
    info: dict[str, Any] = {}
    if custom:
        info["custom_title"] = custom[-1]
    if ai:
        info["ai_title"] = ai[-1]
    if summaries:
        info["summaries"] = _distinct(summaries, 20)
    for candidates in (custom, ai, summaries):
        if candidates:
            return candidates[-1], info
    return None, info


_COMMAND_TAG = re.compile(r"<command-(name|message|args)>(.*?)</command-\1>", re.S)
_BASH_INPUT = re.compile(r"^<bash-input>(.*?)</bash-input>", re.S)
# Context the IDE extension or the harness puts before the user's words in the same message.
_INJECTED_CONTEXT = re.compile(r"^\s*<(ide_opened_file|ide_selection|system-reminder)>.*?</\1>\s*", re.S)
# What Claude Code writes as a user message for a local command's output or the caveat before
# it: never what the session is about.
_LOCAL_OUTPUT = ("<local-command-stdout>", "<local-command-stderr>", "<local-command-caveat>",
                 "<bash-stdout>", "<bash-stderr>")


def _command_line(text: str) -> tuple[str, bool] | None:
    """A slash-command user message (`<command-name>/review</command-name>
    <command-message>review</command-message><command-args>284</command-args>`, tags in either
    order; 1.0.x wrote the name without its slash) as the command line the user typed,
    `/review 284`, and whether it had arguments. None when the text is not one."""
    tags = {name: value.strip() for name, value in _COMMAND_TAG.findall(text)}
    name = tags.get("name") or tags.get("message", "").split(" ")[0]
    if not name:
        return None
    name = name if name.startswith("/") else f"/{name}"
    args = tags.get("args", "")
    return one_line(f"{name} {args}" if args else name), bool(args)


def _strip_injected_context(text: str) -> str:
    """A user message without the IDE's `<ide_opened_file>` / `<ide_selection>` notes and
    `<system-reminder>`s that come before what the user typed."""
    while (match := _INJECTED_CONTEXT.match(text)) is not None:
        text = text[match.end():]
    return text.strip()


def _title_from_user_turns(turns: list[Any]) -> str | None:
    """The title of a session with no title record: its first user request.

    A slash command with arguments (`/systematic-debugging the stop hooks are slow`) is a
    request; a bare one (`/clear`, `/ide`, `/exit`) or a shell escape is what the user ran
    before asking, so a later plain request wins and the bare command is the title only when
    nothing else was typed. A local command's output or caveat is never the title. Without
    this, about one session in twelve was titled by raw tags (`<command-name>/clear</command-name>`)."""
    fallback: str | None = None
    for turn in turns:
        if "agent_id" in turn.meta:  # a sub-agent's message read from a progress record
            continue
        text = _strip_injected_context(turn.text) if turn.role == "user" else ""
        if not text or text.startswith(_LOCAL_OUTPUT):
            continue
        command = _command_line(text) if text.startswith("<command-") else None
        if command is not None:
            line, has_args = command
            if has_args:
                return line
            fallback = fallback or line
            continue
        bash = _BASH_INPUT.match(text)
        if bash:
            fallback = fallback or one_line(f"! {bash.group(1).strip()}")
            continue
        return one_line(text) or None
    return fallback


def _session_metadata(records: list[Record], builder: TurnBuilder, selection: Selection, read: ReadResult, *,
                      include_thinking: bool, extra: dict[str, Any]) -> dict[str, Any]:
    """What the document says about the session beyond its turns: versions, branch, models,
    usage, how the conversation branch was chosen."""
    versions = _distinct(_strings(records, "version"))
    branches = _strings(records, "gitBranch")
    metadata: dict[str, Any] = {"format": "claude_code", **extra}
    if versions:
        metadata["version"] = versions[-1]
        metadata["versions"] = versions
    if branches:
        metadata["git_branch"] = branches[-1]
    if builder.models:
        metadata["model"] = builder.models.most_common(1)[0][0]
        metadata["models"] = sorted(builder.models)
    for key, name in (("slug", "slug"), ("entrypoint", "entrypoint")):
        values = _strings(records, key)
        if values:
            metadata[name] = values[-1]
    if any(r.data.get("isSidechain") is True for r in records):
        metadata["sidechain"] = True
    usage = builder.usage_totals()
    if usage:
        metadata["usage"] = usage
    metadata["thinking_included"] = include_thinking
    metadata["branch"] = {"chains": selection.chains, "branch_points": selection.branch_points,
                          "off_branch_records": selection.off_branch_content,
                          "rescued_tool_results": selection.rescued_tool_results,
                          "rejoined_message_lines": selection.rejoined_message_lines,
                          "queued_prompts": selection.queued_prompts}
    if selection.queued_commands:
        metadata["branch"]["queued_commands"] = selection.queued_commands
    if selection.subagent_progress:
        metadata["branch"]["subagent_progress_messages"] = selection.subagent_progress
    if read.partial_tail:
        metadata["partial_last_line"] = True
    return metadata


def _subagent_transcript_check(path: Path) -> Callable[[str], bool]:
    """Whether a sub-agent of the transcript at `path` has its own transcript, which this adapter
    reads as a conversation of its own: `<session>/subagents/agent-<id>.jsonl` (2.1.x), or
    `agent-<id>.jsonl` beside the transcript (up to 2.0.x, and nested sub-agents)."""
    stem = path.name[: -len(".jsonl")] if path.name.endswith(".jsonl") else path.stem
    folders = [path.parent / stem / "subagents", path.parent]

    def exists(agent_id: str) -> bool:
        name = f"agent-{agent_id}.jsonl"
        return any((folder / name).is_file() for folder in folders)

    return exists


def parse_transcript(
    path: Path, report: ParseReport, *, include_thinking: bool = True
) -> ConversationDoc | None:
    """One transcript file → one conversation (None when it holds no turn yet)."""
    counts = report.counts
    try:
        read = read_records(path, counts)
    except OSError as exc:
        raise SourceError(f"{path}: cannot read: {exc.strerror or exc}") from None
    report.state = {"complete_bytes": read.complete_bytes}
    records = read.records
    if not records:
        if read.invalid_lines:
            raise UnrecognisedSource(f"{path}: not a Claude Code transcript (no JSON records; "
                                     f"{read.invalid_lines} unreadable {noun(read.invalid_lines, 'line')})")
        report.warnings.append(f"{path}: empty transcript (nothing written yet)")
        return None
    if not any(_recognisable(r) for r in records):
        raise UnrecognisedSource(f"{path}: not a Claude Code transcript (no line has a record type)")
    for record in records:
        if not is_content(record):
            counts[f"records_skipped:{_skip_category(record)}"] += 1

    selection = select(records, _subagent_transcript_check(path))
    builder = TurnBuilder(counts, include_thinking=include_thinking)
    builder.rendered = selection.rendered
    for pos in selection.positions:
        try:
            builder.add(records[pos])
        except Exception as exc:  # noqa: BLE001 - one odd record must not cost the session
            counts["records_failed"] += 1
            if len(report.warnings) < MAX_WARNINGS:
                report.warnings.append(f"{path}: line {records[pos].line_no} skipped "
                                       f"({type(exc).__name__})")
    turns = builder.finish()
    if selection.off_branch_content:
        counts["records_off_branch"] += selection.off_branch_content
    if read.partial_tail:
        report.warnings.append(partial_tail_warning(path))
    if not turns:
        counts["sessions_without_turns"] += 1
        report.warnings.append(f"{path}: no conversation turns in this transcript")
        return None

    thread_id, info = _thread_id(path, records)
    branch_uuids = {u for pos in selection.positions if isinstance(u := records[pos].data.get("uuid"), str)}
    title, title_info = _title(records, branch_uuids, counts)
    if title is None:
        title = _title_from_user_turns(turns)
    stamps = [t.ts for t in turns if t.ts]
    metadata = _session_metadata(records, builder, selection, read, include_thinking=include_thinking,
                                 extra={**info, **title_info})
    cwds = [c for c in _distinct(_strings(records, "cwd") + _strings(records, "project"), 50)
            if _looks_like_path(c)][:MAX_LISTED]
    return ConversationDoc(
        source=SOURCE, source_type=SOURCE_TYPE, source_uri=str(path),
        doc_id=thread_doc_id(SOURCE_TYPE, thread_id), thread_id=thread_id,
        title=as_str(title), created_at=min(stamps) if stamps else None,
        updated_at=max(stamps) if stamps else None, turns=turns,
        links=ConversationLinks(repo_paths=cwds), metadata=json_safe(metadata),
    )
