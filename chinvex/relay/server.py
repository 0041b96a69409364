"""The relay's server side: a thread in a long-running chinvex process answering search, answer
and pack requests with that process's warm engine (`chinvex.api.Engine`).

One request per connection: a JSON line in, a JSON line out. A request whose identity (protocol,
chinvex version, CHINVEX_* settings) differs from the server's is declined, and the caller runs
it itself. The socket's folder is made private (0700) and the socket itself 0600, and a peer
running as another user is refused where the platform says who it is (SO_PEERCRED).
"""

from __future__ import annotations

import os
import socket
import stat
import struct
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from chinvex.relay.address import identity, socket_path

MAX_REQUEST_BYTES = 1 << 20
Handler = Callable[[dict[str, Any]], Any]


def _read_line(conn: socket.socket) -> bytes:
    data = b""
    while not data.endswith(b"\n"):
        chunk = conn.recv(65536)
        if not chunk:
            break
        data += chunk
        if len(data) > MAX_REQUEST_BYTES:
            raise ValueError("request too large")
    return data


def _same_user(conn: socket.socket) -> bool:
    creds = getattr(socket, "SO_PEERCRED", None)
    if creds is None:
        return True  # the private folder is the guard there
    raw = conn.getsockopt(socket.SOL_SOCKET, creds, struct.calcsize("3i"))
    _pid, uid, _gid = struct.unpack("3i", raw)
    return uid == os.getuid()


def _live(path: Path) -> bool:
    """Whether another process answers on `path` (else it is a leftover of one that died)."""
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    probe.settimeout(0.5)
    try:
        probe.connect(str(path))
        return True
    except OSError:
        return False
    finally:
        probe.close()


class RelayServer:
    """Serves `handlers` (op name -> function of the request) on the user's relay socket."""

    def __init__(self, handlers: dict[str, Handler]):
        self.handlers = handlers
        self.path: Path | None = None
        self._sock: socket.socket | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> bool:
        """Bind and serve on a daemon thread; False (and nothing started) when there is no
        usable path or another live process serves it already."""
        path = socket_path()
        if path is None:
            return False
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            os.chmod(path.parent, stat.S_IRWXU)
            if path.exists() or path.is_symlink():
                if _live(path):
                    return False
                path.unlink()
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            old = os.umask(0o177)
            try:
                sock.bind(str(path))
            finally:
                os.umask(old)
            sock.listen(16)
        except OSError:
            return False
        self.path, self._sock = path, sock
        self._thread = threading.Thread(target=self._serve, name="chinvex-relay", daemon=True)
        self._thread.start()
        return True

    def _serve(self) -> None:
        while self._sock is not None:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return  # closed
            threading.Thread(target=self._answer, args=(conn,), name="chinvex-relay-call", daemon=True).start()

    def _answer(self, conn: socket.socket) -> None:
        with conn:
            try:
                if not _same_user(conn):
                    return
                request = orjson.loads(_read_line(conn))
                reply = self.reply(request)
            except Exception:  # noqa: BLE001  (the caller then runs the command itself)
                reply = {"ok": False, "declined": "error"}
            try:
                conn.sendall(orjson.dumps(reply, default=_plain) + b"\n")
            except OSError:
                pass

    def reply(self, request: dict[str, Any]) -> dict[str, Any]:
        if request.get("identity") != identity(os.environ):
            return {"ok": False, "declined": "identity"}
        handler = self.handlers.get(str(request.get("op")))
        if handler is None:
            return {"ok": False, "declined": "op"}
        return {"ok": True, "result": handler(request.get("args") or {})}

    def close(self) -> None:
        sock, self._sock = self._sock, None
        if sock is not None:
            sock.close()
        if self.path is not None:
            try:
                self.path.unlink()
            except OSError:
                pass


def _plain(value: Any) -> Any:
    dump = getattr(value, "model_dump", None)
    if dump is not None:
        return dump(mode="json")
    raise TypeError(type(value).__name__)
