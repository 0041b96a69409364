"""Choosing which records of a transcript form the conversation the user last saw.

A transcript is a forest, not a list: every record names its `parentUuid`; rewinding or
editing a message starts a new branch from an earlier record; compaction starts a new chain
whose first record points back through `logicalParentUuid`; concatenated or resumed files
hold several chains. The rules, all deterministic:

- a parent reference resolves to the latest *earlier* record with that uuid, so links only
  point backwards (no cycle is possible, even with repeated uuids) and `logicalParentUuid`
  is followed when `parentUuid` is null;
- a link between a sidechain (sub-agent) record and a main-thread record starts a new chain,
  so a sub-agent written into the session file never hijacks the main thread's tip, and
  neither is dropped;
- records connected that way form a chain; in each chain the branch kept is the path from its
  root to its last-written message (Claude Code appends, so the newest tip is the one that
  was being worked on: abandoned edits were written before it);
- chains are kept in the order they start in the file;
- the lines of one API message (same `message.id`) are kept together: Claude Code writes each
  content block of an assistant message as its own line, chained one after the other, and since
  2.1.x hangs each parallel tool call's result under that call's line (2.0.x chained the results
  one after another), so the next message continues from one result only and the path to the
  tip skips the other calls' lines;
- a tool result left off the branch is kept when its tool call is on the branch and has no
  result there (parallel tool results can be siblings rather than a chain);
- a prompt the user typed while the agent was working and that reached the model mid-turn is
  kept where it was written (see `queued_prompts`; since about 2.1.80 the `queued_command`
  attachment, see `queued_commands`);
- a sub-agent's messages that reach the session file only as `progress` records are kept when
  the sub-agent's own transcript is not beside the session (see `subagent_progress`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .records import Record

def is_content(record: Record) -> bool:
    if record.type in ("user", "assistant"):
        return isinstance(record.data.get("message"), dict)
    return record.type in ("tool_use", "tool_result")


def _sidechain(record: Record) -> bool:
    return record.data.get("isSidechain") is True


def _blocks(record: Record) -> list[Any]:
    message = record.data.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    return content if isinstance(content, list) else []


def message_id(record: Record) -> str | None:
    """The API message id of an assistant record (`message.id`), shared by all the lines one
    message is written as."""
    message = record.data.get("message")
    value = message.get("id") if record.type == "assistant" and isinstance(message, dict) else None
    return value if isinstance(value, str) and value else None


def tool_use_ids(record: Record) -> set[str]:
    return {b["id"] for b in _blocks(record)
            if isinstance(b, dict) and b.get("type") in ("tool_use", "server_tool_use")
            and isinstance(b.get("id"), str)}


def tool_result_ids(record: Record) -> set[str]:
    return {b["tool_use_id"] for b in _blocks(record)
            if isinstance(b, dict) and b.get("type") == "tool_result"
            and isinstance(b.get("tool_use_id"), str)}


@dataclass
class Selection:
    positions: list[int]  # records to read, in order
    chains: int = 0
    branch_points: int = 0
    off_branch_content: int = 0
    rescued_tool_results: int = 0
    rejoined_message_lines: int = 0
    queued_prompts: int = 0
    queued_commands: int = 0
    subagent_progress: int = 0
    # attachment and progress records to render as turns (other records of those types on the
    # branch are bookkeeping)
    rendered: set[int] = field(default_factory=set)
    leaf_uuids: list[str] = field(default_factory=list)


def select(records: list[Record], has_subagent_transcript: Callable[[str], bool] | None = None) -> Selection:
    """`has_subagent_transcript(agent_id)`: whether the sub-agent's own transcript exists (then
    its `progress` records are not needed); None: assume it does."""
    parent, root, children = _links(records)
    tips: dict[int, int] = {}  # chain root -> last content record
    for record in records:
        if is_content(record):
            tips[root[record.pos]] = record.pos

    selection = Selection(positions=[], chains=len(tips))
    chosen: set[int] = set()
    for chain_root in sorted(tips):
        path: list[int] = []
        node: int | None = tips[chain_root]
        while node is not None:
            path.append(node)
            node = parent[node]
        path.reverse()
        chosen.update(path)
        selection.branch_points += sum(1 for pos in path if children.get(pos, 0) > 1)
        uuid = records[tips[chain_root]].data.get("uuid")
        if isinstance(uuid, str):
            selection.leaf_uuids.append(uuid)

    selection.rejoined_message_lines = _rejoin_split_messages(records, chosen, root)
    calls: set[str] = set()
    answered: set[str] = set()
    for pos in chosen:
        calls |= tool_use_ids(records[pos])
        answered |= tool_result_ids(records[pos])
    for record in records:
        if record.pos in chosen or not is_content(record):
            continue
        if record.type == "user" and (tool_result_ids(record) & (calls - answered)):
            chosen.add(record.pos)
            answered |= tool_result_ids(record)
            selection.rescued_tool_results += 1
        else:
            selection.off_branch_content += 1
    def place(pos: int) -> None:
        """Keep an off-branch record where it was written, in the chain being written then."""
        earlier = [p for p in chosen if p < pos and not _sidechain(records[p])]
        root[pos] = root[max(earlier)] if earlier else pos
        chosen.add(pos)

    for pos in queued_prompts(records):
        place(pos)
        selection.queued_prompts += 1
    for pos in queued_commands(records):
        # On the branch when the model read it (the next message hangs under it); off it only
        # as a leaf (the session stopped right after), never as the start of an abandoned branch.
        if pos not in chosen:
            if children.get(pos, 0):
                continue
            place(pos)
        selection.rendered.add(pos)
        selection.queued_commands += 1
    if has_subagent_transcript is not None:
        calls: set[str] = set()
        for pos in chosen:
            calls |= tool_use_ids(records[pos])
        for pos in subagent_progress(records, calls, has_subagent_transcript):
            if pos not in chosen:
                place(pos)
            selection.rendered.add(pos)
            selection.subagent_progress += 1
    # Chains in order of their start, records within a chain in file order.
    selection.positions = sorted(chosen, key=lambda pos: (root[pos], pos))
    return selection


def _links(records: list[Record]) -> tuple[dict[int, int | None], dict[int, int], dict[int, int]]:
    """Each record's parent (by `parentUuid`, else `logicalParentUuid`; never across the
    main/side-chain line), the root of its chain, and how many children each record has."""
    last_by_uuid: dict[str, int] = {}
    parent: dict[int, int | None] = {}
    root: dict[int, int] = {}
    children: dict[int, int] = {}
    for record in records:
        ref = record.data.get("parentUuid")
        if not isinstance(ref, str):
            ref = record.data.get("logicalParentUuid")
        p = last_by_uuid.get(ref) if isinstance(ref, str) else None
        if p is not None and _sidechain(records[p]) != _sidechain(record):
            p = None
        parent[record.pos] = p
        root[record.pos] = root[p] if p is not None else record.pos
        if p is not None:
            children[p] = children.get(p, 0) + 1
        uuid = record.data.get("uuid")
        if isinstance(uuid, str):
            last_by_uuid[uuid] = record.pos
    return parent, root, children


def _rejoin_split_messages(records: list[Record], chosen: set[int], root: dict[int, int]) -> int:
    """Add to `chosen` the off-branch lines of assistant messages that have a line on the
    branch (same `message.id`, same chain); returns how many were added.

    Claude Code 2.1.x writes a message with five parallel Read calls as five assistant lines,
    each the parent of the next, then each call's result under its own call's line; the next
    message hangs under whichever result was written last. Walking back from the tip then passes
    through one of the five calls and leaves the others, their inputs and (since their calls are
    off the branch) their results out of the conversation: 491 of 37,213 calls in 190 of 509
    real 2.1.1-2.1.42 sessions were lost that way. A line that shares its message id with
    a line the user saw is the same message, not an abandoned branch: a rewind or an edit makes
    a new API call, with a new id. A line whose content is already on the branch (a copy
    of the same block, as a resumed session can write) is not added twice."""
    kept = {(mid, root[pos]) for pos in chosen if (mid := message_id(records[pos]))}
    seen = {_content_key(records[pos]) for pos in chosen if message_id(records[pos])}
    added = 0
    for record in records:
        if record.pos in chosen or not is_content(record):
            continue
        mid = message_id(record)
        if mid is None or (mid, root[record.pos]) not in kept:
            continue
        key = _content_key(record)
        if key in seen:
            continue
        seen.add(key)
        chosen.add(record.pos)
        added += 1
    return added


def _content_key(record: Record) -> tuple[str | None, str]:
    """A message line's id and content, to tell a second copy of a line from a new block."""
    message = record.data.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    return message_id(record), repr(content)


