"""Issue 5: conversation sources end to end through `chinvex ingest` (real embedder, real Chroma).

Turn counts were counted by hand from the fixture files (see the comments in
tests/adapters/cx_sessions_jsonl/, tests/adapters/chat_export/ and tests/adapters/test_claude_code.py); here
they are checked after the whole pipeline (parse → origin ledger → stored turns).
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from collections import Counter
from pathlib import Path

import pytest

from helpers import FIXTURES, assert_no_traceback, run_cli, run_cli_in_process

# source_uri suffix of the document's winning copy -> (source_type, {role: count})
EXPECTED = {
    "chatgpt2graph/conversations.json#966da5c4-5bb7-4e4d-ab6d-a7316b96266e": ("chat", {"user": 8, "assistant": 12, "tool": 11}),
    "chatlore/conversations.json#11111111-aaaa-4bbb-8ccc-000000000001": ("chat", {"user": 2, "assistant": 3, "tool": 1}),
    "chatlore/conversations.json#22222222-aaaa-4bbb-8ccc-000000000002": ("chat", {"user": 1, "assistant": 1}),
    "-Users-example/0a1b2c3d-4e5f-4061-8071-2a3b4c5d6e7f.jsonl": ("agent_session", {"user": 1, "assistant": 1, "tool": 1}),
    "subagents/agent-a0ad4f44468bdf20d.jsonl": ("agent_session", {"user": 1, "assistant": 1, "tool": 1}),
    "claude-code/agent-sessions/schema_drift.jsonl": ("agent_session", {"user": 2, "assistant": 1, "tool": 1}),
    "claude-code/agent-sessions/small.jsonl": ("agent_session", {"user": 6, "assistant": 6, "tool": 3, "system": 1}),
    "incremental-simple/turn-1.jsonl": ("agent_session", {"user": 1, "assistant": 1}),
    "-tmp-private/4c2ddfdc-b619-4525-8d03-1950fb1b0257.jsonl": ("agent_session", {"user": 3, "assistant": 4, "tool": 6}),
    "-tmp-private/agent-36541525.jsonl": ("agent_session", {"user": 1, "assistant": 1}),
    "-tmp-private/agent-50243ee8.jsonl": ("agent_session", {"user": 1, "assistant": 1}),
    # The 0.169 legacy thread exists four times (plain, truncated copy, zstd copy, CRLF set-up
    # lines only): one document, from the most complete copy.
    "legacy/sessions/2026/11/22/rollout-2026-11-22T02-29-41-01a20116-7f80-7e82-8754-e5125007d434.jsonl": ("codex_session", {"user": 2, "assistant": 4, "tool": 1}),
    "rollout-2026-11-22T02-29-22-01a20116-364e-7ac1-8d5a-b68a4dbbf7c6.jsonl": ("codex_session", {"user": 4, "assistant": 8, "tool": 1, "system": 1}),
    "apply-patch/sessions/2026/11/28/rollout-2026-11-28T21-23-09-01a2240a-5ee5-7170-a256-a40cba21d208.jsonl": ("codex_session", {"user": 1, "assistant": 2, "tool": 1}),
    "apply-patch/sessions/2026/11/28/rollout-2026-11-28T21-23-15-01a2240a-7629-7143-95ba-74722ae2ab78.jsonl": ("codex_session", {"user": 1, "assistant": 2, "tool": 1}),
    "codex-rollout/public/agent-sessions/large.jsonl": ("codex_session", {"user": 6, "assistant": 7, "tool": 1}),
    # 17 system turns: 16 compaction and error notes, and the error its group's task_complete carries
    "codex-rollout/public/agent-sessions/small.jsonl": ("codex_session", {"user": 4, "assistant": 8, "tool": 33, "system": 17}),
    # a real Codex 0.108 Windows session (MIT; codex-rollout/behaviour_lab/PROVENANCE.md)
    "behaviour_lab/sessions/2026/03/05/rollout-2026-03-05T22-50-24-019cc1e9-6537-70a3-a8cd-d2957e043dd4.jsonl": ("codex_session", {"user": 1, "assistant": 5, "tool": 11}),
    # turn-1.jsonl is a prefix of turn-2.jsonl (same thread): one document, the longer copy.
    "incremental/turn-2.jsonl": ("codex_session", {"user": 2, "assistant": 2}),
    "incremental/turn-spawn-skill.jsonl": ("codex_session", {"user": 1, "tool": 3}),
    "rollout-2026-05-11T13-28-45-019e1695-0522-7c83-8b39-0dd379793f80.jsonl": ("codex_session", {"user": 3, "assistant": 3, "tool": 38}),
    "rollout-2026-02-23T12-41-04-019c8a4d-8f45-7010-8b5d-7fad920aa6f9.jsonl": ("codex_session", {"user": 1, "assistant": 43, "tool": 118}),
    "rollout-2026-02-23T13-19-38-019c8a70-dda7-7f33-98ea-f30553347322.jsonl": ("codex_session", {"user": 1, "assistant": 2, "tool": 1}),
    "rollout-2026-02-23T20-34-25-019c8bfe-ec25-79e0-97d7-bda6a9c575ff.jsonl": ("codex_session", {"user": 1, "assistant": 12, "tool": 5}),
}


@pytest.fixture(scope="module")
def fixtures_index(fixtures_context):
    """The session's context over tests/fixtures/samples (conftest.fixtures_context), read only here."""
    return fixtures_context


