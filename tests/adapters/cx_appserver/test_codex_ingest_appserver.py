"""`chinvex ingest` with threads read through the server, compared with the rollout adapter."""

from __future__ import annotations

from pathlib import Path
from helpers import CliResult, assert_no_traceback, run_cli
from live_support import squash_ws, turn_kind
from codex_ingest_support import (
    CODEMIE_ID,
    LEGACY_ID,
    LISTED_LEGACY,
    LOCALPUSH_IDS,
    PAGINATED_ID,
    ROLLOUTS,
    UNLISTED_IDS,
    _copy,
    create_context,
    doc,
    fingerprints,
    ingest,
    jsonl_docs,
    jsonl_turns,
    legacy_replay,
    origins_of,
    path_lines,
    rollout_events,
    seed_home,
    set_settings,
    stored_threads,
)


def test_appserver_reads_every_listed_thread(appserver_run) -> None:
    """Every listed thread is indexed from the server's copy, except the copied paginated
    fixture, which the server lists but cannot read (its turns live in a projection the copy
    does not have): that one fell back to its rollout file, and the run says so."""
    human, first, live = appserver_run["human"], appserver_run["first"], appserver_run["live"]
    assert human.code == 0, human
    assert first["status"] == "completed" and first["errors"] == []
    listed = appserver_run["listed"]
    assert listed == {*LISTED_LEGACY, PAGINATED_ID, live.thread_id}
    stored = appserver_run["stored"]
    assert set(stored) == {doc(t) for t in listed | UNLISTED_IDS}  # one document per thread
    files = {tid: str(path) for tid, (path, _) in jsonl_docs(appserver_run["home"]).items()}
    read_by_server = listed - {PAGINATED_ID}
    for tid in read_by_server:
        entry = stored[doc(tid)]
        assert (entry["source"], entry["read_via"], entry["origin"]) == (
            "cx_appserver", "app-server", files[tid]), (tid, entry)
    fell_back = stored[doc(PAGINATED_ID)]
    assert (fell_back["source"], fell_back["read_via"]) == ("cx_sessions_jsonl", "fallback")
    why = first["paths"][files[PAGINATED_ID]]
    assert why["path"] == "fallback" and why["reason"].startswith("paginated_projection_missing: ")
    (warning,) = [w["message"] for w in first["warnings"] if PAGINATED_ID in w["message"]]
    assert warning.startswith(f"codex thread {PAGINATED_ID}: paginated_projection_missing (")
    counts = first["adapter_counts"]["cx_appserver"]
    assert (counts["threads_listed"], counts["threads_appserver"], counts["threads_read_appserver"],
            counts["fallback_paginated_projection_missing"]) == (len(listed), len(listed), len(read_by_server), 1)
    for tid in UNLISTED_IDS:  # not listed by 0.169.0, read from disk anyway
        assert stored[doc(tid)]["source"] == "cx_sessions_jsonl", tid


def test_appserver_turns_match_the_rollout_adapter(appserver_run) -> None:
    """The server's copy of each thread against the rollout adapter's reading of the same file.
    Legacy threads: every user turn and assistant message one for one, same text; the only
    differences are the ones `legacy_replay` derives from the file (tool calls absent, reasoning
    regrouped, assistant text that exists only as response_items absent). The paginated thread
    the server wrote: the same turns, tool turn included."""
    home, turns, live = appserver_run["home"], appserver_run["turns"], appserver_run["live"]
    from_files = jsonl_docs(home)
    assert set(from_files) == appserver_run["listed"] | UNLISTED_IDS
    no_agent_events: set[str] = set()
    for tid in LISTED_LEGACY:
        path, jsonl = from_files[tid]
        events = rollout_events(path)
        server = [(turn_kind(t), squash_ws(t.text)) for t in turns[doc(tid)]]
        assert server == legacy_replay(jsonl.turns, events), tid
        # Spelled out: users and assistant messages are identical, tools are what is missing.
        users = [squash_ws(t.text) for t in jsonl.turns if turn_kind(t) == "user"]
        assert [text for kind, text in server if kind == "user"] == users and users, tid
        assert not any(kind == "tool" for kind, _ in server), tid
        assert any(turn_kind(t) == "tool" for t in jsonl.turns), tid
        answers = [squash_ws(t.text) for t in jsonl.turns if turn_kind(t) == "assistant"]
        if events["agent_message"]:
            assert [text for kind, text in server if kind == "assistant"] == answers and answers, tid
        else:
            no_agent_events.add(tid)
            assert [kind for kind, _ in server] == ["user"] * len(users) and answers, tid
    # The one file whose assistant side exists only as response_items, which 0.169.0's legacy
    # replay does not read: its answers are in the rollout adapter's copy only (the reason
    # legacy_read defaults to "rollout").
    assert no_agent_events == {CODEMIE_ID}
    localpush = turns[doc(LOCALPUSH_IDS[0])]
    # e.g. the 0.104 session: 162 turns from the file, 35 from the server = 118 tool turns absent
    # and 26 reasoning summaries regrouped into 17 (one per assistant message).
    assert (len(from_files[LOCALPUSH_IDS[0]][1].turns), len(localpush)) == (162, 35)

    path, jsonl = from_files[live.thread_id]
    assert path == live.rollout_path
    server_turns = turns[doc(live.thread_id)]
    assert [(turn_kind(t), squash_ws(t.text)) for t in server_turns if turn_kind(t) != "tool"] == \
        [(turn_kind(t), squash_ws(t.text)) for t in jsonl.turns if turn_kind(t) != "tool"]
    assert [t.meta["codex_turn_id"] for t in server_turns if turn_kind(t) == "user"] == live.turn_ids[:2]
    tools = [t for t in server_turns if turn_kind(t) == "tool"]
    assert len(tools) == 1 and live.shell_output in tools[0].text
    assert [t for t in jsonl.turns if turn_kind(t) == "tool" and live.shell_output in t.text]

    for tid in (PAGINATED_ID, *UNLISTED_IDS):  # read by the rollout parser: identical
        assert [t.text for t in turns[doc(tid)]] == [t.text for t in from_files[tid][1].turns], tid


