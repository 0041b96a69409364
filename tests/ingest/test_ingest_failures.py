"""Issue 3: what goes wrong during an ingest is reported and costs nothing indexed before: bad,
vanishing and unreadable files, a busy context (a real `chinvex` process), and the plan that
settles an interrupted write's vector journal. (Split from test_ingest.py.)"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from helpers import run_cli, run_cli_in_process, without_dac_override


def test_bad_files_are_reported_and_the_index_stays_intact(chinvex_home: Path, repo: Path,
                                                           chunk_ids, ingest_json):
    assert run_cli_in_process("context", "create", "Bad", "--repo", str(repo)).code == 0
    ingest_json("Bad")
    before = chunk_ids(chinvex_home, "Bad")
    latin1 = "Dessert recipe notes for the team dinner, saved by an old editor.\n" * 6
    latin1 += "Make the caf\xe9 cr\xe8me br\xfbl\xe9e the day before.\n"
    (repo / "latin1.txt").write_bytes(latin1.encode("latin-1"))
    with open(repo / "huge.log", "wb") as handle:
        handle.truncate(50 * 1024 * 1024)  # sparse: 50 MB without writing it
    (repo / "image.txt").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\x00" * 100)
    (repo / "loop").symlink_to(repo, target_is_directory=True)
    result = ingest_json("Bad")
    assert result.code == 0, result
    skipped = result.json["sources"]["skipped"]
    assert skipped.get("too_large") == 1 and skipped.get("binary") == 1
    assert before <= chunk_ids(chinvex_home, "Bad")
    found = run_cli("search", "--context", "Bad", "recipe notes", "--json").json["results"]
    assert any(r["source_uri"].endswith("latin1.txt") for r in found)


def test_file_vanishing_between_scan_and_read(chinvex_home: Path, repo: Path):
    """The progress sink's start() runs after enumeration and before any file is read."""
    from chinvex.ingest.pipeline import IngestOptions, run_ingest
    from chinvex.context.registry import Registry

    (repo / "ghost.py").write_text("def ghost():\n    return 'boo'\n")
    Registry().create("Ghost", includes={"repos": [str(repo)]})
    config = Registry().resolve("Ghost")

    class DeleteOnStart:
        def start(self, total):
            (repo / "ghost.py").unlink()

        def advance(self, label): ...
        def embedded(self, count): ...
        def decision(self, decision): ...
        def finish(self): ...

    summary = run_ingest(config, IngestOptions(progress=DeleteOnStart()))
    assert summary.status == "completed_with_errors"
    assert len(summary.errors) == 1 and "ghost.py" in summary.errors[0].message
    assert summary.sources.indexed == 2
    # The failure is remembered in the fingerprint: back in place, the file is retried.
    (repo / "ghost.py").write_text("def ghost():\n    return 'boo'\n")
    retried = run_ingest(config, IngestOptions())
    assert retried.status == "completed" and retried.sources.reasons == {"retry_after_error": 1}
    (repo / "ghost.py").unlink()
    again = run_ingest(config, IngestOptions())
    assert again.status == "completed" and again.sources.removed == 1


def test_unreadable_file_is_an_error_and_keeps_what_was_indexed(chinvex_home: Path, repo: Path,
                                                                 tmp_path: Path, index_db,
                                                                 chunk_ids, vector_ids,
                                                                 ingest_json):
    """A file that became unreadable is an error naming it (exit 1), the rest of the run goes
    on, and the file's indexed chunks stay: a permission glitch must not wipe them."""
    from helpers import CHINVEX_BIN

    prefix = without_dac_override(tmp_path)
    locked = repo / "locked.py"
    locked.write_text("def hidden():\n    return 'the marmoset ledger is balanced'\n")
    assert run_cli_in_process("context", "create", "Perm", "--repo", str(repo)).code == 0
    assert ingest_json("Perm").json["sources"]["indexed"] == 3
    with index_db(chinvex_home, "Perm") as conn:
        locked_chunks = {r[0] for r in conn.execute(
            "SELECT c.chunk_id FROM chunks c JOIN documents d USING(doc_id) WHERE d.source_uri=?",
            (str(locked),))}
    assert locked_chunks
    before = chunk_ids(chinvex_home, "Perm")
    locked.write_text("def hidden():\n    return 'a new version nobody may read yet'\n")
    locked.chmod(0)
    (repo / "fresh.py").write_text("def fresh():\n    return 'indexed despite the locked file'\n")
    proc = subprocess.run([*prefix, str(CHINVEX_BIN), "ingest", "--context", "Perm", "--json"],
                          capture_output=True, text=True, timeout=600, env=dict(os.environ))
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == 0, (proc.stdout, proc.stderr)
    summary = json.loads(proc.stdout)
    assert [e["source_uri"] for e in summary["errors"]] == [str(locked)]
    message = summary["errors"][0]["message"]
    assert "locked.py" in message and "ermission denied" in message, message
    assert summary["sources"]["indexed"] == 1 and summary["sources"]["reasons"] == {"new_file": 1}
    assert summary["sources"]["removed"] == 0
    after = chunk_ids(chinvex_home, "Perm")
    assert before <= after and locked_chunks <= after, "the unreadable file's chunks must stay"
    assert vector_ids(chinvex_home, "Perm") == after
    hits = run_cli("search", "--context", "Perm", "marmoset ledger balanced", "--json").json["results"]
    assert hits and hits[0]["source_uri"] == str(locked)
    found = run_cli("search", "--context", "Perm", "indexed despite the locked file", "--json").json
    assert any(r["source_uri"].endswith("fresh.py") for r in found["results"])


def test_concurrent_ingest_gets_a_clear_busy_message(chinvex_home: Path, repo: Path):
    from chinvex.locking import context_lock
    from chinvex.context.registry import Registry

    assert run_cli_in_process("context", "create", "Busy", "--repo", str(repo)).code == 0
    with context_lock(Registry().resolve("Busy"), purpose="test"):
        result = run_cli("ingest", "--context", "Busy", "--json")
    assert result.code == 1 and result.json["error"]["code"] == "LOCKED"
    assert "busy" in result.json["error"]["message"]


def test_vector_journal_recovery_plan():
    from chinvex.storage.pending import plan_vector_recovery

    journal = {"orphan": "h1", "removed": None, "same": "h2", "renamed": "new", "never_upserted": "h3"}
    owned = {"same": "h2", "renamed": "old", "never_upserted": "h3"}
    plan = plan_vector_recovery(journal, owned, present={"same", "renamed"})
    assert plan.delete == ["orphan", "removed"]
    assert plan.reembed == ["never_upserted", "renamed"]
