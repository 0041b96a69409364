"""`chinvex compact` reclaims space without undoing `chinvex rm`: a removed document stays out
on the next ingest (only `rm --purge` forgets removals, tests/ingest/test_rm_compact.py). Real
CLI, real index."""

from __future__ import annotations

from pathlib import Path

from helpers import run_cli, run_cli_in_process


def _found(env, term: str) -> bool:
    hits = run_cli("search", term, "--context", "C", "--mode", "fts", "--json", env=env).json["results"]
    return any(term in h["text"] for h in hits)


def test_compact_keeps_removed_documents_out(tmp_path: Path):
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "keep.md").write_text("# Keep\n\nThe heron note stays.\n")
    (notes / "drop.md").write_text("# Drop\n\nThe cormorantmarker note is removed by the user.\n")
    env = {"CHINVEX_HOME": str(tmp_path / "home")}
    assert run_cli_in_process("context", "create", "C", "--note-root", str(notes), env=env).code == 0
    assert run_cli_in_process("ingest", "--context", "C", env=env).code == 0
    removed = run_cli_in_process("rm", str(notes / "drop.md"), "--context", "C", env=env)
    assert removed.code == 0 and removed.stdout.startswith("removed 1 document from C"), removed.stdout
    compacted = run_cli_in_process("compact", "--context", "C", "--json", env=env)
    assert compacted.code == 0 and compacted.json["tombstones_purged"] == 0
    assert run_cli_in_process("ingest", "--context", "C", env=env).code == 0
    assert not _found(env, "cormorantmarker") and _found(env, "heron")
