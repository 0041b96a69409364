"""The live `codex app-server` 0.169.0: handshake, listing, reading, restarts."""

from __future__ import annotations

import os
import signal
import time
from collections import Counter
from pathlib import Path
import pytest
from chinvex.models import CodexAppServerConfig
from chinvex.models.sources import ParseReport, SourceCandidate
from chinvex_adapters.cx_appserver.client import AppServerClient
from chinvex_adapters.cx_appserver.errors import AppServerDied, AppServerError
from chinvex_adapters.cx_appserver.source import AppServerSource, AppServerSourceOptions, client_factory_from
from chinvex_adapters.cx_appserver.threads import ThreadReadError
from chinvex_adapters.cx_sessions_jsonl import CodexRolloutAdapter
from live_support import (
    EXPECTED_CODEX_TURNS,
    EXPECTED_ROLES,
    LEGACY_ID,
    LEGACY_NAME,
    PAGINATED_ID,
    ROLLOUTS,
    TRUNCATED_ID,
    VERSION,
    _config,
    _copy,
    _digests,
    _source,
    record_paginated_thread,
    squash_ws,
    turn_kind,
)


def test_live_handshake_and_not_initialized(codex_bin, codex_home):
    with AppServerClient(_config(codex_bin, codex_home)) as probe:
        pass  # a normal start works
    client = AppServerClient(_config(codex_bin, codex_home))
    try:
        client.start(handshake=False)
        with pytest.raises(AppServerError) as info:
            client.request("thread/list", {"modelProviders": []})
        assert (info.value.code, info.value.message) == (-32600, "Not initialized")
        result = client.initialize()
        assert result["codexHome"] == str(codex_home)
        assert result["userAgent"].startswith(f"chinvex/{VERSION}")
        with pytest.raises(AppServerError, match="Already initialized"):
            client.request("initialize", {"clientInfo": {"name": "x", "title": None, "version": "1"},
                                          "capabilities": None})
        # The gotcha of FORMATS.md §1.5: without modelProviders only the configured
        # provider's ("openai" by default) threads are listed — the 4 public rollouts.
        default = client.request("thread/list", {})
        assert len(default["data"]) == 4
        assert {t["modelProvider"] for t in default["data"]} == {"openai"}
    finally:
        client.close()
    assert probe.closed and client.closed


def test_live_list_threads(codex_bin, codex_home):
    before = _digests(codex_home)
    started = time.monotonic()
    with _source(codex_bin, codex_home) as source:
        threads = source.list_threads()
        everything = source.list_threads(include_subagents=True, include_archived=True)
        assert source.codex_home == str(codex_home)
    elapsed = time.monotonic() - started
    ids = [t.thread_id for t in threads]
    assert sorted(ids) == sorted([*EXPECTED_ROLES, PAGINATED_ID])  # 7 threads
    assert [t.thread_id for t in everything] == ids  # no sub-agent or archived threads here
    assert [t.created_at for t in threads] == sorted(t.created_at for t in threads)
    by_id = {t.thread_id: t for t in threads}
    assert by_id[PAGINATED_ID].history_mode == "paginated"
    assert {t.history_mode for t in threads if t.thread_id != PAGINATED_ID} == {"legacy"}
    assert by_id[LEGACY_ID].rollout_path == str(codex_home / "sessions/2026/11/22" / LEGACY_NAME)
    assert by_id[LEGACY_ID].duplicate_paths == ()
    assert all(t.rollout_path and Path(t.rollout_path).is_file() for t in threads)
    assert all(t.updated_at.endswith("Z") and t.source_kind == "vscode" for t in threads)
    assert elapsed < 15
    assert _digests(codex_home) == before  # listing never modifies rollouts


