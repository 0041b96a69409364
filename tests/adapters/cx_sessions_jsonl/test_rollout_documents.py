"""Rollout files → documents: the contract, fixture turn counts, metadata and thread ids."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
import orjson
import pytest
from chinvex.ids import thread_doc_id
from chinvex.ingest.adapters import adapter as registered_adapter
from chinvex.models.sources import Adapter, SourceError
from chinvex_adapters.cx_sessions_jsonl import CodexRolloutAdapter
from rollout_support import (
    ADAPTER,
    AGENT_SESSIONS,
    CRLF,
    EXPECTED,
    LEGACY,
    PAGINATED,
    ROLLOUT_NAME,
    ev,
    meta_line,
    parse,
    ri,
    user_msg,
    write,
)


def test_adapter_contract_and_registration() -> None:
    assert isinstance(ADAPTER, Adapter)
    assert (ADAPTER.name, ADAPTER.source_type, ADAPTER.parser_version) == (
        "cx_sessions_jsonl", "codex_session", "cx_sessions_jsonl_v3")
    assert type(registered_adapter("cx_sessions_jsonl")) is CodexRolloutAdapter


@pytest.mark.parametrize("path,total,roles,how", EXPECTED, ids=[e[0].name[:40] for e in EXPECTED])
def test_fixture_turn_counts(path: Path, total: int, roles: dict, how: str) -> None:
    doc, report = parse(path)
    assert len(doc.turns) == total, how
    assert dict(Counter(t.role for t in doc.turns)) == roles, how
    assert doc.source == "cx_sessions_jsonl" and doc.source_type == "codex_session"
    assert doc.source_uri == str(path)
    assert doc.doc_id == thread_doc_id("codex_session", doc.thread_id)
    ids = [t.turn_id for t in doc.turns]
    assert ids == [f"t{i:05d}" for i in range(total)]
    assert isinstance(report.state, dict)
    orjson.dumps(report.state)  # strictly JSON-able
    assert report.state["offset"] <= path.stat().st_size or path.suffix == ".zst"


def test_schema_drift_is_not_a_rollout() -> None:
    # 4 lines without the {timestamp,type,payload} envelope + 1 world_state: no session_meta, no
    # conversation record -> an error naming the file, not an empty document.
    with pytest.raises(SourceError, match=r"schema_drift\.jsonl: not a Codex rollout"):
        parse(AGENT_SESSIONS / "schema_drift.jsonl")


def test_crlf_file_is_a_set_up_only_session() -> None:
    doc, report = parse(CRLF)
    assert doc.turns == []
    assert doc.thread_id == "01a20116-7f80-7e82-8754-e5125007d434"
    assert report.counts["lines_blank"] == 1 and report.counts["lines_drift"] == 0
    assert any("no conversation turns yet" in w for w in report.warnings)


def test_legacy_document_fields() -> None:
    doc, report = parse(LEGACY)
    assert doc.thread_id == "01a20116-7f80-7e82-8754-e5125007d434"
    assert doc.title == "Legacy thread: use a TOOL to run echo."
    assert doc.created_at.isoformat() == "2026-11-22T02:29:41.385000+00:00"  # session_meta.timestamp
    assert doc.updated_at.isoformat() == "2026-11-22T02:29:41.895000+00:00"  # last line, not mtime
    assert doc.links.repo_paths == ["/home/dev/run2/work"]
    md = doc.metadata
    assert md["cli_version"] == "0.169.0" and md["originator"] == "fixture_recorder"
    assert md["source_kind"] == "vscode" and md["history_mode"] == "legacy"
    assert md["models"] == ["mock-model"] and md["format_era"] == "C"
    assert md["token_usage"]["total_tokens"] == 450
    image_turn = doc.turns[4]
    assert image_turn.role == "user" and image_turn.attachments[0].path == "/home/dev/run2/work/red.png"
    assert image_turn.text == "And describe this image.\n[image: /home/dev/run2/work/red.png]"
    assert doc.turns[1].meta["kind"] == "reasoning" and doc.turns[1].meta["model"] == "mock-model"
    assert report.counts["injected_context_skipped"] == 1  # <environment_context>
    assert report.counts["context_messages_skipped"] == 1  # developer <skills_instructions>
    assert report.counts["user_duplicates_skipped"] == 2   # response copies of the 2 prompts


def test_paginated_title_from_session_index_and_single_compaction() -> None:
    doc, report = parse(PAGINATED)
    assert doc.title == "Mock research thread"  # only in CODEX_HOME/session_index.jsonl
    assert doc.metadata["history_mode"] == "paginated" and doc.metadata["format_era"] == "D"
    compactions = [t for t in doc.turns if t.meta.get("kind") == "compaction"]
    assert len(compactions) == 1 and compactions[0].text.startswith("Context compacted. Summary:\nMock answer #5")
    everything = "\n".join(t.text for t in doc.turns)
    assert "Another language model started" not in everything  # compacted.message's lead-in to the next model
    assert everything.count("Mock answer #5") == 1  # the summary, once: the compaction request's reply is not shown
    assert everything.count("Hello mock, just answer.") == 2  # the prompt + the echo in the answer
    image_turn = next(t for t in doc.turns if t.text.startswith("What is in this image?"))
    assert image_turn.attachments[0].path == "/home/dev/run1/work/red.png"
    assert report.counts["compactions"] == 1


def test_several_session_meta_first_is_the_thread() -> None:
    doc, report = parse(AGENT_SESSIONS / "small.jsonl")
    assert doc.thread_id == "019fc8be-3658-7ca3-9e29-000000000000"
    assert doc.metadata["other_session_ids"] == ["[trimmed for fixture]"]
    assert report.counts["session_meta_extra"] == 6
    assert doc.metadata["cli_version"] == "0.146.0" and doc.metadata["source_kind"] == "cli"
    # an output arriving in the next group is named after its call from the previous group
    orphan = next(t for t in doc.turns if t.meta.get("call_id") == "call-1" and "call_turn_id" in t.meta)
    assert orphan.tool.name == "shell" and "a.txt\nb.txt" in orphan.text


def test_fork_and_subagent_metadata(tmp_path: Path) -> None:
    spawn = {"subagent": {"thread_spawn": {"parent_thread_id": "parent-1", "depth": 1,
                                           "agent_nickname": "scout", "agent_role": "explorer"}}}
    path = write(tmp_path / ROLLOUT_NAME, [
        meta_line(source=spawn, forked_from_id="fork-src", agent_nickname="scout",
                  git={"commit_hash": "abc", "branch": "main", "repository_url": "https://x/y.git"}),
        meta_line("019b0000-0000-7000-8000-0000000000ff"),
        ev("task_started", turn_id="t1"),
        *user_msg("investigate the flaky test"),
        ev("agent_message", message="done"),
        ev("collab_agent_spawn_end", call_id="c9", new_thread_id="child-7"),
        ev("thread_name_updated", thread_name="Flaky test hunt"),
        ev("task_complete", turn_id="t1"),
    ])
    doc, _ = parse(path)
    md = doc.metadata
    assert md["source_kind"] == "subagent:thread_spawn" and md["parent_thread_id"] == "parent-1"
    assert md["forked_from_id"] == "fork-src" and md["agent_nickname"] == "scout"
    assert md["other_session_ids"] == ["019b0000-0000-7000-8000-0000000000ff"]
    assert md["child_thread_ids"] == ["child-7"]
    assert md["git"]["repository_url"] == "https://x/y.git"
    assert doc.title == "Flaky test hunt"


def test_thread_id_fallbacks(tmp_path: Path) -> None:
    body = [ri("message", role="user", content=[{"type": "input_text", "text": "hi"}]),
            ri("message", role="assistant", content=[{"type": "output_text", "text": "hello"}])]
    named = write(tmp_path / "a" / ROLLOUT_NAME, body)
    assert parse(named)[0].thread_id == "019b0000-0000-7000-8000-000000000001"
    anon = write(tmp_path / "b" / "export.jsonl", body)
    doc, _ = parse(anon)
    assert re.fullmatch(r"file-[0-9a-f]{32}", doc.thread_id)
    assert parse(anon)[0].thread_id == doc.thread_id  # stable
