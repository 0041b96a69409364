"""How the client reaches the server: a `Transport` of protocol lines, over a child process
(`ProcessTransport`, stderr drained into a bounded buffer) or over two open streams
(`StreamTransport`, for replay tests and servers started by someone else).
"""

from __future__ import annotations

import logging
import re
import subprocess
import threading
from collections import deque
from collections.abc import Mapping, Sequence
from typing import IO, Protocol

from .errors import AppServerUnavailable

log = logging.getLogger(__name__)

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_BACKTRACE_FRAME = re.compile(r"^(\s+\d+: |\s+at |Stack backtrace:)")


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
