"""The relay's client side: ask a running chinvex process, or say there is none (None), in which
case the command runs in-process."""

from __future__ import annotations

import os
import socket
from typing import Any

import orjson

from chinvex.relay.address import ENV_OFF, identity, socket_path

CONNECT_TIMEOUT_S = 0.2
REPLY_TIMEOUT_S = 120.0


def ask(op: str, args: dict[str, Any]) -> Any | None:
    """The server's result for `op`, or None when no server answers it (absent, declined,
    broken): the caller then computes it itself."""
    if os.environ.get(ENV_OFF, "").strip() not in ("", "0"):
        return None
    path = socket_path()
    if path is None or not path.exists():
        return None
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.settimeout(CONNECT_TIMEOUT_S)
        sock.connect(str(path))
        sock.settimeout(REPLY_TIMEOUT_S)
        sock.sendall(orjson.dumps({"op": op, "args": args, "identity": identity(os.environ)}) + b"\n")
        data = b""
        while not data.endswith(b"\n"):
            chunk = sock.recv(1 << 20)
            if not chunk:
                break
            data += chunk
        reply = orjson.loads(data)
    except (OSError, ValueError):
        return None
    finally:
        sock.close()
    return reply.get("result") if isinstance(reply, dict) and reply.get("ok") else None