def _turns_by_doc(home: Path, context: str) -> dict[str, tuple[str, Counter]]:
    with sqlite3.connect(home / "indexes" / context / "hybrid.db") as conn:
        rows = conn.execute(
            "SELECT d.source_uri, d.source_type, json_extract(t.turn_json, '$.role') FROM documents d "
            "LEFT JOIN conversation_turns t ON t.doc_id = d.doc_id")
        out: dict[str, tuple[str, Counter]] = {}
        for uri, source_type, role in rows:
            entry = out.setdefault(uri, (source_type, Counter()))
            if role:
                entry[1][role] += 1
        return out


def test_every_fixture_ingests_with_its_turn_counts(fixtures_index):
    summary = fixtures_index["summary"]
    # The only file passed over is the drift file that holds no Codex rollout at all.
    assert summary["errors"] == []
    assert [e["source_uri"].rsplit("/", 2)[-2:] for e in summary["unrecognised"]] == [["agent-sessions", "schema_drift.jsonl"]]
    assert "not a Codex rollout" in summary["unrecognised"][0]["message"]
    docs = _turns_by_doc(fixtures_index["home"], "fixtures")
    assert len(docs) == len(EXPECTED), sorted(docs)
    for suffix, (source_type, roles) in EXPECTED.items():
        matches = [uri for uri in docs if uri.endswith(suffix)]
        assert len(matches) == 1, (suffix, matches)
        got_type, got_roles = docs[matches[0]]
        assert got_type == source_type and dict(got_roles) == roles, (suffix, dict(got_roles))


