"""Every agent whose sessions chinvex reads, by the name its documents carry as `source` (and
`doc.agent` in filters): which adapter reads its files, where it keeps them, and how a file is
told to be of its format, so that a file found in another agent's folder still reaches the
adapter whose format it is.

Each agent package describes itself in its `__init__.py` (`AGENT`, `STORES`; see
kit/registry.py) and is found by looking, so adding an agent is adding its package. Adapters
themselves are loaded only when a file needs one.
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import lru_cache
from pathlib import Path
from typing import Any

from chinvex_adapters.kit.registry import Agent, Store

NOT_AGENTS = frozenset({"kit", "repo", "notes", "chat_export", "claude_code", "cx_appserver",
                        "cx_sessions_jsonl"})
"""Sub-packages that are not agent packages (the kit; adapters registered in
chinvex.ingest.adapters)."""

BUILTIN_AGENTS = (
    Agent("claude_code", "Claude Code", "chinvex_adapters.claude_code.adapter:ClaudeCodeAdapter"),
    Agent("codex", "Codex", "chinvex_adapters.cx_appserver.adapter:CodexAppServerAdapter",
          routable=False),
)
"""Agents whose adapters predate the packages' self-description."""


@lru_cache(maxsize=1)
def _packages() -> tuple[Any, ...]:
    """Every agent package: a sub-package of chinvex_adapters whose `__init__` sets `AGENT`, in
    name order (the order content routing tries them). Adding an agent is adding its package."""
    import chinvex_adapters

    found = []
    for info in sorted(pkgutil.iter_modules(chinvex_adapters.__path__), key=lambda m: m.name):
        if info.ispkg and info.name not in NOT_AGENTS:
            package = importlib.import_module(f"chinvex_adapters.{info.name}")
            if isinstance(getattr(package, "AGENT", None), Agent):
                found.append(package)
    return tuple(found)


def agents() -> dict[str, Agent]:
    found = {a.name: a for a in BUILTIN_AGENTS}
    for package in _packages():
        agent: Agent = package.AGENT
        found[agent.name] = agent
    return found


def package_stores() -> list[Store]:
    return [store for package in _packages() for store in getattr(package, "STORES", ())]


@lru_cache(maxsize=None)
def load(name: str) -> Any:
    module, _, cls = agents()[name].target.partition(":")
    obj = getattr(importlib.import_module(module), cls)
    return obj() if isinstance(obj, type) else obj


def identify(path: Path, *, exclude: str | None = None) -> Any | None:
    """The adapter whose format `path` is, by content (None when no adapter recognises it).
    Each adapter's `recognises` reads only the first bytes or records."""
    for name, agent in agents().items():
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
            except Exception:  # noqa: BLE001 - one adapter's faulty sniff must not stop the others
                continue
    return None
