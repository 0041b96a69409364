"""How an agent's adapter package describes itself, so that adding an agent is one package:
its `__init__.py` sets `AGENT` (the name its documents carry, the label users know, the
adapter class) and `STORES` (where the agent keeps its sessions on each system). Plain data:
reading it imports nothing heavy."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

VSCODE_APPS = ("Code", "Code - Insiders", "VSCodium", "Cursor", "Windsurf", "Kiro", "Trae")
"""Editors built on VS Code whose user folders hold chat sessions and extension storage."""


@dataclass(frozen=True)
class Where:
    """The home folder and environment that store locations are computed from (a test passes
    a fake home; `chinvex sessions detect` the real one)."""

    home: Path
    env: Mapping[str, str]

    def var(self, name: str) -> Path | None:
        value = self.env.get(name, "").strip()
        return Path(value).expanduser() if value else None

    def xdg(self, var: str, default: str) -> list[Path]:
        """The XDG folder named by `var` and the home default: both, since the tool may have
        run with or without the variable."""
        return [p for p in (self.var(var), self.home / default) if p is not None]

    def data_dirs(self) -> list[Path]:
        """Where tools keep data: XDG data (Linux and tools that follow it everywhere),
        Application Support (macOS), AppData Local and Roaming (Windows)."""
        return [*self.xdg("XDG_DATA_HOME", ".local/share"), self.home / "Library" / "Application Support",
                *[p for p in (self.var("LOCALAPPDATA"), self.var("APPDATA")) if p is not None],
                self.home / "AppData" / "Local", self.home / "AppData" / "Roaming"]

    def config_dirs(self) -> list[Path]:
        """Per-user application folders: XDG config (Linux), Application Support (macOS),
        AppData Roaming (Windows)."""
        return [*self.xdg("XDG_CONFIG_HOME", ".config"), self.home / "Library" / "Application Support",
                *[p for p in (self.var("APPDATA"),) if p is not None], self.home / "AppData" / "Roaming"]

    def vscode_users(self, apps: tuple[str, ...] = VSCODE_APPS) -> list[Path]:
        """`<app>/User` of every VS Code-based editor on every system, plus remote servers
        (`~/.vscode-server/data/User`)."""
        users = [base / app / "User" for base in self.config_dirs() for app in apps]
        users += [self.home / ".vscode-server" / "data" / "User",
                  self.home / ".cursor-server" / "data" / "User"]
        return users


@dataclass(frozen=True)
class Agent:
    name: str  # the `source` of its conversations and `doc.agent` in filters
    label: str  # as its users call it
    target: str  # module:class of its adapter
    routable: bool = True  # its files can be recognised by content alone


@dataclass(frozen=True)
class Store:
    """One kind of place an agent keeps sessions: `locate` lists candidate folders (or files)
    for a home and environment; the agent's adapter (or `counter`) enumerates them."""

    agent: str  # as users name it (`--sessions gemini=PATH`)
    label: str
    locate: Callable[[Where], list[Path]]
    adapter: str = ""  # the adapter that ingests it, when not named `agent`
    counter: str | None = None  # the adapter that counts its sessions, when not `reader`

    @property
    def reader(self) -> str:
        return self.adapter or self.agent
