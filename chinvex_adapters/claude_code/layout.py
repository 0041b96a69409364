"""Where a transcript sits in `~/.claude/projects` says what it is (FORMATS.md §4.1).

- `<encoded-cwd>/<session-uuid>.jsonl`: a main session;
- `<encoded-cwd>/agent-<8hex>.jsonl`: a sub-agent (≤ 2.0.x), its parent named by the
  `sessionId` inside its records;
- `<encoded-cwd>/<session-uuid>/subagents/agent-<id>.jsonl` (+ `agent-<id>.meta.json`): a
  sub-agent (2.1.x), its parent named by the folder (its records carry `agent-<id>` as
  sessionId instead).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

_UUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
NOT_TRANSCRIPTS = {"history.jsonl": "Claude Code prompt history, not a transcript"}


@dataclass
class Layout:
    kind: str  # session | subagent | subagent_legacy
    agent_id: str | None = None
    parent_session_id: str | None = None


def is_uuid(value: str) -> bool:
    return bool(_UUID.match(value))


def classify(path: Path) -> Layout:
    stem = path.name[: -len(".jsonl")] if path.name.endswith(".jsonl") else path.stem
    if stem.startswith("agent-") and len(stem) > len("agent-"):
        agent_id = stem[len("agent-"):]
        if path.parent.name == "subagents":
            return Layout("subagent", agent_id=agent_id, parent_session_id=path.parent.parent.name)
        return Layout("subagent_legacy", agent_id=agent_id)
    return Layout("session")


def read_sidecar(path: Path) -> dict[str, Any] | None:
    """`agent-<id>.meta.json` beside a 2.1.x sub-agent transcript (agentType, spawnDepth)."""
    sidecar = path.with_name(path.name[: -len(".jsonl")] + ".meta.json")
    try:
        if sidecar.stat().st_size > 1_000_000:
            return None
        data = orjson.loads(sidecar.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None
    return data if isinstance(data, dict) else None