def _typed_texts(records: list[Record]) -> set[str]:
    """Every text a user record holds (string content or text blocks), stripped."""
    texts: set[str] = set()
    for record in records:
        if record.type != "user":
            continue
        message = record.data.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, str):
            texts.add(content.strip())
        for block in content if isinstance(content, list) else []:
            if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str):
                texts.add(block["text"].strip())
    return texts


def _prompt_text(prompt: Any) -> str:
    """The text of a `queued_command` prompt: a string, or content blocks (text blocks joined)."""
    if isinstance(prompt, str):
        return prompt.strip()
    if isinstance(prompt, list):
        return "\n\n".join(b["text"].strip() for b in prompt if isinstance(b, dict) and b.get("type") == "text"
                           and isinstance(b.get("text"), str) and b["text"].strip())
    return ""


def queued_command(record: Record) -> dict[str, Any] | None:
    """The `attachment` of a `queued_command` attachment record (2.1.80+), else None."""
    attachment = record.data.get("attachment")
    if record.type == "attachment" and isinstance(attachment, dict) and attachment.get("type") == "queued_command":
        return attachment
    return None


def _has_image(prompt: Any) -> bool:
    return isinstance(prompt, list) and any(isinstance(b, dict) and b.get("type") in ("image", "document")
                                            for b in prompt)


