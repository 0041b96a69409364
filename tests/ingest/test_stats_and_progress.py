"""Issue 3: `chinvex stats` after an ingest (human form from a real `chinvex` process), and the
ingest's progress display on a pseudo-terminal. (Split from test_ingest.py.)"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from helpers import run_cli, run_cli_in_process


def test_stats(chinvex_home: Path, repo: Path, ingest_json):
    assert run_cli_in_process("context", "create", "St", "--repo", str(repo)).code == 0
    ingest_json("St")
    stats = run_cli_in_process("stats", "--context", "St", "--json").json
    assert stats["totals"]["documents"] == 2
    assert stats["by_source_type"]["repo"]["chunks"] >= 2
    assert stats["embedder"]["embedder"].startswith("builtin:")
    assert stats["embedder"]["embedding_dimension"] == "384"
    assert stats["last_run"]["status"] == "completed"
    assert stats["index"]["hybrid_db_bytes"] > 0 and stats["index"]["chroma_bytes"] > 0
    assert run_cli("stats", "--context", "St").code == 0


# -- removal of sources that were never recorded, and its protections --------------------------



# -- the progress display -------------------------------------------------------------------------

PROGRESS_MARKS = (b"\x1b[?25l", "━".encode(), b"chunks embedded")
"""What only the rich bar writes: hide-cursor, the bar glyph, and its label."""


def _visible(screen: bytes) -> bytes:
    """The text of a terminal stream without its CSI escape sequences (colours, cursor moves)."""
    import re

    return re.sub(rb"\x1b\[[0-9;?]*[A-Za-z]", b"", screen)


def _ingest_on_a_terminal(context: str, *args: str, stdout_tty: bool = True,
                          env: dict[str, str] | None = None) -> tuple[int, bytes, bytes]:
    """Run `chinvex ingest` with stderr (and stdout unless `stdout_tty` is False) on a pseudo-
    terminal of 120x40. Returns (exit code, bytes written to the terminal, bytes on a piped
    stdout). Rich decides from isatty() and the terminal size, as it would for a user."""
    import fcntl
    import struct
    import termios
    import threading

    from helpers import CHINVEX_BIN

    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    full_env = {k: v for k, v in os.environ.items()
                if k not in ("NO_COLOR", "FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE", "COLUMNS")}
    full_env.update({"TERM": "xterm-256color", **(env or {})})
    proc = subprocess.Popen([str(CHINVEX_BIN), "ingest", "--context", context, *args],
                            stdin=slave, stdout=slave if stdout_tty else subprocess.PIPE,
                            stderr=slave, env=full_env)
    os.close(slave)
    chunks: list[bytes] = []

    def drain() -> None:
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO once every holder of the terminal has exited
                return
            if not data:
                return
            chunks.append(data)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    piped = proc.stdout.read() if proc.stdout is not None else b""
    code = proc.wait(timeout=600)
    reader.join(timeout=30)
    os.close(master)
    return code, b"".join(chunks), piped


def test_progress_bar_is_drawn_on_a_terminal_and_nowhere_else(chinvex_home: Path, repo: Path,
                                                              write_functions):
    write_functions(repo / "metrics.py", 12)
    assert run_cli_in_process("context", "create", "Bar", "--repo", str(repo)).code == 0

    code, screen, _ = _ingest_on_a_terminal("Bar")
    assert code == 0, screen.decode(errors="replace")
    for mark in PROGRESS_MARKS:
        assert mark in screen, (mark, screen[:2000])
    text = _visible(screen)
    assert b"0/3 sources" in text and b"3/3 sources" in text, text[:2000]  # it moved
    assert b"\x1b[?25h" in screen, "the cursor is shown again"
    assert b"Bar: 3 ingested" in text, text[-2000:]

    # --json on a terminal: one JSON document and nothing else, not even the bar on stderr.
    (repo / "metrics.py").write_text((repo / "metrics.py").read_text() + "\n# edited\n")
    code, screen, _ = _ingest_on_a_terminal("Bar", "--json")
    assert code == 0, screen.decode(errors="replace")
    assert b"\x1b" not in screen and "━".encode() not in screen
    assert json.loads(screen.replace(b"\r\n", b"\n"))["sources"]["indexed"] == 1

    # Output piped, stderr still on the terminal (`chinvex ingest > log`): the log stays clean
    # text, the bar is drawn where the user is looking.
    code, screen, piped = _ingest_on_a_terminal("Bar", stdout_tty=False)
    assert code == 0, screen.decode(errors="replace")
    assert b"\x1b" not in piped and b"Bar: 0 ingested, 3 unchanged" in piped, piped
    assert all(mark in screen for mark in PROGRESS_MARKS), screen[:2000]

    # Nothing a terminal: no escape code anywhere, also when FORCE_COLOR makes rich treat a
    # pipe as a terminal for colours (the bar is never drawn into a log).
    plain = run_cli("ingest", "--context", "Bar")
    assert plain.code == 0, plain
    assert "\x1b" not in plain.stdout + plain.stderr and "━" not in plain.stderr, plain
    forced = run_cli("ingest", "--context", "Bar", env={"FORCE_COLOR": "1"})
    assert forced.code == 0, forced
    for mark in PROGRESS_MARKS:
        assert mark.decode() not in forced.stdout + forced.stderr, (mark, forced)