def test_verbose_human_output_names_each_threads_path(appserver_run) -> None:
    """`chinvex ingest --verbose` (human form) prints one line per Codex thread: the path it
    took and why, matching IngestSummary.paths."""
    human, first, live = appserver_run["human"], appserver_run["first"], appserver_run["live"]
    home = appserver_run["home"]
    lines = human.stdout.splitlines()
    total = len(appserver_run["stored"])
    assert any(line.startswith(f"Srv: {total} ingested, 0 unchanged, 0 touched, 0 removed, 0 failed ("
                               f"{total} sources scanned in ") for line in lines), human.stdout
    assert "codex threads: 8 via app-server, 1 via fallback, 2 via rollout" in lines
    printed = path_lines(human.stdout)
    legacy = "legacy thread (codex_appserver.legacy_read = appserver)"
    files = {tid: path for tid, (path, _) in jsonl_docs(home).items()}
    expected = {str(files[tid]): ("app-server", legacy) for tid in LISTED_LEGACY}
    expected[str(files[live.thread_id])] = ("app-server", "paginated thread")
    for tid in UNLISTED_IDS:
        expected[str(files[tid])] = ("rollout", "rollout file not listed by the app-server")
    fallback_uri = str(files[PAGINATED_ID])
    route, reason = printed.pop(fallback_uri)
    assert route == "fallback" and reason.startswith("paginated_projection_missing: the server returned no turns")
    assert printed == expected
    assert {uri: (p["path"], p["reason"]) for uri, p in first["paths"].items() if uri != fallback_uri} == expected
    warnings = [line for line in lines if line.startswith("warning: ")]
    assert any(line.startswith(f"warning: codex thread {PAGINATED_ID}: paginated_projection_missing")
               and line.endswith(f"indexed from its rollout file {files[PAGINATED_ID]}") for line in warnings), warnings


def test_appserver_second_ingest_skips_everything(appserver_run) -> None:
    second = appserver_run["second"]
    assert second.code == 0, second
    summary = second.json
    assert summary["errors"] == [] and summary["sources"]["indexed"] == 0
    assert summary["sources"]["unchanged"] == summary["sources"]["scanned"] == len(appserver_run["stored"])
    assert summary["chunks"]["embedded"] == 0 and summary["chunks"]["written"] == 0
    assert {d["action"] for d in summary["decisions"] if d["reason"] != "superseded"} == {"skipped"}
    assert stored_threads(appserver_run["chinvex_home"], "Srv") == appserver_run["stored"]
    # Threads read through the server are fingerprinted by their rollout file's stat, like the
    # ones the rollout parser reads: a reader switch finds them unchanged.
    fps = fingerprints(appserver_run["chinvex_home"], "Srv")
    files = {tid: str(path) for tid, (path, _) in jsonl_docs(appserver_run["home"]).items()}
    assert set(fps) == set(files.values())
    for tid in appserver_run["listed"]:
        fp = fps[files[tid]]
        assert fp["adapter"] == "cx_appserver" and fp["thread_updated_at"].endswith("Z"), tid
        assert fp["size_bytes"] == Path(files[tid]).stat().st_size, tid