def queued_commands(records: list[Record]) -> list[int]:
    """Positions of `queued_command` attachments that are the only copy of what was sent.

    Since about 2.1.80 a prompt typed while the agent works and handed to the model mid-turn is
    written as an `attachment` record (`{"type": "queued_command", "prompt": ..., "commandMode":
    "prompt"}`, the prompt a string or content blocks), in the chain where the model read it
    (the next assistant line hangs under it); from 2.1.129 the `queue-operation` records around
    it no longer hold the text, so this record is the prompt's only copy. A background task's
    completion reaches the model the same way (`commandMode: "task-notification"`), as it
    reaches it as a user message when the agent is idle. One is not kept when it is marked
    `isMeta` or when the same text is written again as a user message later in the file (the
    prompt was then sent as a message of its own)."""
    later_user: dict[str, int] = {}  # text -> last position of a user record holding it
    for record in records:
        if record.type == "user":
            for text in _typed_texts([record]):
                later_user[text] = record.pos
    kept: list[int] = []
    for record in records:
        attachment = queued_command(record)
        if attachment is None or attachment.get("isMeta") is True:
            continue
        text = _prompt_text(attachment.get("prompt"))
        if not text and not _has_image(attachment.get("prompt")):
            continue
        if text and later_user.get(text, -1) > record.pos:
            continue
        kept.append(record.pos)
    return kept


def progress_message(record: Record) -> tuple[str, dict[str, Any]] | None:
    """(agent id, the sub-agent's message record) of an `agent_progress` record, else None.

    2.1.x (before the sub-agent transcripts of `<session>/subagents/`) wrote each message of a
    running sub-agent into the session file as `{"type": "progress", "data": {"type":
    "agent_progress", "agentId": ..., "prompt": ..., "message": {"type": "user"|"assistant",
    "message": {...}, "uuid": ..., "timestamp": ...}}, "parentToolUseID": <the Task call>}`."""
    data = record.data.get("data")
    if record.type != "progress" or not isinstance(data, dict) or data.get("type") != "agent_progress":
        return None
    agent_id = data.get("agentId")
    message = data.get("message")
    if not isinstance(agent_id, str) or not agent_id or not isinstance(message, dict):
        return None
    if message.get("type") not in ("user", "assistant") or not isinstance(message.get("message"), dict):
        return None
    return agent_id, message


def subagent_progress(records: list[Record], calls: set[str],
                      has_transcript: Callable[[str], bool]) -> list[int]:
    """Positions of `agent_progress` records to read as the sub-agent's messages: those of a
    sub-agent whose own transcript is not there (a session file copied or archived alone), started
    by a Task call on the branch, each message once."""
    kept: list[int] = []
    seen: set[tuple[str, str]] = set()
    known: dict[str, bool] = {}
    for record in records:
        found = progress_message(record)
        if found is None:
            continue
        agent_id, message = found
        call = record.data.get("parentToolUseID")
        if isinstance(call, str) and call not in calls:
            continue
        if agent_id not in known:
            known[agent_id] = has_transcript(agent_id)
        if known[agent_id]:
            continue
        uuid = message.get("uuid")
        if isinstance(uuid, str):
            if (agent_id, uuid) in seen:
                continue
            seen.add((agent_id, uuid))
        kept.append(record.pos)
    return kept


def queued_prompts(records: list[Record]) -> list[int]:
    """Positions of `queue-operation` records holding a prompt that exists nowhere else.

    A prompt typed while the agent works is queued (`enqueue`, with its text). Then either
    it is sent as the next user message (`dequeue`; the message is written as a user record),
    pulled back into the input box to be edited (`popAll`; what is sent then is written), or
    handed to the model in the middle of the turn (`remove`): in 2.0.76-2.1.42 that last prompt
    is written nowhere but in the `enqueue` record, although the model read and acted on it
    (190 of the 270 prompts queued in 546 real sessions). The queue is first in, first out; a
    removed prompt is kept unless the same text was also written as a user message, or as a
    `queued_command` attachment (2.1.80+ writes both; the attachment is kept, see
    `queued_commands`)."""
    typed: set[str] | None = None
    queue: list[Record] = []
    kept: list[int] = []
    for record in records:
        if record.type != "queue-operation":
            continue
        operation = record.data.get("operation")
        if operation == "enqueue":
            queue.append(record)
        elif operation == "popAll":
            queue.clear()
        elif operation in ("dequeue", "remove") and queue:
            entry = queue.pop(0)
            text = entry.data.get("content")
            if operation != "remove" or not isinstance(text, str) or not text.strip():
                continue
            if typed is None:
                typed = _typed_texts(records) | {_prompt_text(a.get("prompt")) for r in records
                                                 if (a := queued_command(r)) is not None}
            if text.strip() not in typed:
                kept.append(entry.pos)
    return kept
