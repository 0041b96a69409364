"""How the app-server is started: `ClientConfig`, the command line and environment of the child,
and the one test of whether Codex is installed (`find_executable`).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .errors import AppServerUnavailable

OFFLINE_ARGS: tuple[str, ...] = ("-c", "features.plugins=false")
"""Keeps 0.169.0 from syncing its curated plugin repository from github.com at start-up (the
only network access observed with strace on an unauthenticated home). `-c features.x=false`
rather than `--disable x`: an unknown feature name is then a warning, not a fatal error, so
other Codex versions still start."""

DEFAULT_COMMAND: tuple[str, ...] = ("codex", "app-server")
DEFAULT_TIMEOUT_S = 30.0
CLIENT_NAME = "chinvex"


@dataclass
class ClientConfig:
    """How to start and talk to the app-server.

    `command` comes from context.json (`codex_appserver.command`); when `binary` is given it
    replaces `command[0]` (the tests resolve the installed binary that way). `codex_home` is
    exported as CODEX_HOME; it must exist beforehand (the server refuses to create it).
    """

    command: Sequence[str] = DEFAULT_COMMAND
    binary: str | None = None
    codex_home: str | None = None
    extra_args: Sequence[str] = ()
    offline: bool = True
    request_timeout_s: float = DEFAULT_TIMEOUT_S
    startup_timeout_s: float = DEFAULT_TIMEOUT_S
    env: Mapping[str, str] | None = None
    stderr_lines: int = 200
    close_grace_s: float = 2.0
    experimental_api: bool = False
    client_version: str | None = None
    extra_env: Mapping[str, str] = field(default_factory=dict)


def executable_of(command: Sequence[str], binary: str | None = None) -> str:
    """The program a command line runs: `binary` when given (CHINVEX_CODEX_BIN), else
    command[0]."""
    return binary or (list(command) or list(DEFAULT_COMMAND))[0]


def is_path(exe: str) -> bool:
    return os.sep in exe or bool(os.altsep and os.altsep in exe)


def find_executable(exe: str, search_path: str | None = None) -> str | None:
    """Where `exe` is: itself when it is a path to a file, else its match on PATH (or on
    `search_path`); None when there is none. The one test of "is Codex installed", shared by
    starting the server and by `codex_appserver.mode = "auto"`."""
    if is_path(exe):
        return exe if Path(exe).is_file() else None
    return shutil.which(exe, path=search_path)


def build_argv(config: ClientConfig) -> list[str]:
    """The command line to run; raises AppServerUnavailable when the executable is missing."""
    command = list(config.command) or list(DEFAULT_COMMAND)
    exe = command[0] = executable_of(command, config.binary)
    if is_path(exe):
        if find_executable(exe) is None:
            raise AppServerUnavailable(
                f"codex binary not found at {exe}; run scripts/install-codex.sh or fix "
                "codex_appserver.command"
            )
    else:
        found = find_executable(exe, (config.env or os.environ).get("PATH"))
        if found is None:
            raise AppServerUnavailable(
                f"codex binary {exe!r} is not on PATH; install the Codex CLI "
                "(npm i -g @openai/codex, or scripts/install-codex.sh) or set "
                "codex_appserver.command"
            )
        command[0] = found
    offline = list(OFFLINE_ARGS) if config.offline else []
    return command + offline + list(config.extra_args)


def build_env(config: ClientConfig) -> dict[str, str]:
    """The child's environment: inherited, plus CODEX_HOME when configured (checked to exist)."""
    env = dict(config.env if config.env is not None else os.environ)
    env.update(config.extra_env)
    if config.codex_home:
        env["CODEX_HOME"] = str(config.codex_home)
    home = env.get("CODEX_HOME") or str(Path(env.get("HOME", str(Path.home()))) / ".codex")
    if not Path(home).is_dir():
        raise AppServerUnavailable(
            f"CODEX_HOME {home} does not exist; codex app-server needs an existing Codex home "
            "(no Codex sessions to read there)"
        )
    return env


def client_version() -> str:
    """This chinvex's version, as the client names itself to the server."""
    try:
        from chinvex import __version__

        return __version__
    except Exception:  # noqa: BLE001 - a version string is cosmetic
        return "0"
