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
import os
import re
import shutil
import subprocess
import threading
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Protocol

log = logging.getLogger(__name__)

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_BACKTRACE_FRAME = re.compile(r"^(\s+\d+: |\s+at |Stack backtrace:)")

OFFLINE_ARGS: tuple[str, ...] = ("-c", "features.plugins=false")
"""Keeps 0.169.0 from syncing its curated plugin repository from github.com at start-up (the
only network access observed with strace on an unauthenticated home). `-c features.x=false`
rather than `--disable x`: an unknown feature name is then a warning, not a fatal error, so
other Codex versions still start."""

DEFAULT_COMMAND: tuple[str, ...] = ("codex", "app-server")
DEFAULT_TIMEOUT_S = 30.0
CLIENT_NAME = "chinvex"

# JSON-RPC error codes seen from codex 0.169.0 (FORMATS.md §1.3, §1.5).
INVALID_REQUEST = -32600  # "Not initialized", "Already initialized", "thread not loaded: <id>"
METHOD_NOT_FOUND = -32601  # also "thread/items/list is not supported yet" on legacy threads
INTERNAL_ERROR = -32603  # e.g. "failed to read thread: ..."
SERVER_OVERLOADED = -32001


class AppServerClientError(Exception):
    """Base class of everything this client raises."""


class AppServerError(AppServerClientError):
    """The server answered a request with a JSON-RPC error."""

    def __init__(self, code: int, message: str, data: Any = None, method: str | None = None):
        self.code = code
        self.message = message
        self.data = data
        self.method = method
        where = f"{method}: " if method else ""
        super().__init__(f"{where}app-server error {code}: {message}")


class AppServerUnavailable(AppServerClientError):
    """The app-server could not be started or handshaken (binary or CODEX_HOME missing, ...).

    The ingest pipeline treats this as "use the rollout-file adapter instead".
    """


class AppServerDied(AppServerUnavailable):
    """The connection ended (child exited or closed stdout) while requests were pending."""


class AppServerTimeout(AppServerClientError):
    """A request got no answer within its timeout."""


class Transport(Protocol):
    """Where protocol lines go and come from, plus what to say when it ends."""

    def write_line(self, data: bytes) -> None: ...

    def read_line(self) -> bytes:
        """One line including its newline; b"" at EOF."""
        ...

    def describe_exit(self) -> str:
        """A short human description of why the stream ended (exit code, stderr tail)."""
        ...

    def stderr_tail(self) -> list[str]: ...

    def close(self, grace_s: float) -> None: ...


class StreamTransport:
    """A transport over two already-open binary streams (no process): for replay tests and
    for talking to a server started by someone else (e.g. `codex app-server proxy`)."""

    def __init__(self, reader: IO[bytes], writer: IO[bytes]):
        self._reader = reader
        self._writer = writer

    def write_line(self, data: bytes) -> None:
        self._writer.write(data)
        self._writer.flush()

    def read_line(self) -> bytes:
        return self._reader.readline()

    def describe_exit(self) -> str:
        return "the server stream reached end of file"

    def stderr_tail(self) -> list[str]:
        return []

    def close(self, grace_s: float) -> None:
        # Only the outbound stream: closing a reader that another thread is blocked on is not
        # safe with buffered I/O; the peer answers our EOF with its own, which ends the reader.
        try:
            self._writer.close()
        except Exception:  # noqa: BLE001 - closing is best effort
            pass


class _StderrDrain(threading.Thread):
    """Reads the child's stderr forever so it can never block on a full pipe; keeps a tail."""

    def __init__(self, stream: IO[bytes], max_lines: int, max_line_chars: int = 2000):
        super().__init__(name="codex-app-server-stderr", daemon=True)
        self._stream = stream
        self._max_line_chars = max_line_chars
        self.lines: deque[str] = deque(maxlen=max_lines)
        self._lock = threading.Lock()

    def run(self) -> None:
        try:
            for raw in iter(self._stream.readline, b""):
                text = _ANSI.sub("", raw.decode("utf-8", "replace").rstrip("\r\n"))
                if _BACKTRACE_FRAME.match(text):
                    continue  # anyhow's "Stack backtrace:" frames bury the one useful line
                if len(text) > self._max_line_chars:
                    text = text[: self._max_line_chars] + " …"
                with self._lock:
                    self.lines.append(text)
        except (OSError, ValueError):
            pass

    def tail(self) -> list[str]:
        with self._lock:
            return list(self.lines)


class ProcessTransport:
    """`codex app-server` as a child process with stdin/stdout pipes and drained stderr."""

    def __init__(
        self,
        argv: Sequence[str],
        env: Mapping[str, str],
        stderr_lines: int = 200,
        cwd: str | None = None,
    ):
        self.argv = list(argv)
        try:
            self.proc = subprocess.Popen(
                self.argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=dict(env),
                cwd=cwd,
                bufsize=0,
                start_new_session=True,  # a Ctrl-C in the terminal must not kill it mid-reply
            )
        except FileNotFoundError as exc:
            raise AppServerUnavailable(
                f"cannot start codex app-server: {self.argv[0]!r} not found ({exc.strerror})"
            ) from exc
        except PermissionError as exc:
            raise AppServerUnavailable(
                f"cannot start codex app-server: {self.argv[0]!r} is not executable"
            ) from exc
        except OSError as exc:
            raise AppServerUnavailable(f"cannot start codex app-server {self.argv!r}: {exc}") from exc
        assert self.proc.stdin and self.proc.stdout and self.proc.stderr
        self._stdin = self.proc.stdin
        self._stdout = self.proc.stdout
        self._drain = _StderrDrain(self.proc.stderr, stderr_lines)
        self._drain.start()

    @property
    def pid(self) -> int:
        return self.proc.pid

    def write_line(self, data: bytes) -> None:
        self._stdin.write(data)
        self._stdin.flush()

    def read_line(self) -> bytes:
        return self._stdout.readline()

    def describe_exit(self) -> str:
        try:
            code = self.proc.wait(timeout=2.0)
        except subprocess.TimeoutExpired:
            return "the app-server closed its stdout but is still running"
        self._drain.join(timeout=1.0)
        if code < 0:
            return f"the app-server was killed by signal {-code}"
        return f"the app-server exited with code {code}"

    def stderr_tail(self) -> list[str]:
        return self._drain.tail()

    def close(self, grace_s: float) -> None:
        try:
            self._stdin.close()  # EOF on stdin = orderly shutdown of the server
        except OSError:
            pass
        try:
            self.proc.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=grace_s)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5.0)
        for stream in (self._stdout, self.proc.stderr):
            try:
                if stream:
                    stream.close()
            except OSError:
                pass
        self._drain.join(timeout=1.0)


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


def _client_version() -> str:
    try:
        from chinvex import __version__

        return __version__
    except Exception:  # noqa: BLE001 - a version string is cosmetic
        return "0"


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
                "version": self.config.client_version or _client_version(),
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

    def send_request(self, method: str, params: Mapping[str, Any] | None = None) -> "Future[Any]":
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

    def wait(self, future: "Future[Any]", method: str, timeout: float | None = None) -> Any:
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
                    except Exception:  # noqa: BLE001 - a callback bug must not kill the reader
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
