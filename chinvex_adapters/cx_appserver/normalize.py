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

import re
from collections import Counter
from typing import Any

from chinvex.ids import thread_doc_id
from chinvex.models import ConversationDoc, ConversationLinks
from chinvex.timeutil import to_utc

from . import schemas
from .item_text import NormalizeOptions, from_ms
from .turn_builder import TurnBuilder

SOURCE = "cx_appserver"
SOURCE_TYPE = "codex_session"
TITLE_MAX_CHARS = 80
_WS = re.compile(r"\s+")


def source_uri_for(thread_id: str) -> str:
    return f"codex://thread/{thread_id}"


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
    return from_ms(max(stamps)) if stamps else None


def thread_to_conversation(
    thread: schemas.Thread, turns: list[schemas.Turn] | None = None, options: NormalizeOptions | None = None
) -> tuple[ConversationDoc, Counter[str]]:
    """Build the document of one thread from its (validated) turns, in chronological order.

    `turns` defaults to `thread.turns` (what `thread/read includeTurns` returns).
    """
    options = options or NormalizeOptions()
    turns = thread.turns if turns is None else turns
    builder = TurnBuilder(thread, options)
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
