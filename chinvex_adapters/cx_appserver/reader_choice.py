"""Which reader a Codex include root gets: context.json's `codex_appserver` block, read.

`choose_reader` decides before anything is started; the constants name the readers and the
paths a thread can take, as shown in IngestSummary.readers and IngestSummary.paths.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import ValidationError

from chinvex.models import CodexAppServerConfig
from chinvex.models.context import CodexReaderMode
from chinvex.models.sources import AdapterOptions, SourceError
from chinvex_adapters.cx_sessions_jsonl.discover import SESSION_DIRS

from .launch import executable_of, find_executable, is_path

ROLLOUT_ADAPTER = "cx_sessions_jsonl"
BINARY_ENV = "CHINVEX_CODEX_BIN"
"""Overrides the executable of `codex_appserver.command` (command[0]) when set and non-empty."""

LegacyRead = Literal["rollout", "appserver"]

# Which way a thread was (or will be) read, as shown in IngestSummary.paths.
PATH_APPSERVER = "app-server"
PATH_ROLLOUT = "rollout"
PATH_FALLBACK = "fallback"

# Which reader a root got, as shown in IngestSummary.readers.
READER_APPSERVER = "app-server"
READER_JSONL = "jsonl"
NOT_A_HOME = "not a CODEX_HOME (no sessions/ or archived_sessions/ folder)"



@dataclass(frozen=True)
class AppServerSettings:
    """context.json's `codex_appserver` block, with the keys chinvex adds beyond the schema
    (`legacy_read`) and the CHINVEX_CODEX_BIN override."""

    config: CodexAppServerConfig
    legacy_read: LegacyRead = "rollout"
    binary: str | None = None

    @property
    def mode(self) -> CodexReaderMode:
        return self.config.effective_mode

    @classmethod
    def from_options(cls, options: AdapterOptions, environ: dict[str, str] | None = None) -> AppServerSettings:
        raw = (options.settings or {}).get("codex_appserver") or {}
        if not isinstance(raw, dict):
            raise SourceError(f"context {options.context_name}: codex_appserver must be an object, not {raw!r}")
        try:
            config = CodexAppServerConfig.model_validate(raw)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(part) for part in first.get("loc", ()))
            raise SourceError(f"context {options.context_name}: codex_appserver.{where}: "
                              f"{first.get('msg')}") from None
        legacy_read = (config.model_extra or {}).get("legacy_read", "rollout")
        if legacy_read not in ("rollout", "appserver"):
            raise SourceError(f"context {options.context_name}: codex_appserver.legacy_read must be "
                              f"\"rollout\" or \"appserver\", not {legacy_read!r}")
        env = os.environ if environ is None else environ
        return cls(config=config, legacy_read=legacy_read, binary=env.get(BINARY_ENV) or None)


@dataclass(frozen=True)
class ReaderChoice:
    """The reader of one include root, and why (shown in IngestSummary.readers and, per thread,
    in IngestSummary.paths)."""

    reader: str  # READER_APPSERVER | READER_JSONL
    why: str


def choose_reader(settings: AppServerSettings, home: Path | None,
                  search_path: str | None = None) -> ReaderChoice:
    """Which reader a root gets before anything is started. `auto` asks only whether the
    executable exists (`find_executable`, the same test that starting the server makes): a
    machine without Codex is a normal case, not a problem to warn about; a server that exists
    and still fails is one (the caller warns)."""
    if home is None:
        return ReaderChoice(READER_JSONL, NOT_A_HOME)
    mode = settings.mode
    if mode == "off":
        return ReaderChoice(READER_JSONL, settings.config.mode_source)
    if mode == "on":
        return ReaderChoice(READER_APPSERVER, settings.config.mode_source)
    exe = executable_of(settings.config.command, settings.binary)
    found = find_executable(exe, search_path)
    if found is None:
        return ReaderChoice(READER_JSONL, f"{exe} {'not found' if is_path(exe) else 'not on PATH'} (mode auto)")
    return ReaderChoice(READER_APPSERVER, f"{exe} found{'' if found == exe else ' at ' + found} (mode auto)")


def codex_home_for(root: Path) -> Path | None:
    """The CODEX_HOME an include root is, or sits in: a folder holding `sessions/` or
    `archived_sessions/`, or the parent of a root named like one of those."""
    if not root.is_dir():
        return None
    if any((root / name).is_dir() for name in SESSION_DIRS):
        return root
    if root.name in SESSION_DIRS:
        return root.parent
    return None
