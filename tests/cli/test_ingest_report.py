"""The ingest summary and doctor's last-run check count failed sources in English ("1 source
failed", "1 source error"), on a real ingest whose repository folder was moved away."""

from __future__ import annotations

import shutil
from pathlib import Path

from helpers import run_cli_in_process


def test_one_failed_source_is_counted_in_the_singular(tmp_path: Path):
    repo, notes = tmp_path / "repo", tmp_path / "notes"
    repo.mkdir()
    notes.mkdir()
    (repo / "a.py").write_text("def a():\n    return 1\n")
    (notes / "n.md").write_text("# N\n\nA note.\n")
    env = {"CHINVEX_HOME": str(tmp_path / "home")}
    assert run_cli_in_process("context", "create", "F", "--repo", str(repo), "--note-root", str(notes),
                              env=env).code == 0
    assert run_cli_in_process("ingest", "--context", "F", env=env).code == 0
    shutil.move(str(repo), str(tmp_path / "moved"))
    failed = run_cli_in_process("ingest", "--context", "F", env=env)
    assert failed.code == 0
    assert "(1 source scanned in " in failed.stdout, failed.stdout  # the note; the repo is gone
    assert "\n1 source failed and will be retried by the next ingest" in failed.stdout + failed.stderr, failed
    doctor = run_cli_in_process("doctor", "--context", "F", "--json", env=env)
    last = {c["name"]: c for c in doctor.json["checks"]}["last_ingest"]
    assert last["message"].endswith("completed with 1 source error"), last
