"""`chinvex mcp config --client claude|codex`: the lines a user pastes to register the server.

The command is the absolute path of the running `chinvex` (a virtualenv that is not on the
client's PATH still works), and chinvex's own location variables are passed along when they
are set, so the client starts the server against the same contexts the user sees.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
from pathlib import Path
from typing import Any, Literal

Client = Literal["claude", "codex"]
CLIENTS = ("claude", "codex")
SERVER_NAME = "chinvex"
PASSED_ENV = ("CHINVEX_HOME", "CHINVEX_CONTEXTS_ROOT", "CHINVEX_INDEXES_ROOT")


def server_command() -> str:
    beside = Path(sys.executable).parent / "chinvex"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which("chinvex") or "chinvex"


def server_args(context: str | None) -> list[str]:
    return ["mcp", "--context", context] if context else ["mcp"]


def server_env(environ: dict[str, str] | None = None) -> dict[str, str]:
    env = os.environ if environ is None else environ
    return {name: env[name] for name in PASSED_ENV if env.get(name, "").strip()}


def _toml_string(value: str) -> str:
    # A JSON string is a valid TOML basic string for everything json.dumps emits.
    return json.dumps(value, ensure_ascii=False)


def snippet(client: Client, context: str | None = None, *, command: str | None = None,
            environ: dict[str, str] | None = None) -> dict[str, Any]:
    """{"client", "file", "text", "config", and for Claude Code "command_line"}."""
    command = command or server_command()
    args = server_args(context)
    env = server_env(environ)
    if client == "claude":
        entry: dict[str, Any] = {"type": "stdio", "command": command, "args": args}
        if env:
            entry["env"] = env
        config = {"mcpServers": {SERVER_NAME: entry}}
        env_flags = [part for name, value in env.items() for part in ("-e", f"{name}={value}")]
        command_line = shlex.join(["claude", "mcp", "add", SERVER_NAME, *env_flags, "--", command, *args])
        text = (
            "# Claude Code: add this entry to .mcp.json in your project (or ~/.claude.json):\n"
            + json.dumps(config, indent=2, ensure_ascii=False)
            + "\n\n# or register it from the command line:\n"
            + command_line
            + "\n"
        )
        return {"client": client, "file": ".mcp.json", "config": config, "command_line": command_line,
                "text": text}
    if client == "codex":
        lines = [
            "# Codex: add to ~/.codex/config.toml (or .codex/config.toml in a trusted project)",
            f"[mcp_servers.{SERVER_NAME}]",
            f"command = {_toml_string(command)}",
            "args = [" + ", ".join(_toml_string(a) for a in args) + "]",
            "# the first call loads the embedding model; answers may take a while",
            "tool_timeout_sec = 120",
        ]
        if env:
            lines.append("env = { " + ", ".join(f"{name} = {_toml_string(value)}" for name, value in env.items()) + " }")
        config = {"mcp_servers": {SERVER_NAME: {"command": command, "args": args, "tool_timeout_sec": 120,
                                                **({"env": env} if env else {})}}}
        return {"client": client, "file": "~/.codex/config.toml", "config": config, "text": "\n".join(lines) + "\n"}
    raise ValueError(f"unknown client {client!r}")