def test_tool_output_and_user_text_are_found_with_thread_citations(fixtures_index):
    env = fixtures_index["env"]
    # Something the user typed (codemie Desktop session) and something only in a tool output.
    user = run_cli("search", "--context", "fixtures", "draft demo scenario governance budgeting analytics",
                   "--json", env=env).json["results"][0]
    assert user["source_type"] == "codex_session"
    assert user["metadata"]["thread_id"] == "019e1695-0522-7c83-8b39-0dd379793f80"
    assert user["metadata"]["turn_start"] <= user["metadata"]["turn_end"]
    assert "governance" in user["text"].lower()
    with sqlite3.connect(fixtures_index["home"] / "indexes" / "fixtures" / "hybrid.db") as conn:
        tool_turns = conn.execute(
            "SELECT t.doc_id, t.turn_index, json_extract(t.turn_json, '$.text'), "
            "json_extract(d.metadata_json, '$.thread_id') FROM conversation_turns t "
            "JOIN documents d USING (doc_id) WHERE json_extract(t.turn_json, '$.role') = 'tool' "
            "AND d.source_type = 'codex_session' ORDER BY t.doc_id, t.turn_index").fetchall()
    # A distinctive line from the *output* part of a real tool turn (the input comes first,
    # the output after its "Output...:" line), searched for with the whole CLI.
    found = [(doc_id, index, line.strip(), thread)
             for doc_id, index, text, thread in tool_turns if "\nOutput" in text
             for line in text.split("\nOutput", 1)[1].splitlines()[1:]
             if len(line.strip()) > 40 and line.count(" ") > 4]
    assert found, "the fixtures hold tool outputs"
    doc_id, index, probe, thread = found[0]
    hits = run_cli("search", "--context", "fixtures", probe[:120], "--json", env=env).json["results"]
    hit = next(h for h in hits if probe[:60] in h["text"])
    assert hit is hits[0], [h["source_uri"] for h in hits[:3]]
    assert hit["doc_id"] == doc_id and thread and hit["metadata"]["thread_id"] == thread
    assert hit["metadata"]["turn_start"] <= index + 1 <= hit["metadata"]["turn_end"]
    assert f"[Turn {index + 1} of " in hit["text"]


def test_append_reingests_only_the_new_turns(tmp_path: Path):
    codex = tmp_path / "codex" / "sessions" / "2026" / "05" / "11"
    codex.mkdir(parents=True)
    target = codex / "rollout-2026-05-11T10-00-00-session.jsonl"
    turn1 = (FIXTURES / "codex-rollout/public/codemie-code/incremental/turn-1.jsonl").read_bytes()
    turn2 = (FIXTURES / "codex-rollout/public/codemie-code/incremental/turn-2.jsonl").read_bytes()
    assert turn2.startswith(turn1)
    target.write_bytes(turn1)
    assert run_cli_in_process("context", "create", "App", "--codex-sessions", str(tmp_path / "codex")).code == 0
    first = run_cli_in_process("ingest", "--context", "App", "--json")
    assert first.code == 0, first
    with open(target, "ab") as handle:
        handle.write(turn2[len(turn1):])
    second = run_cli_in_process("ingest", "--context", "App", "--json")
    assert second.code == 0, second
    home = Path(run_cli_in_process("context", "show", "App", "--json").json["context"]["index"]["sqlite_path"]).parent
    with sqlite3.connect(home / "hybrid.db") as conn:
        turns = conn.execute("SELECT COUNT(*) FROM conversation_turns").fetchone()[0]
        metas = [json.loads(r[0]) for r in conn.execute("SELECT metadata_json FROM chunks")]
    assert turns == 4
    new_chunks = [m for m in metas if m["turn_start"] >= 3]
    assert new_chunks, "the appended turns are indexed"
    assert second.json["chunks"]["embedded"] == len(new_chunks)
    assert second.json["sources"]["reasons"] == {"size_changed": 1}
    # A touch (same size, new mtime): a rollout keeps a resume state instead of a content hash,
    # so nothing is compared and the reason is what was seen; resuming finds nothing new.
    stat = target.stat()
    os.utime(target, ns=(stat.st_atime_ns, stat.st_mtime_ns + 3_000_000_000))
    touched = run_cli_in_process("ingest", "--context", "App", "--json")
    assert touched.code == 0, touched
    assert touched.json["sources"]["reasons"] == {"mtime_changed": 1}
    assert touched.json["chunks"]["embedded"] == 0 and touched.json["chunks"]["deleted"] == 0


