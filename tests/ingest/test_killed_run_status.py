"""A run killed with SIGKILL leaves its record saying "running"; `stats` then reports it as
interrupted (its process is gone), and `doctor` never prints an empty message for a stopped run
(issue 40's rough edges). A real ingest process, killed for real."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from helpers import REPO_ROOT, run_cli


def _started_ingest(root: Path, context: str, notes: int) -> subprocess.Popen:
    """A real ingest of `notes` notes into a new context, returned once it has started and
    recorded itself (its first progress line is out)."""
    root.mkdir()
    for i in range(notes):
        (root / f"n{i:04d}.md").write_text(f"# Note {i}\n\n" + f"Settlement ledger line {i}.\n" * 40, encoding="utf-8")
    assert run_cli("context", "create", context, "--note-root", str(root)).code == 0
    # Started as a terminal starts it, with SIGINT at its default: a process that inherits SIGINT
    # ignored (as a test worker's children can, after another test's server ran in that worker)
    # keeps it ignored, Python installs no KeyboardInterrupt for it, and Ctrl-C never arrives.
    proc = subprocess.Popen([sys.executable, "-m", "chinvex", "ingest", "--context", context, "--json", "--progress"],
                            cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**os.environ, "CHINVEX_PROGRESS_EVERY": "0.1"},
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert proc.stderr is not None
    first = proc.stderr.readline()
    assert json.loads(first)["event"] == "progress", first
    return proc


def test_a_killed_ingest_is_reported_interrupted(tmp_path: Path, chinvex_home: Path):
    proc = _started_ingest(tmp_path / "notes", "killed", 300)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)
    stats = run_cli("stats", "--context", "killed", "--json")
    assert stats.code == 0 and stats.json["last_run"]["status"] == "interrupted", stats.json["last_run"]
    human = run_cli("stats", "--context", "killed")
    assert "interrupted" in human.stdout and "running" not in human.stdout
    doctor = run_cli("doctor", "--context", "killed")
    assert "interrupted" in doctor.stdout + doctor.stderr
    assert "see the message" not in doctor.stdout + doctor.stderr


def test_ctrl_c_then_doctor_says_what_happened(tmp_path: Path, chinvex_home: Path):
    proc = _started_ingest(tmp_path / "notes", "stopped", 1500)
    # KNOWN BUG, not yet fixed: a Ctrl-C landing early in a run (while the model loads) is
    # sometimes lost and the run completes; a user presses it again, and so does this test.
    for _ in range(20):
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=1)
            break
        except subprocess.TimeoutExpired:
            continue
    proc.communicate(timeout=120)
    assert proc.returncode == 130  # stopped, not finished
    assert run_cli("stats", "--context", "stopped", "--json").json["last_run"]["status"] == "failed"
    doctor = run_cli("doctor", "--context", "stopped")
    lines = (doctor.stdout + doctor.stderr).splitlines()
    at = next(i for i, line in enumerate(lines) if "last_ingest" in line)
    assert "stopped before it finished" in lines[at], lines[at]
    assert lines[at + 1].strip().endswith("UTC") and "started" in lines[at + 1]  # the run, never an empty line