def test_live_read_every_thread(codex_bin, codex_home):
    before = _digests(codex_home)
    with _source(codex_bin, codex_home) as source:
        threads = source.list_threads()
        docs, reasons = {}, {}
        for summary in threads:
            report = ParseReport()
            doc = source.read_thread(summary, report)
            if doc is None:
                reasons[summary.thread_id] = (source.read_thread_outcome(summary).reason, summary.rollout_path)
            else:
                docs[summary.thread_id] = (doc, report.counts)
    assert set(reasons) == {PAGINATED_ID}
    reason, fallback = reasons[PAGINATED_ID]
    assert reason == "paginated_projection_missing"
    assert fallback and Path(fallback).is_file()  # the JSONL adapter's input
    for thread_id, (doc, counts) in docs.items():
        assert dict(Counter(t.role for t in doc.turns)) == EXPECTED_ROLES[thread_id], thread_id
        assert counts["codex_turns"] == EXPECTED_CODEX_TURNS[thread_id], thread_id
        assert doc.doc_id and doc.source_uri == f"codex://thread/{thread_id}"
        assert len({t.turn_id for t in doc.turns}) == len(doc.turns)
    truncated, counts = docs[TRUNCATED_ID]
    assert counts["codex_turns_interrupted"] == 1
    assert truncated.turns[-1].meta["turn_status"] == "interrupted"
    legacy, _ = docs[LEGACY_ID]
    image = next(t for t in legacy.turns if t.attachments)
    assert image.attachments[0].path == "/home/dev/run2/work/red.png"
    assert docs["019c8a4d-8f45-7010-8b5d-7fad920aa6f9"][0].metadata["git"]["branch"] == "main"
    assert _digests(codex_home) == before


def test_live_zst_and_duplicate_ids(codex_bin, dup_home):
    with AppServerClient(_config(codex_bin, dup_home)) as client:
        raw = client.request("thread/list", {"modelProviders": []})["data"]
    # The server lists the thread once per file, and names the .zst file without ".zst".
    assert [t["id"] for t in raw] == [LEGACY_ID, LEGACY_ID]
    zst_entry = next(t for t in raw if "/2026/11/22/" in t["path"])
    assert zst_entry["path"].endswith(LEGACY_NAME)
    assert not Path(zst_entry["path"]).exists()
    # With an explicit sourceKinds filter (what the source sends) 0.169.0 answers from another
    # code path that returns the id once; the source's own de-duplication is the safety net.
    with _source(codex_bin, dup_home) as source:
        threads = source.list_threads()
        assert len(threads) == 1
        report = ParseReport()
        doc = source.read_thread(threads[0], report)
    assert threads[0].path in {t["path"] for t in raw}
    assert {threads[0].path, *threads[0].duplicate_paths} <= {t["path"] for t in raw}
    assert dict(Counter(t.role for t in doc.turns)) == {"user": 2, "assistant": 4}
    assert report.counts["codex_turns"] == 2


def test_live_zst_alone_is_listed_and_read(codex_bin, tmp_path):
    home = tmp_path / ".codex"
    home.mkdir()
    zst = ROLLOUTS / "edge-cases/sessions/2026/11/22" / (LEGACY_NAME + ".zst")
    _copy(zst, home / "sessions/2026/11/22" / zst.name)
    with _source(codex_bin, home) as source:
        (summary,) = source.list_threads()
        doc = source.read_thread(summary)
    assert summary.path.endswith(LEGACY_NAME)  # reported without .zst ...
    assert summary.rollout_path == str(home / "sessions/2026/11/22" / zst.name)  # ... resolved here
    assert dict(Counter(t.role for t in doc.turns)) == {"user": 2, "assistant": 4}


