"""`chinvex doctor` as a command: the report's contract on a clean index, context.json problems,
stale, failed and skipped sources, interrupted runs and the lock, `--wait`, and a read-only index.

The real index every test damages is built by conftest.Index.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from helpers import assert_no_traceback, run_cli, run_cli_in_process

REQUIRED_CHECKS = {
    "context_config", "index_files", "sqlite_integrity", "foreign_keys", "fts_index", "embedder",
    "vectors_missing", "vectors_orphaned", "vectors_stale", "fingerprints_without_documents",
    "documents_without_chunks", "origins_without_documents", "documents_without_origins",
    "untracked_documents", "failed_sources", "stale_sources", "last_ingest", "lock",
}


def test_clean_index_passes_and_json_has_the_contract_shape(index):
    result = run_cli("doctor", "--context", "Doc", "--json")
    assert_no_traceback(result)
    assert result.code == 0, result
    data = result.json
    assert data["context"] == "Doc" and data["ok"] is True
    names = {c["name"] for c in data["checks"]}
    assert REQUIRED_CHECKS <= names
    for check in data["checks"]:
        assert {"name", "status", "count", "examples", "repairable", "repaired"} <= set(check)
        assert check["status"] == "ok", check  # blank file and turn-less rollout are not flagged
    human = run_cli("doctor", "--context", "Doc")
    assert human.code == 0 and "no problems found" in human.stdout
    unknown = run_cli("doctor", "--context", "Nope", "--json")
    assert unknown.code == 1 and unknown.json["error"]["code"] == "CONTEXT_NOT_FOUND"


def test_context_json_problems(index, chinvex_home: Path):
    import shutil

    shutil.rmtree(index.notes)
    result = run_cli_in_process("doctor", "--context", "Doc", "--json")
    assert result.code == 1
    check = {c["name"]: c for c in result.json["checks"]}["context_config"]
    assert check["status"] == "error" and str(index.notes) in check["examples"][0]
    assert "does not exist" in check["examples"][0]

    path = chinvex_home / "contexts" / "Doc" / "context.json"
    data = json.loads(path.read_text())
    data["weights"] = "heavy"
    path.write_text(json.dumps(data))
    result = run_cli_in_process("doctor", "--context", "Doc", "--json")
    assert_no_traceback(result)
    assert result.code == 1
    [check] = result.json["checks"]
    assert check["name"] == "context_config" and "weights" in check["examples"][0]
    path.write_text("{not json")
    human = run_cli_in_process("doctor", "--context", "Doc")
    assert_no_traceback(human)
    assert human.code == 1 and "not valid JSON" in human.stdout


def test_stale_and_failed_sources_are_warnings_only(index):
    (index.repo / "alpha.py").write_text("def changed():\n    return 1\n")
    (index.notes / "idea.md").unlink()
    (index.codex / "rollout-2026-01-01T00-00-00-0000.jsonl").write_text('{"some": "thing else"}\n')
    index.ingest()  # records the bad rollout as skipped, and removes the note
    (index.repo / "beta.py").write_text("def changed_after():\n    return 2\n")
    (index.repo / "blank.txt").unlink()
    report, checks = index.doctor()
    assert report.ok, index.problems(checks)  # warnings do not fail the exit status
    stale = checks["stale_sources"]
    assert stale.status == "warning"
    assert set(stale.examples) == {f"modified: {index.repo / 'beta.py'}", f"deleted: {index.repo / 'blank.txt'}"}
    skipped = checks["skipped_sources"]
    assert skipped.status == "ok" and skipped.count == 1 and "not a Codex rollout" in skipped.examples[0]
    assert checks["failed_sources"].status == "ok"
    result = run_cli_in_process("doctor", "--context", "Doc")
    assert result.code == 0 and "modified" in result.stdout


def test_interrupted_run_and_stale_lock_note(index):
    from chinvex.locking import lock_path

    dead = subprocess.Popen(["true"])
    dead.wait()
    holder = lock_path(index.config).with_suffix(".holder")
    holder.write_text(f"ingest (pid {dead.pid})")
    with index.conn() as conn:
        conn.execute("INSERT INTO ingest_runs(run_id, context_name, started_at, status) "
                     "VALUES('killed', 'Doc', '2999-01-01T00:00:00Z', 'running')")
    report, checks = index.doctor()
    assert report.ok
    assert checks["last_ingest"].status == "warning" and "interrupted" in checks["last_ingest"].message
    assert checks["lock"].status == "warning" and checks["lock"].repairable
    result = run_cli_in_process("doctor", "--context", "Doc", "--repair", "--json")
    assert result.code == 0, result
    checks = {c["name"]: c for c in result.json["checks"]}
    assert checks["lock"]["repaired"]
    assert not holder.exists()
    with index.conn() as conn:
        assert conn.execute("SELECT status FROM ingest_runs WHERE run_id='killed'").fetchone()[0] == "interrupted"


def test_repair_needs_the_lock_but_checking_does_not(index):
    from chinvex.locking import context_lock

    with context_lock(index.config, purpose="ingest"):
        repair = run_cli("doctor", "--context", "Doc", "--repair", "--json")
        check = run_cli("doctor", "--context", "Doc", "--json")
    assert repair.code == 1 and repair.json["error"]["code"] == "LOCKED"
    assert check.code == 0, check
    lock = {c["name"]: c for c in check.json["checks"]}["lock"]
    assert lock["status"] == "ok" and f"pid {os.getpid()}" in lock["message"]


def test_wait_flag_waits_for_the_lock(index):
    import threading

    from chinvex.locking import context_lock

    held = threading.Event()
    release = threading.Event()

    def hold() -> None:
        with context_lock(index.config, purpose="ingest"):
            held.set()
            release.wait(30)

    thread = threading.Thread(target=hold)
    thread.start()
    held.wait(10)
    try:
        busy = run_cli("doctor", "--context", "Doc", "--repair")
        assert busy.code == 1 and "pass --wait" in busy.stderr, busy
        timer = threading.Timer(2.0, release.set)
        timer.start()
        waited = run_cli("doctor", "--context", "Doc", "--repair", "--wait", "--json")
        assert waited.code == 0 and waited.json["ok"], waited
        assert release.is_set()  # it returned only after the lock was given back
    finally:
        release.set()
        thread.join()
    plain = run_cli("doctor", "--context", "Doc", "--wait")
    assert plain.code == 0 and "no problems found" in plain.stdout, plain


def test_read_only_index(index, tmp_path: Path):
    """chmod -R a-w on the index folder (the test runs the CLI without root's right to ignore
    file modes): search still works, with vectors; doctor reports no false errors; ingest and
    repair stop with one line and exit 1, changing nothing."""
    from helpers import without_dac_override

    prefix = without_dac_override(tmp_path)
    folder = Path(index.config.index.sqlite_path).parent
    subprocess.run(["chmod", "-R", "a-w", str(folder)], check=True)
    before = {p: p.stat().st_mtime_ns for p in folder.rglob("*") if p.is_file()}
    env = dict(os.environ)

    def run(*args: str) -> subprocess.CompletedProcess:
        from helpers import CHINVEX_BIN

        return subprocess.run([*prefix, str(CHINVEX_BIN), *args], capture_output=True, text=True,
                              env=env, timeout=600)

    try:
        found = run("search", "--context", "Doc", "flux capacitor gigawatts", "--json")
        assert found.returncode == 0, found.stderr
        data = json.loads(found.stdout)
        assert data["stats"]["mode"] == "hybrid", data["stats"]
        assert any("ideamarker" in r["text"] for r in data["results"])
        doctor = run("doctor", "--context", "Doc", "--json")
        assert doctor.returncode == 0, doctor.stdout
        bad = {c["name"]: c["message"] for c in json.loads(doctor.stdout)["checks"] if c["status"] == "error"}
        assert bad == {}
        for args in (("ingest",), ("doctor", "--repair")):
            refused = run(*args, "--context", "Doc")
            assert refused.returncode == 1, (args, refused)
            assert "Traceback" not in refused.stderr and "internal error" not in refused.stderr
            assert refused.stderr.count("\n") == 1 and "read-only" in refused.stderr, refused.stderr
    finally:
        subprocess.run(["chmod", "-R", "u+w", str(folder)], check=True)
    assert {p: p.stat().st_mtime_ns for p in folder.rglob("*") if p.is_file() and p in before} == before


def test_the_report_lists_the_files_passed_over():
    """`stats` says "'chinvex doctor' lists them": the human report must, though the check is ok."""
    from chinvex.doctor.report import Check, DoctorReport, format_report

    skipped = Check("skipped_sources", count=1, examples=["/s/x.jsonl: not a Codex rollout (no records)"],
                    message="1 file under the sources is not a session of its kind")
    text = format_report(DoctorReport("Doc", [Check("lock", message="not held"), skipped]))
    assert "/s/x.jsonl: not a Codex rollout (no records)" in text and text.endswith("no problems found")
