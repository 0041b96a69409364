"""A small synchronous JSON-RPC client for `codex app-server` over stdio.

Why hand-written: the protocol is newline-delimited JSON-RPC 2.0 *without* the `jsonrpc`
member and without LSP framing (FORMATS.md §1.2), which no maintained Python JSON-RPC library
speaks as is; what we need of it (requests matched by id, a reader thread, timeouts) is small.

Design points:
- Responses may come back out of order (the server handles requests concurrently), so every
  request waits on its own future keyed by id; a single reader thread resolves them.
- The child must never block on a full stderr pipe, so stderr is drained continuously into a
  bounded buffer whose tail goes into error messages.
- When stdout reaches EOF (the child died or closed the pipe), every pending request fails at
  once with the exit code and the last stderr lines; nothing waits for its timeout.
- The transport is injectable (`StreamTransport` over any pair of binary streams) so replay
  tests drive the very same client code without a process.
"""

from __future__ import annotations

import json
import logging
import threading
from collections import deque
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

log = logging.getLogger(__name__)
from .errors import (
    METHOD_NOT_FOUND,
    AppServerClientError,
    AppServerDied,
    AppServerError,
    AppServerTimeout,
    AppServerUnavailable,
)
from .launch import CLIENT_NAME, ClientConfig, build_argv, build_env, client_version
from .transport import ProcessTransport, Transport


