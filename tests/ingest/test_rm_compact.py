"""`chinvex rm` and `chinvex compact` (issue 19): removed documents stay removed across ingests
while unchanged (tombstones), come back when their content changes or the tombstones are purged,
doctor stays clean, and compact reports the bytes before and after. Real CLI, real index."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from helpers import FIXTURES, assert_no_traceback, run_cli, run_cli_in_process

CHATS = FIXTURES / "chatgpt-export" / "chatlore"


@pytest.fixture
def ctx(tmp_path: Path):
    repo, chats = tmp_path / "repo", tmp_path / "chats"
    repo.mkdir()
    shutil.copytree(CHATS, chats)
    (repo / "keep.md").write_text("# Keep\n\nThe heron note stays in the index.\n")
    (repo / "drop.md").write_text("# Drop\n\nThe cormorantmarker note is removed by the user.\n")
    env = {"CHINVEX_HOME": str(tmp_path / "home")}
    assert run_cli_in_process("context", "create", "R", "--repo", str(repo), "--chat-root", str(chats),
                              env=env).code == 0
    assert run_cli_in_process("ingest", "--context", "R", env=env).code == 0
    return {"env": env, "repo": repo, "chats": chats}


def _found(env, term: str) -> bool:
    hits = run_cli("search", term, "--context", "R", "--mode", "fts", "--json", env=env).json["results"]
    return any(term in h["text"] for h in hits)


def _doctor_clean(env) -> None:
    doctor = run_cli_in_process("doctor", "--context", "R", "--json", env=env)
    assert_no_traceback(doctor)
    bad = [c for c in doctor.json["checks"] if c["status"] != "ok"]
    assert doctor.code == 0 and not bad, bad


def _a_conversation(env) -> dict:
    stats = run_cli("search", "the", "--context", "R", "--source-types", "chat", "--mode", "fts", "--k", "1",
                    "--json", env=env).json["results"]
    assert stats, "the export holds conversations"
    return stats[0]


def test_removed_documents_stay_removed_until_they_change(ctx):
    env, repo = ctx["env"], ctx["repo"]
    chat = _a_conversation(env)
    removed = run_cli("rm", str(repo / "drop.md"), chat["doc_id"], "--context", "R", "--json", env=env)
    assert removed.code == 0, removed
    assert {d["doc_id"] for d in removed.json["removed"]} >= {chat["doc_id"]} and len(removed.json["removed"]) == 2
    assert not _found(env, "cormorantmarker") and _found(env, "heron")
    _doctor_clean(env)

    (repo / "keep.md").write_text("# Keep\n\nThe heron note stays in the index. Edited.\n")
    export = ctx["chats"] / "conversations.json"
    export.write_text(export.read_text() + "\n")  # the export is read again, its conversations unchanged
    again = run_cli_in_process("ingest", "--context", "R", "--json", env=env)
    assert again.code == 0, again
    assert not _found(env, "cormorantmarker")
    got = run_cli("get", chat["chunk_id"], "--context", "R", env=env)
    assert got.code == 1  # the conversation's chunks did not come back
    _doctor_clean(env)

    (repo / "drop.md").write_text("# Drop\n\nThe cormorantmarker note, rewritten: it is wanted again.\n")
    back = run_cli_in_process("ingest", "--context", "R", env=env)
    assert back.code == 0 and _found(env, "cormorantmarker")
    _doctor_clean(env)


def test_purge_brings_documents_back_and_compact_reports_sizes(ctx):
    env, repo = ctx["env"], ctx["repo"]
    assert run_cli("rm", str(repo / "drop.md"), "--context", "R", env=env).code == 0
    purged = run_cli("rm", "--purge", "--context", "R", "--json", env=env)
    assert purged.code == 0, purged
    assert purged.json["tombstones_purged"] == 1
    sizes = purged.json["compact"]
    assert sizes["after"]["total"] > 0 and set(sizes["before"]) == {"hybrid_db", "chroma", "total"}
    assert run_cli_in_process("ingest", "--context", "R", env=env).code == 0
    assert _found(env, "cormorantmarker")  # purged: read again, indexed again
    _doctor_clean(env)
    compacted = run_cli("compact", "--context", "R", "--json", env=env)
    assert compacted.code == 0, compacted
    assert compacted.json["after"]["total"] <= compacted.json["before"]["total"]
    human = run_cli("compact", "--context", "R", env=env)
    assert human.code == 0 and " -> " in human.stdout
    assert _found(env, "heron")  # the index still answers
    _doctor_clean(env)


def test_rm_errors(ctx):
    env = ctx["env"]
    nothing = run_cli("rm", "--context", "R", env=env)
    assert nothing.code == 2 and "nothing to remove" in nothing.stderr
    unknown = run_cli("rm", "0123456789abcdef", "--context", "R", env=env)
    assert_no_traceback(unknown)
    assert unknown.code == 1 and "0123456789abcdef" in unknown.stderr
