"""`chinvex ingest` of the "full" Codex home: every listed thread, and which path each took."""

from __future__ import annotations

from pathlib import Path
from codex_ingest_support import (
    CODEMIE_ID,
    LEGACY_ID,
    LOCALPUSH_IDS,
    PAGINATED_ID,
    TRUNCATED_ID,
    UNLISTED_IDS,
    ZST_ID,
    doc,
    fingerprints,
    jsonl_docs,
    jsonl_turns,
    stored_threads,
)


def test_ingest_indexes_every_listed_thread(full_run) -> None:
    first = full_run["first"]
    assert first.code == 0, first
    summary = first.json
    assert summary["status"] == "completed" and summary["errors"] == []
    listed = full_run["listed"]
    assert listed == {*LOCALPUSH_IDS, CODEMIE_ID, LEGACY_ID, PAGINATED_ID, TRUNCATED_ID, ZST_ID}
    stored = full_run["stored"]
    assert {doc(t) for t in listed} <= set(stored)
    assert {doc(t) for t in UNLISTED_IDS} <= set(stored)  # nothing on disk is lost
    assert len(stored) == len(listed) + len(UNLISTED_IDS)  # one document per thread
    assert summary["sources"]["indexed"] == len(stored)
    assert summary["sources"]["skipped"] == {"superseded": 1}


def test_turn_counts_match_the_rollout_adapter(full_run) -> None:
    """Default routing: every thread's turns are the rollout parser's (legacy threads are
    routed to it, the paginated copy falls back to it). That the server's own reading agrees
    is `test_appserver_turns_match_the_rollout_adapter`."""
    expected = jsonl_turns(full_run["home"])
    stored = full_run["stored"]
    assert {tid: stored[doc(tid)]["turns"] for tid in expected} == expected
    assert expected[LOCALPUSH_IDS[0]] > 118  # the tool calls of the 0.104 session are all there


def test_which_path_each_thread_took(full_run) -> None:
    summary = full_run["first"].json
    decisions = {d["source_uri"]: d for d in summary["decisions"] if d["action"] == "ingested"}
    files = {tid: str(path) for tid, (path, _) in jsonl_docs(full_run["home"]).items()}
    # Every source is the composite adapter's and is keyed by its rollout file, whichever
    # reader read it (the same sources as without the server).
    assert set(decisions) == set(files.values())
    assert {d["adapter"] for d in decisions.values()} == {"cx_appserver"}
    # The paginated thread went to the server, which fell back to its rollout file (a copied
    # paginated rollout has no projection): a warning line and a count say so.
    assert full_run["stored"][doc(PAGINATED_ID)]["read_via"] == "fallback"
    fallback = [w for w in summary["warnings"] if PAGINATED_ID in w["message"]]
    assert len(fallback) == 1 and "paginated_projection_missing" in fallback[0]["message"]
    assert summary["adapter_counts"]["cx_appserver"]["fallback_paginated_projection_missing"] == 1
    fps = fingerprints(full_run["chinvex_home"], "Cx")
    assert set(fps) == set(files.values())  # no codex://thread/ source: every thread has a file
    paginated = fps[files[PAGINATED_ID]]
    assert paginated["thread_updated_at"].endswith("Z")  # kept for information
    assert paginated["size_bytes"] == Path(files[PAGINATED_ID]).stat().st_size  # decided by the stat


def test_summary_paths(full_run) -> None:
    summary = full_run["first"].json
    paths = summary["paths"]
    by_thread = {entry["thread_id"]: entry for entry in paths.values()}
    assert by_thread[PAGINATED_ID]["path"] == "fallback"
    assert by_thread[PAGINATED_ID]["reason"].startswith("paginated_projection_missing")
    for tid in (*LOCALPUSH_IDS, CODEMIE_ID, LEGACY_ID, TRUNCATED_ID, ZST_ID):
        assert by_thread[tid]["path"] == "rollout" and by_thread[tid]["reason"].startswith("legacy thread"), tid
    for tid in UNLISTED_IDS:
        assert by_thread[tid]["path"] == "rollout" and "not listed" in by_thread[tid]["reason"]
    counts = summary["adapter_counts"]["cx_appserver"]
    assert (counts["threads_listed"], counts["threads_rollout_legacy"], counts["threads_appserver"]) == (8, 7, 1)
    assert summary["warnings"][0]["message"].startswith(f"codex thread {PAGINATED_ID}")
    home = str(full_run["home"])
    assert summary["readers"] == {home: {"reader": "app-server", "mode": "auto", "codex_home": home,
                                         "why": f"{full_run['codex_bin']} found (mode auto)"}}


def test_second_ingest_skips_everything(full_run) -> None:
    second = full_run["second"]
    assert second.code == 0, second
    summary = second.json
    assert summary["sources"]["indexed"] == 0
    assert summary["sources"]["unchanged"] == summary["sources"]["scanned"] == len(full_run["stored"])
    assert summary["chunks"]["embedded"] == 0 and summary["chunks"]["written"] == 0
    assert {d["action"] for d in summary["decisions"] if d["reason"] != "superseded"} == {"skipped"}
    assert stored_threads(full_run["chinvex_home"], "Cx") == full_run["stored"]
