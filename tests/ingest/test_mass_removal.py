"""An ingest that would delete a large part of a context asks first (issue 40): more than 5 % of
its documents (and more than 10) are removed only with `--yes`, or after a "y" on a terminal;
piped, or answered "n", the documents stay and the run says why in one error line. Small
removals go ahead as before. Real ingests through the real CLI (a pseudo-terminal for the
prompt)."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers import REPO_ROOT, assert_no_traceback, run_cli


@pytest.fixture()
def notes(tmp_path: Path, chinvex_home: Path) -> Path:
    root = tmp_path / "notes"
    root.mkdir()
    for i in range(30):
        (root / f"n{i:02d}.md").write_text(f"# Note {i}\n\nLedger entry number {i} about settlement.\n",
                                          encoding="utf-8")
    assert run_cli("context", "create", "mass", "--note-root", str(root)).code == 0
    first = run_cli("ingest", "--context", "mass", "--json")
    assert first.code == 0 and first.json["sources"]["indexed"] == 30, first
    return root


def _documents() -> int:
    return run_cli("stats", "--context", "mass", "--json").json["totals"]["documents"]


def test_a_mass_removal_is_held_back_until_yes(notes: Path):
    for path in sorted(notes.glob("*.md"))[:20]:
        path.unlink()
    held = run_cli("ingest", "--context", "mass")
    assert_no_traceback(held)
    assert held.code == 0 and "20 of 30 documents would be removed" in held.stdout and "--yes" in held.stdout, held
    assert _documents() == 30
    strict = run_cli("ingest", "--context", "mass", "--strict", "--json")
    assert strict.code == 1 and strict.json["sources"]["removed"] == 0
    done = run_cli("ingest", "--context", "mass", "--yes", "--json")
    assert done.code == 0 and done.json["sources"]["removed"] == 20 and done.json["errors"] == [], done
    assert _documents() == 10


def test_a_small_removal_needs_no_confirmation(notes: Path):
    for path in sorted(notes.glob("*.md"))[:3]:
        path.unlink()
    result = run_cli("ingest", "--context", "mass", "--json")
    assert result.code == 0 and result.json["sources"]["removed"] == 3 and result.json["errors"] == []


def _ingest_on_a_terminal(answer: bytes) -> str:
    main, child = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "chinvex", "ingest", "--context", "mass"], stdin=child,
                            stdout=child, stderr=child, cwd=REPO_ROOT, env={**os.environ, "TERM": "dumb"})
    os.close(child)
    seen, answered = b"", False
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        try:
            chunk = os.read(main, 4096)
        except OSError:
            break
        if not chunk:
            break
        seen += chunk
        if not answered and b"Remove them?" in seen:
            os.write(main, answer + b"\n")
            answered = True
    proc.wait(timeout=60)
    os.close(main)
    assert proc.returncode == 0, seen.decode(errors="replace")[-2000:]
    return seen.decode(errors="replace")


def test_a_terminal_is_asked(notes: Path):
    for path in sorted(notes.glob("*.md"))[:20]:
        path.unlink()
    refused = _ingest_on_a_terminal(b"n")
    assert "20 of 30 documents would be removed" in refused and "Remove them?" in refused
    assert _documents() == 30
    _ingest_on_a_terminal(b"y")
    assert _documents() == 10
