"""The MCP wire's own descriptors: stdin and stdout, moved out of reach of stray output.

While serving, the protocol owns fd 0 and fd 1. They are duplicated to private descriptors for
the wire, then fd 0 reads the null device and fd 1 writes to stderr, so a library or a child
process that prints cannot corrupt the protocol (the SDK's stdio transport does the same); both
are restored at the end. Light on purpose (no SDK import): `chinvex.mcp.front` claims them
before the SDK has loaded.
"""

from __future__ import annotations

import os
import sys
from contextlib import suppress
from dataclasses import dataclass, field
from typing import BinaryIO


@dataclass
class Wire:
    """Binary streams of the wire, and how to give the standard descriptors back."""

    stdin: BinaryIO
    stdout: BinaryIO
    _fds: tuple[int, int] | None = field(default=None, repr=False)

    def restore(self) -> None:
        if self._fds is None:
            return
        with suppress(OSError, ValueError):
            sys.stdout.flush()
        with suppress(OSError, ValueError):
            self.stdout.flush()
        wire_in, wire_out = self._fds
        for fd, wire in ((1, wire_out), (0, wire_in)):
            with suppress(OSError):
                os.dup2(wire, fd)
        self._fds = None
        # The wire duplicates stay open: a reader thread abandoned at shutdown may still be
        # blocked on one, and a closed descriptor number could be reused under it.


def claim_std_fds() -> Wire:
    """The wire on private duplicates of fd 0 and fd 1; where they cannot be moved (Windows, a
    closed fd 0 or 1) the wire is `sys.stdin`/`sys.stdout` in place, as the SDK falls back."""
    if sys.platform != "win32":
        try:
            import fcntl

            sys.stdout.flush()
            wire_in = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
            wire_out = fcntl.fcntl(1, fcntl.F_DUPFD_CLOEXEC, 3)
            null = os.open(os.devnull, os.O_RDONLY)
            try:
                os.dup2(null, 0)
            finally:
                os.close(null)
            os.dup2(2, 1)
            return Wire(os.fdopen(wire_in, "rb", closefd=False), os.fdopen(wire_out, "wb", closefd=False),
                        (wire_in, wire_out))
        except OSError:
            pass
    return Wire(sys.stdin.buffer, sys.stdout.buffer)
