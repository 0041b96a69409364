"""Where each agent keeps its sessions on Linux, macOS and Windows, and which of those stores
exist (`chinvex sessions detect`, `--sessions auto`; chinvex.ingest.session_stores counts what they hold).

Every operating system's default location is looked for under the home folder whatever the
system (a synced or copied home keeps its layout), plus each tool's own override (CODEX_HOME,
CLAUDE_CONFIG_DIR, XDG_DATA_HOME, ...).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from pathlib import Path

from chinvex_adapters.kit.registry import Store, Where


def _claude(w: Where) -> list[Path]:
    base = [w.var("CLAUDE_CONFIG_DIR"), w.home / ".claude", *(p / "claude" for p in w.xdg("XDG_CONFIG_HOME", ".config"))]
    return [p / "projects" for p in base if p is not None]


def _codex(w: Where) -> list[Path]:
    return [p for p in (w.var("CODEX_HOME"), w.home / ".codex") if p is not None]


BUILTIN_STORES: list[Store] = [
    Store("claude_code", "Claude Code", _claude),
    Store("codex", "Codex", _codex, adapter="cx_appserver", counter="cx_sessions_jsonl"),
]


def stores() -> list[Store]:
    """Every kind of store: Claude Code's and Codex's, then each agent package's."""
    from chinvex_adapters.agents import package_stores

    return BUILTIN_STORES + package_stores()


def _unique(paths: list[Path]) -> Iterator[Path]:
    seen: set[str] = set()
    for path in paths:
        try:
            key = os.path.realpath(path)
        except OSError:
            continue
        if key not in seen:
            seen.add(key)
            yield path


def existing_stores(home: Path, env: Mapping[str, str],
                    agents: set[str] | None = None) -> Iterator[tuple[Store, Path]]:
    """Every default or overridden store location that exists, in stores() order (each real
    folder once). Whether it holds sessions is for its adapter to say."""
    where = Where(home=home, env=env)
    for kind in stores():
        if agents is not None and kind.agent not in agents:
            continue
        for path in _unique(kind.locate(where)):
            try:
                if path.exists():
                    yield kind, path
            except OSError:
                continue


def kinds() -> dict[str, Store]:
    """Agent name -> its store kind, for `--sessions KIND=PATH`: every agent, also those
    without a store of their own (Aider's histories live in repositories)."""
    from chinvex_adapters.agents import agents

    found = {a.name: Store(a.name, a.label, lambda where: []) for a in agents().values()}
    found.update({k.agent: k for k in stores()})
    return found