class AppServerClient:
    """Synchronous, thread-safe client: `request()` may be called from several threads."""

    def __init__(
        self,
        config: ClientConfig | None = None,
        *,
        transport: Transport | None = None,
        on_notification: Callable[[str, Any], None] | None = None,
    ):
        self.config = config or ClientConfig()
        self._transport = transport
        self._on_notification = on_notification
        self._pending: dict[int, tuple[str, Future[Any]]] = {}
        self._lock = threading.Lock()
        self._write_lock = threading.Lock()
        self._next_id = 0
        self._reader: threading.Thread | None = None
        self._closed_reason: str | None = None
        self._closing = False
        self.initialize_result: dict[str, Any] | None = None
        self.notifications: deque[dict[str, Any]] = deque(maxlen=200)
        self.server_requests_refused = 0
        self.ignored_lines = 0

    # -- lifecycle -------------------------------------------------------------------------
    def start(self, handshake: bool = True) -> "AppServerClient":
        """Spawn the child (unless a transport was injected), start reading, and handshake."""
        if self._reader is not None:
            return self
        if self._transport is None:
            argv = build_argv(self.config)
            env = build_env(self.config)
            self._transport = ProcessTransport(argv, env, stderr_lines=self.config.stderr_lines)
        self._reader = threading.Thread(target=self._read_loop, name="codex-app-server-reader", daemon=True)
        self._reader.start()
        if handshake:
            self.initialize()
        return self

    def initialize(self) -> dict[str, Any]:
        """`initialize` → `initialized`. Failures become AppServerUnavailable with the reason."""
        params: dict[str, Any] = {
            "clientInfo": {
                "name": CLIENT_NAME,
                "title": "chinvex",
                "version": self.config.client_version or client_version(),
            },
            # Only stable methods and fields are used (thread/list, thread/read,
            # thread/turns/list, thread/items/list), so we do not opt into the experimental
            # surface, which may change between releases without notice.
            "capabilities": {"experimentalApi": True} if self.config.experimental_api else None,
        }
        try:
            result = self.request("initialize", params, timeout=self.config.startup_timeout_s)
        except AppServerTimeout as exc:
            raise AppServerUnavailable(f"codex app-server did not answer initialize: {exc}") from exc
        except AppServerDied as exc:
            raise AppServerUnavailable(f"codex app-server failed to start: {exc}") from exc
        except AppServerError as exc:
            raise AppServerUnavailable(f"codex app-server refused initialize: {exc}") from exc
        self.notify("initialized")
        self.initialize_result = result if isinstance(result, dict) else {}
        return self.initialize_result

    def close(self) -> None:
        """Close stdin (orderly shutdown), wait briefly, then terminate/kill. Idempotent."""
        with self._lock:
            if self._closing:
                return
            self._closing = True
        if self._transport is not None:
            try:
                self._transport.close(self.config.close_grace_s)
            except Exception as exc:  # noqa: BLE001 - never let cleanup mask the real error
                log.debug("closing app-server transport: %s", exc)
        if self._reader is not None:
            self._reader.join(timeout=5.0)
        self._fail_all("the client was closed")

    def __enter__(self) -> "AppServerClient":
        try:
            return self.start()
        except BaseException:
            self.close()
            raise

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def closed(self) -> bool:
        """True once the connection ended (EOF, death or close()); a closed client is not reused."""
        return self._closed_reason is not None or self._closing

    @property
    def transport(self) -> Transport | None:
        return self._transport

    @property
    def pid(self) -> int | None:
        return getattr(self._transport, "pid", None)

    def stderr_tail(self, n: int = 20) -> list[str]:
        if self._transport is None:
            return []
        return self._transport.stderr_tail()[-n:]

    # -- messaging -------------------------------------------------------------------------
    def request(self, method: str, params: Mapping[str, Any] | None = None, timeout: float | None = None) -> Any:
        """Send one request and wait for its result (raises AppServerError on an error reply)."""
        future = self.send_request(method, params)
        return self.wait(future, method, timeout)

    def send_request(self, method: str, params: Mapping[str, Any] | None = None) -> Future[Any]:
        """Send without waiting; pair with `wait()` (lets callers pipeline requests)."""
        if self._transport is None or self._reader is None:
            raise AppServerClientError("the client is not started")
        future: Future[Any] = Future()
        with self._lock:
            if self._closed_reason is not None:
                raise AppServerDied(self._closed_reason)
            request_id = self._next_id
            self._next_id += 1
            self._pending[request_id] = (method, future)
        future.request_id = request_id  # type: ignore[attr-defined]
        message: dict[str, Any] = {"id": request_id, "method": method}
        if params is not None:
            message["params"] = dict(params)
        try:
            self._send(message)
        except AppServerClientError:
            with self._lock:
                self._pending.pop(request_id, None)
            raise
        return future

    def wait(self, future: Future[Any], method: str, timeout: float | None = None) -> Any:
        limit = self.config.request_timeout_s if timeout is None else timeout
        try:
            return future.result(timeout=limit)
        except FutureTimeout:
            request_id = getattr(future, "request_id", None)
            with self._lock:
                self._pending.pop(request_id, None)  # a late answer is dropped by the reader
            tail = self.stderr_tail(5)
            hint = f"; last stderr: {' | '.join(tail)}" if tail else ""
            raise AppServerTimeout(f"{method} got no answer within {limit:g} s{hint}") from None

    def notify(self, method: str, params: Mapping[str, Any] | None = None) -> None:
        message: dict[str, Any] = {"method": method}
        if params is not None:
            message["params"] = dict(params)
        self._send(message)

    def _send(self, message: Mapping[str, Any]) -> None:
        data = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"
        assert self._transport is not None
        with self._write_lock:
            try:
                self._transport.write_line(data)
            except (OSError, ValueError) as exc:
                reason = self._closed_reason or self._describe_end(f"writing failed ({exc})")
                raise AppServerDied(reason) from exc

    # -- reader ----------------------------------------------------------------------------
    def _read_loop(self) -> None:
        assert self._transport is not None
        try:
            while True:
                try:
                    raw = self._transport.read_line()
                except (OSError, ValueError):
                    raw = b""
                if not raw:
                    break
                self._dispatch(raw)
        finally:
            reason = "the client was closed" if self._closing else self._describe_end("")
            self._fail_all(reason)

    def _describe_end(self, prefix: str) -> str:
        assert self._transport is not None
        parts = [p for p in (prefix, self._transport.describe_exit()) if p]
        tail = [line for line in self._transport.stderr_tail() if line.strip()][-10:]
        text = "; ".join(parts)
        if tail:
            text += "; last stderr lines:\n  " + "\n  ".join(tail)
        return text

    def _fail_all(self, reason: str) -> None:
        with self._lock:
            if self._closed_reason is None:
                self._closed_reason = reason
            pending = list(self._pending.items())
            self._pending.clear()
        for request_id, (method, future) in pending:
            if not future.done():
                future.set_exception(AppServerDied(f"{method} (request {request_id}) failed: {reason}"))

    def _dispatch(self, raw: bytes) -> None:
        try:
            message = json.loads(raw)
        except ValueError:
            self.ignored_lines += 1
            log.debug("ignoring non-JSON line from app-server: %r", raw[:200])
            return
        if not isinstance(message, dict):
            self.ignored_lines += 1
            return
        has_id = "id" in message and message["id"] is not None
        if "method" in message:
            if has_id:
                self._refuse_server_request(message)
            else:
                self.notifications.append(message)
                log.debug("app-server notification %s", message.get("method"))
                if self._on_notification is not None:
                    try:
                        self._on_notification(str(message["method"]), message.get("params"))
                    except Exception:
                        log.exception("notification callback failed")
            return
        if not has_id:
            # An error without an id (e.g. a parse error on our side) cannot be matched.
            log.warning("app-server sent an unmatched message: %s", str(message)[:300])
            self.ignored_lines += 1
            return
        request_id = message["id"]
        if isinstance(request_id, str) and request_id.isdigit():
            request_id = int(request_id)
        with self._lock:
            entry = self._pending.pop(request_id, None)
        if entry is None:
            log.debug("dropping answer to unknown or timed-out request %r", request_id)
            return
        method, future = entry
        if "error" in message and message["error"] is not None:
            error = message["error"] if isinstance(message["error"], dict) else {}
            future.set_exception(
                AppServerError(
                    int(error.get("code", 0) or 0),
                    str(error.get("message", message["error"])),
                    error.get("data"),
                    method=method,
                )
            )
        else:
            future.set_result(message.get("result"))

    def _refuse_server_request(self, message: Mapping[str, Any]) -> None:
        """We never start turns, so approvals and tool calls should not come; answering with an
        error (rather than silence) keeps the server from waiting on us forever."""
        self.server_requests_refused += 1
        log.warning("refusing app-server request %s", message.get("method"))
        reply = {
            "id": message["id"],
            "error": {
                "code": METHOD_NOT_FOUND,
                "message": f"chinvex is a read-only client and does not handle {message.get('method')}",
            },
        }
        try:
            self._send(reply)
        except AppServerClientError:
            pass