def _plant_secrets(codex_root: Path) -> tuple[str, str, str, str]:
    """A Codex rollout whose tool output (an `env` dump) holds four kinds of secret next to the
    phrase "zorblax deployment finished". Returns (aws, github, openai, pem_body); the values
    are split literals so this file holds nothing a secret scanner would flag."""
    aws = "AKIA" + "QWERTYUIOPAS" + "DFGH"
    github = "ghp_" + "a1B2c3D4e5F6g7H8i9J0" + "k1L2m3N4o5P6"
    openai = "sk-proj-" + "Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0Fe" + "DcBaZyXwVuTs"
    pem_body = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7" + "x" * 40
    pem = ("-----BEGIN " + "PRIVATE KEY-----\n" + pem_body + "\n" + pem_body[::-1] + "\n-----END "
           + "PRIVATE KEY-----")
    source = (FIXTURES / "codex-rollout/public/codemie-code/incremental/turn-1.jsonl").read_text()
    lines = source.splitlines()
    planted = {
        "timestamp": "2026-05-11T10:00:09.000Z", "type": "response_item",
        "payload": {"type": "function_call_output", "call_id": "call_planted",
                    "output": f"export AWS_ACCESS_KEY_ID={aws}\nGITHUB_TOKEN={github}\n"
                              f"OPENAI_API_KEY={openai}\n{pem}\nzorblax deployment finished"},
    }
    call = {"timestamp": "2026-05-11T10:00:08.000Z", "type": "response_item",
            "payload": {"type": "function_call", "name": "exec_command", "call_id": "call_planted",
                        "arguments": json.dumps({"cmd": "env"})}}
    sessions = codex_root / "sessions"
    sessions.mkdir(parents=True)
    (sessions / "rollout-2026-05-11T10-00-00-planted.jsonl").write_text(
        "\n".join(lines[:-1] + [json.dumps(call), json.dumps(planted), lines[-1]]) + "\n")
    return aws, github, openai, pem_body


def _set_redaction(context: str, enabled: bool) -> None:
    """Edit context.json as a user would."""
    path = Path(run_cli_in_process("context", "show", context, "--json").json["path"])
    data = json.loads(path.read_text())
    data["redaction"] = {"enabled": enabled}
    path.write_text(json.dumps(data, indent=2))


def _texts(context: str, query: str, *mode: str) -> str:
    found = run_cli("search", "--context", context, query, "--json", *mode).json["results"]
    return "\n".join(r["text"] for r in found)


def test_planted_secrets_are_redacted_and_counted(tmp_path: Path):
    from chinvex.redaction import redact  # noqa: F401  (the module under test runs in the CLI)

    aws, github, openai, pem_body = _plant_secrets(tmp_path / "codex")
    assert run_cli_in_process("context", "create", "Sec", "--codex-sessions", str(tmp_path / "codex")).code == 0
    summary = run_cli_in_process("ingest", "--context", "Sec", "--json").json
    counts = summary["redactions"]
    assert counts.get("aws_access_key") == 1 and counts.get("github_token") == 1
    assert counts.get("openai_key") == 1 and counts.get("private_key") == 1
    found = run_cli("search", "--context", "Sec", "zorblax deployment finished", "--json").json["results"]
    assert found and "[REDACTED:aws_access_key]" in "".join(r["text"] for r in found)
    for secret in (aws, github, openai, pem_body):
        hits = run_cli("search", "--context", "Sec", secret, "--json", "--mode", "fts").json["results"]
        assert all(secret not in r["text"] for r in hits)
    db = Path(run_cli_in_process("context", "show", "Sec", "--json").json["context"]["index"]["sqlite_path"])
    raw = db.read_bytes() + b"".join(p.read_bytes() for p in db.parent.rglob("*") if p.is_file())
    for secret in (aws, github, openai, pem_body):
        assert secret.encode() not in raw, "a secret reached the index files"


