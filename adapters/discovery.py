"""Where each agent keeps its sessions on Linux, macOS and Windows, and which of those stores
exist (`chinvex sessions detect`, `--sessions auto`; chinvex.sessions counts what they hold).

Every operating system's default location is looked for under the home folder whatever the
system (a synced or copied home keeps its layout), plus each tool's own override (CODEX_HOME,
CLAUDE_CONFIG_DIR, XDG_DATA_HOME, ...).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

VSCODE_APPS = ("Code", "Code - Insiders", "VSCodium", "Cursor", "Windsurf", "Kiro", "Trae")
"""Editors built on VS Code whose user folders hold chat sessions and extension storage."""


@dataclass(frozen=True)
class Where:
    home: Path
    env: Mapping[str, str]

    def var(self, name: str) -> Path | None:
        value = self.env.get(name, "").strip()
        return Path(value).expanduser() if value else None

    def xdg(self, var: str, default: str) -> list[Path]:
        """The XDG folder and the home default (both: a session's tool may have run with or
        without the variable)."""
        found = [self.var(var), self.home / default]
        return [p for p in found if p is not None]

    def app_support(self) -> list[Path]:
        """Per-user application data folders: XDG config (Linux), Application Support (macOS),
        AppData/Roaming (Windows)."""
        return [*self.xdg("XDG_CONFIG_HOME", ".config"), self.home / "Library" / "Application Support",
                *( [self.var("APPDATA")] if self.var("APPDATA") else []),
                self.home / "AppData" / "Roaming"]

    def vscode_users(self) -> list[Path]:
        return [base / app / "User" for base in self.app_support() for app in VSCODE_APPS]


Locator = Callable[[Where], list[Path]]


@dataclass(frozen=True)
class StoreKind:
    agent: str  # as users name it (`--sessions codex=PATH`, `doc.agent`)
    label: str
    locate: Locator
    adapter: str = ""  # the adapter that ingests the store, when not named `agent`
    counter: str | None = None  # the adapter that counts its sessions, when not `adapter`

    @property
    def reader(self) -> str:
        return self.adapter or self.agent


def _claude(w: Where) -> list[Path]:
    base = [w.var("CLAUDE_CONFIG_DIR"), w.home / ".claude", *(p / "claude" for p in w.xdg("XDG_CONFIG_HOME", ".config"))]
    return [p / "projects" for p in base if p is not None]


def _codex(w: Where) -> list[Path]:
    return [p for p in (w.var("CODEX_HOME"), w.home / ".codex") if p is not None]


STORES: list[StoreKind] = [
    StoreKind("claude_code", "Claude Code", _claude),
    StoreKind("codex", "Codex", _codex, adapter="cx_appserver", counter="cx_sessions_jsonl"),
]


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
                    agents: set[str] | None = None) -> Iterator[tuple[StoreKind, Path]]:
    """Every default or overridden store location that exists, in STORES order (each real
    folder once). Whether it holds sessions is for its adapter to say."""
    where = Where(home=home, env=env)
    for kind in STORES:
        if agents is not None and kind.agent not in agents:
            continue
        for path in _unique(kind.locate(where)):
            try:
                if path.exists():
                    yield kind, path
            except OSError:
                continue


def kinds() -> dict[str, StoreKind]:
    """Agent name -> its store kind, for `--sessions KIND=PATH`."""
    return {k.agent: k for k in STORES}