def test_one_thread_through_both_paths_is_one_document(codex_bin, tmp_path: Path) -> None:
    """The same thread in a CODEX_HOME (read through the app-server) and as a plain rollout
    file in a backup folder (read by the rollout parser) is one document, written from the
    server's copy although the file's copy has more turns; the origin ledger keeps both
    sources, so removing either one keeps the document."""
    home = tmp_path / ".codex"
    name = f"rollout-2026-11-22T02-29-41-{LEGACY_ID}.jsonl"
    in_home = home / "sessions/2026/11/22" / name
    _copy(ROLLOUTS / "generated-0.169.0/legacy/sessions/2026/11/22" / name, in_home)
    backup = tmp_path / "backup" / name
    _copy(in_home, backup)
    chinvex_home = tmp_path / "chinvex"
    env = {"CHINVEX_HOME": str(chinvex_home), "CHINVEX_CODEX_BIN": codex_bin}
    created = run_cli("context", "create", "Both", "--codex-sessions", str(home), "--codex-sessions",
                      str(backup.parent), env=env)
    assert created.code == 0, created
    set_settings(chinvex_home, "Both", {"legacy_read": "appserver", "timeout_s": 60})
    server_uri, the_doc = str(in_home), doc(LEGACY_ID)  # a thread with a file is keyed by it

    def run() -> tuple[CliResult, dict[str, dict]]:
        result = run_cli("ingest", "--context", "Both", "--verbose", env=env)
        assert_no_traceback(result)
        assert result.code == 0, result
        return result, stored_threads(chinvex_home, "Both")

    first, stored = run()
    assert set(stored) == {the_doc}
    assert (stored[the_doc]["source"], stored[the_doc]["origin"]) == ("cx_appserver", server_uri)
    assert stored[the_doc]["turns"] == 6  # the server's replay, not the file's 7 (tool call kept)
    assert origins_of(chinvex_home, "Both", the_doc) == {server_uri, str(backup)}
    assert path_lines(first.stdout) == {
        server_uri: ("app-server", "legacy thread (codex_appserver.legacy_read = appserver)"),
        str(backup): ("rollout", "not a CODEX_HOME (no sessions/ or archived_sessions/ folder)")}
    assert "codex threads: 1 via app-server, 1 via rollout" in first.stdout.splitlines()

    backup.unlink()  # the rollout copy goes: the server's document stays as it was
    _, after = run()
    assert after == stored
    assert origins_of(chinvex_home, "Both", the_doc) == {server_uri}

    _copy(in_home, backup)  # back again: a second origin, the document is still the server's
    _, after = run()
    assert after == stored
    assert origins_of(chinvex_home, "Both", the_doc) == {server_uri, str(backup)}

    in_home.unlink()  # the thread leaves the CODEX_HOME: the document is rebuilt from the copy
    _, after = run()
    assert set(after) == {the_doc}
    assert (after[the_doc]["source"], after[the_doc]["origin"], after[the_doc]["turns"]) == (
        "cx_sessions_jsonl", str(backup), 7)
    assert origins_of(chinvex_home, "Both", the_doc) == {str(backup)}


def test_without_the_binary_everything_is_read_from_rollout_files(tmp_path: Path) -> None:
    """mode "on" insists on the server: one warning when it cannot start. (Under the default
    "auto" a missing binary is no problem: `test_switching_readers_reads_nothing_again`.)"""
    home = seed_home(tmp_path / ".codex", with_codemie=False)
    chinvex_home = tmp_path / "chinvex"
    create_context(chinvex_home, "NoBin", home, {"mode": "on", "command": ["/nonexistent/bin/codex", "app-server"]})
    result = ingest(chinvex_home, "NoBin", env={"CHINVEX_CODEX_BIN": ""})
    assert result.code == 0, result
    summary = result.json
    assert summary["status"] == "completed" and summary["errors"] == []
    stored = stored_threads(chinvex_home, "NoBin")
    expected = jsonl_turns(home)
    assert {tid: stored[doc(tid)]["turns"] for tid in expected} == expected
    assert len(stored) == len(expected)
    assert {d["adapter"] for d in summary["decisions"] if d["action"] == "ingested"} == {"cx_appserver"}
    assert not any(uri.startswith("codex://") for uri in fingerprints(chinvex_home, "NoBin"))
    unavailable = [w for w in summary["warnings"] if "app-server" in w["message"]]
    assert len(unavailable) == 1, summary["warnings"]
    assert unavailable[0]["message"].startswith("codex app-server unavailable (codex binary not found at "
                                                "/nonexistent/bin/codex")
    assert unavailable[0]["message"].endswith("; reading rollout files directly")
    assert summary["warnings"][0] == unavailable[0]
    assert {p["path"] for p in summary["paths"].values()} == {"rollout"}
    assert len(summary["paths"]) == len(expected)
    # Human output: the warning is one line, and the run says what it did.
    human = run_cli("ingest", "--context", "NoBin", env={"CHINVEX_HOME": str(chinvex_home), "CHINVEX_CODEX_BIN": ""})
    assert human.code == 0 and "Traceback" not in human.stderr
    warning_lines = [line for line in human.stdout.splitlines() if line.startswith("warning: ")]
    assert len(warning_lines) == 1, human.stdout
    assert warning_lines[0].startswith("warning: codex app-server unavailable (codex binary not found")
    assert path_lines(human.stdout) == {}  # which path each thread took: with --verbose only