def test_live_paginated_thread_with_a_real_projection(codex_bin, tmp_path):
    """The one kind of thread only the server can read from its projection: a paginated
    thread it wrote itself. The source reads it through thread/turns/list, paged through real
    cursors (one turn per page), and gets exactly the turns the rollout adapter reads from the
    rollout file the server wrote alongside — so neither reader loses or duplicates anything.
    The listing itself carries no last turn id, which is why cx_appserver fingerprints a thread
    by updatedAt alone (see `CodexAppServerAdapter._route`)."""
    home = tmp_path / ".codex"
    rec = record_paginated_thread(codex_bin, home)
    factory = client_factory_from(CodexAppServerConfig(timeout_s=30), codex_home=str(home), binary=codex_bin)
    with AppServerSource(factory, AppServerSourceOptions(turns_page_size=1)) as source:
        (summary,) = source.list_threads()
        report = ParseReport()
        doc = source.read_thread(summary, report)
        client = source.client()
        raw = client.request("thread/list", {"modelProviders": []})
        shell_items = client.request("thread/items/list", {"threadId": rec.thread_id, "turnId": rec.turn_ids[-1]})
    assert (summary.thread_id, summary.history_mode) == (rec.thread_id, "paginated")
    assert summary.rollout_path == str(rec.rollout_path) and rec.rollout_path.is_file()
    assert doc is not None, report.warnings
    assert report.counts["codex_turns"] == 3 and report.counts["turn_pages"] >= 3
    assert list(dict.fromkeys(t.meta["codex_turn_id"] for t in doc.turns)) == rec.turn_ids
    (p1, p2), ((r1, a1), (r2, a2)) = rec.prompts, rec.answers
    expected = [("user", p1), ("reasoning", r1), ("assistant", a1), ("user", p2), ("reasoning", r2), ("assistant", a2)]
    assert [(turn_kind(t), squash_ws(t.text)) for t in doc.turns[:-1]] == [(k, squash_ws(text)) for k, text in expected]
    (tool,) = doc.turns[-1:]
    assert turn_kind(tool) == "tool" and rec.shell_output in tool.text and "exit code 0" in tool.text
    assert tool.meta["codex_turn_id"] == rec.turn_ids[-1]

    # The rollout adapter reading the server's rollout file: the same turns, in the same order.
    rollout = CodexRolloutAdapter()
    path = rec.rollout_path
    (from_file,) = rollout.parse(SourceCandidate(str(path), "codex_session", rollout.name, str(home), path),
                                 ParseReport(), None)
    assert from_file.doc_id == doc.doc_id
    assert [(turn_kind(t), squash_ws(t.text)) for t in from_file.turns if turn_kind(t) != "tool"] == \
        [(turn_kind(t), squash_ws(t.text)) for t in doc.turns if turn_kind(t) != "tool"]
    tools = [t for t in from_file.turns if turn_kind(t) == "tool"]
    assert len(tools) == 1 and rec.shell_output in tools[0].text  # rendered from other fields, same output

    # thread/items/list gives the shell turn's item on its own.
    assert [(e["turnId"], e["item"]["type"]) for e in shell_items["data"]] == [(rec.turn_ids[-1], "commandExecution")]
    assert shell_items["data"][0]["item"]["aggregatedOutput"].strip() == rec.shell_output
    # The listing: no turns, and the only turn id in it is the *first unread* turn, not the last.
    (entry,) = raw["data"]
    assert entry["id"] == rec.thread_id and entry["turns"] == []
    assert raw["readStates"][rec.thread_id]["firstUnread"] == {"type": "turn", "turnId": rec.turn_ids[0]}


def test_live_unknown_thread_is_a_per_thread_error(codex_bin, codex_home):
    with _source(codex_bin, codex_home) as source:
        with pytest.raises(ThreadReadError, match="thread not loaded"):
            source.read_thread("00000000-0000-0000-0000-000000000000")
        assert source.read_thread(LEGACY_ID) is not None  # same child, still fine


def test_live_killed_child_fails_pending_requests_and_source_restarts(codex_bin, codex_home):
    with _source(codex_bin, codex_home) as source:
        client = source.client()
        pid = client.pid
        assert pid
        os.kill(pid, signal.SIGSTOP)  # freeze it so the read is surely pending when it dies
        first = client.send_request("thread/read", {"threadId": "019c8a4d-8f45-7010-8b5d-7fad920aa6f9",
                                                    "includeTurns": True})
        second = client.send_request("thread/turns/list", {"threadId": LEGACY_ID})
        started = time.monotonic()
        os.kill(pid, signal.SIGKILL)
        with pytest.raises(AppServerDied, match="killed by signal 9"):
            client.wait(first, "thread/read")
        with pytest.raises(AppServerDied, match="thread/turns/list"):
            client.wait(second, "thread/turns/list")
        assert time.monotonic() - started < 5
        # The source replaces the dead child on the next call.
        doc = source.read_thread(LEGACY_ID)
        assert doc is not None and source.client().pid != pid