def test_switching_redaction_on_redacts_what_was_stored_verbatim(tmp_path: Path):
    """`redaction.enabled: false` stores secrets verbatim; switching it back on must redact
    every turn already stored, not only turns appended later. The switch is part of the chunker
    version, so the session is re-read as `chunker_upgraded`, and from its start: a resumed
    (append-aware) read would keep the stored, unredacted turns."""
    aws, github, openai, pem_body = _plant_secrets(tmp_path / "codex")
    assert run_cli_in_process("context", "create", "Toggle", "--codex-sessions", str(tmp_path / "codex")).code == 0
    _set_redaction("Toggle", False)
    plain = run_cli_in_process("ingest", "--context", "Toggle", "--json")
    assert plain.code == 0, plain
    assert plain.json["redactions"] == {}
    assert github in _texts("Toggle", "zorblax deployment finished")
    _set_redaction("Toggle", True)
    redacted = run_cli_in_process("ingest", "--context", "Toggle", "--json")
    assert redacted.code == 0, redacted
    assert redacted.json["sources"]["reasons"] == {"chunker_upgraded": 1}
    assert redacted.json["redactions"].get("github_token") == 1
    texts = _texts("Toggle", "zorblax deployment finished")
    assert "[REDACTED:github_token]" in texts
    for secret in (aws, github, openai, pem_body):
        assert secret not in texts
        assert secret not in _texts("Toggle", secret, "--mode", "fts")
    home = Path(run_cli_in_process("context", "show", "Toggle", "--json").json["context"]["index"]["sqlite_path"])
    with sqlite3.connect(home) as conn:
        stored = "".join(r[0] for r in conn.execute(
            "SELECT turn_json FROM conversation_turns UNION ALL SELECT text FROM chunks"))
    assert github not in stored and aws not in stored


def test_bad_conversation_inputs_are_per_source_errors(tmp_path: Path):
    chats = tmp_path / "chats"
    (chats / "broken").mkdir(parents=True)
    (chats / "broken" / "conversations.json").write_text("this is { not json")
    shutil.copy(FIXTURES / "chatgpt-export/chatlore/conversations.json", chats / "conversations.json")
    codex = tmp_path / "codex" / "sessions"
    codex.mkdir(parents=True)
    (codex / "unrelated-metrics.jsonl").write_text('{"cpu": 0.5, "mem": 12}\n{"cpu": 0.7, "mem": 13}\n')
    big = json.dumps({"timestamp": "2026-01-01T00:00:00.000Z", "type": "response_item",
                      "payload": {"type": "function_call_output", "call_id": "c1",
                                  "output": "megabyte line " + "x" * 5_000_000}})
    head = (FIXTURES / "codex-rollout/public/codemie-code/incremental/turn-1.jsonl").read_text()
    (codex / "rollout-2026-01-01T00-00-00-bigline.jsonl").write_text(head + big + "\n")
    assert run_cli_in_process("context", "create", "BadConv", "--chat-root", str(chats),
                              "--codex-sessions", str(tmp_path / "codex")).code == 0
    result = run_cli_in_process("ingest", "--context", "BadConv", "--json")
    assert_no_traceback(result)
    assert result.code == 0 and result.json["errors"] == []  # one bad file never fails a run
    skipped = {Path(e["source_uri"]).name: e["message"] for e in result.json["unrecognised"]}
    assert set(skipped) == {"conversations.json", "unrelated-metrics.jsonl"}, skipped
    assert any("broken" in e["source_uri"] for e in result.json["unrecognised"])
    assert "not a JSON array" in skipped["conversations.json"]
    assert "not a Codex rollout" in skipped["unrelated-metrics.jsonl"]
    assert result.json["sources"]["skipped_unrecognised"] == 2
    again = run_cli_in_process("ingest", "--context", "BadConv", "--json")  # reported once
    assert again.code == 0 and again.json["unrecognised"] == [], again
    assert result.json["sources"]["indexed"] == 2  # the good export and the rollout with a 5 MB line
    found = run_cli("search", "--context", "BadConv", "postgres indexing", "--json").json["results"]
    assert found and found[0]["source_type"] == "chat"
