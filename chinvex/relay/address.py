"""Where the relay socket lives, and whether a request may be served by another process."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from chinvex import __version__

PROTOCOL = 1
ENV_OFF = "CHINVEX_NO_RELAY"
MAX_PATH_BYTES = 100  # AF_UNIX paths are limited to 108 bytes on Linux, fewer elsewhere
# Settings that only shape the calling process's own output or the server's start-up, so a
# difference in them does not make the server's answer differ from an in-process one.
LOCAL_SETTINGS = {"CHINVEX_CONTEXT", "CHINVEX_PROGRESS_EVERY", "CHINVEX_MCP_WARM", ENV_OFF, "CHINVEX_DEBUG",
                  "CHINVEX_TOOLS", "CHINVEX_COLD_START", "CHINVEX_SESSION_CACHE"}


def socket_path() -> Path | None:
    """`$CHINVEX_HOME/run/relay.sock`, or None when that path is too long for a Unix socket
    (or the platform has none): then every command runs in-process."""
    import socket

    from chinvex.paths import chinvex_home

    if not hasattr(socket, "AF_UNIX"):
        return None
    path = chinvex_home() / "run" / "relay.sock"
    return path if len(os.fsencode(path)) <= MAX_PATH_BYTES else None


def settings(env: Mapping[str, str]) -> dict[str, str]:
    """The CHINVEX_* settings that can change a result; client and server must agree on them."""
    return {k: v for k, v in env.items() if k.startswith("CHINVEX_") and k not in LOCAL_SETTINGS}


def identity(env: Mapping[str, str]) -> dict[str, object]:
    """What a request carries so that a server only answers when its answer is the one the
    caller would have computed itself."""
    return {"protocol": PROTOCOL, "version": __version__, "settings": settings(env)}
