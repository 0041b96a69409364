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
- a tool result left off the branch is kept when its tool call is on the branch and has no
  result there (parallel tool results can be siblings rather than a chain).
"""

from __future__ import annotations

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
    leaf_uuids: list[str] = field(default_factory=list)


def select(records: list[Record]) -> Selection:
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
    # Chains in order of their start, records within a chain in file order.
    selection.positions = sorted(chosen, key=lambda pos: (root[pos], pos))
    return selection
