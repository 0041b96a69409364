"""Every agent whose sessions chinvex reads, by the name its documents carry as `source` (and
`--filter "doc.agent = '...'"` matches): which adapter reads its files, and how a file is told
to be of its format, so that a file found in another agent's folder still reaches the adapter
whose format it is.

Strings only at import time: adapters are loaded when a file needs one.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Agent:
    name: str
    label: str  # as its users call it
    target: str  # module:class of its adapter
    routable: bool = True  # its files can be recognised by content alone


AGENTS: dict[str, Agent] = {a.name: a for a in (
    Agent("claude_code", "Claude Code", "chinvex_adapters.claude_code.adapter:ClaudeCodeAdapter"),
    Agent("codex", "Codex", "chinvex_adapters.cx_appserver.adapter:CodexAppServerAdapter", routable=False),
    Agent("aider", "Aider", "chinvex_adapters.aider.adapter:AiderAdapter"),
)}


@lru_cache(maxsize=None)
def load(name: str) -> Any:
    module, _, cls = AGENTS[name].target.partition(":")
    obj = getattr(importlib.import_module(module), cls)
    return obj() if isinstance(obj, type) else obj


def identify(path: Path, *, exclude: str | None = None) -> Any | None:
    """The adapter whose format `path` is, by content (None when no adapter recognises it).
    Each adapter's `recognises` reads only the first bytes or records."""
    for name, agent in AGENTS.items():
        if name == exclude or not agent.routable:
            continue
        adapter = load(name)
        recognises = getattr(adapter, "recognises", None)
        if callable(recognises) and hasattr(adapter, "parse_file"):
            try:
                if recognises(path):
                    return adapter
            except OSError:
                return None
    return None
