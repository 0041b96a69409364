"""Switching readers reads nothing again; a server killed once or every time."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from helpers import assert_no_traceback, run_cli
from live_support import record_paginated_thread
from codex_ingest_support import (
    CRLF_ID,
    LEGACY_ID,
    UNLISTED_IDS,
    create_context,
    doc,
    fingerprints,
    ingest,
    jsonl_docs,
    killer_settings,
    listed_ids,
    path_lines,
    reader_env,
    run_summary,
    seed_home,
    servers_left,
    set_settings,
    stored_threads,
    stored_turns,
)


def test_switching_readers_reads_nothing_again(codex_bin, tmp_path: Path) -> None:
    """One CODEX_HOME (with a paginated thread the real server wrote, so the server really
    reads something) ingested under every reader in turn: `auto` without codex on PATH (the
    rollout files, no warning), `auto` with codex on PATH, `on` with every thread read through
    the server, `off`, the old `enabled` key. A thread is the same source whichever reader
    reads it, so after the first run nothing is read, written, embedded or removed; a file that
    changes is still read, once, by whichever reader is current."""
    home = seed_home(tmp_path / ".codex", with_codemie=False)
    live = record_paginated_thread(codex_bin, home, tag="switch")
    chinvex_home = tmp_path / "chinvex"
    create_context(chinvex_home, "Sw", home, {"timeout_s": 60})
    with_codex = tmp_path / "bin"
    with_codex.mkdir()
    (with_codex / "codex").symlink_to(codex_bin)
    no_codex = reader_env(chinvex_home, [])
    on_path = reader_env(chinvex_home, [with_codex])
    home_key = str(home)

    files = _first_run_reads_rollout_files(chinvex_home, home, no_codex)
    stored = stored_threads(chinvex_home, "Sw")
    assert {entry["source"] for entry in stored.values()} == {"cx_sessions_jsonl"}
    before = fingerprints(chinvex_home, "Sw")

    def unchanged(env: dict[str, str], reader: str, why: str, mode: str) -> dict:
        return _ingest_unchanged(chinvex_home, env, (reader, why, mode), files=files, home_key=home_key,
                                 stored=stored, before=before)

    # auto with codex on PATH: the server lists (the paginated threads would be read by it)
    s = unchanged(on_path, "app-server", f"codex found at {with_codex / 'codex'} (mode auto)", "auto")
    assert s["paths"][files[live.thread_id]]["path"] == "app-server"
    # on, every listed thread through the server
    set_settings(chinvex_home, "Sw", {"mode": "on", "legacy_read": "appserver", "timeout_s": 60})
    s = unchanged(on_path, "app-server", "codex_appserver.mode is on", "on")
    assert {p["path"] for p in s["paths"].values()} == {"app-server", "rollout"}
    # off, then the old key both ways
    set_settings(chinvex_home, "Sw", {"mode": "off"})
    unchanged(on_path, "jsonl", "codex_appserver.mode is off", "off")
    set_settings(chinvex_home, "Sw", {"enabled": False})
    unchanged(on_path, "jsonl", "codex_appserver.enabled is false", "off")
    set_settings(chinvex_home, "Sw", {"enabled": True, "legacy_read": "appserver", "timeout_s": 60})
    unchanged(reader_env(chinvex_home, [], codex_bin), "app-server", "codex_appserver.enabled is true", "on")

    # A change is still seen after a switch, and read once by the current reader (the server).
    legacy_file = Path(files[LEGACY_ID])
    _append_user_message(legacy_file, "2026-11-22T03:00:00.000Z", "one more question after the switch")
    changed = ingest(chinvex_home, "Sw", env=reader_env(chinvex_home, [], codex_bin))
    assert changed.code == 0, changed
    c = changed.json
    assert (c["sources"]["indexed"], c["sources"]["removed"]) == (1, 0), c["decisions"]
    [decision] = [d for d in c["decisions"] if d["action"] == "ingested"]
    assert (decision["source_uri"], decision["reason"]) == (str(legacy_file), "size_changed")
    after = stored_threads(chinvex_home, "Sw")[doc(LEGACY_ID)]
    assert (after["source"], after["read_via"], after["origin"]) == ("cx_appserver", "app-server", str(legacy_file))
    assert "one more question after the switch" in stored_turns(chinvex_home, "Sw", doc(LEGACY_ID))[-1].text
    # ... and switching back reads nothing again.
    set_settings(chinvex_home, "Sw", {})
    stored = stored_threads(chinvex_home, "Sw")
    unchanged(no_codex, "jsonl", "codex not on PATH (mode auto)", "auto")
    # The next change is read by the rollout parser in full (the server's read left no resume
    # point), and the file's own copy (tool call included) replaces the server's.
    _append_user_message(legacy_file, "2026-11-22T03:05:00.000Z", "and one after switching back")
    again = ingest(chinvex_home, "Sw", env=no_codex)
    assert again.code == 0, again
    a = again.json
    assert (a["sources"]["indexed"], a["sources"]["removed"], a["sources"]["reasons"]) == (1, 0, {"size_changed": 1})
    assert not any(k.startswith("resume_rejected") for k in a["adapter_counts"]["cx_appserver"]), a["adapter_counts"]
    after = stored_threads(chinvex_home, "Sw")[doc(LEGACY_ID)]
    assert (after["source"], after["read_via"], after["origin"]) == ("cx_sessions_jsonl", None, str(legacy_file))
    texts = [t.text for t in stored_turns(chinvex_home, "Sw", doc(LEGACY_ID))]
    assert "one more question after the switch" in texts[-2] and "and one after switching back" in texts[-1]
    assert servers_left(home) == []


def _first_run_reads_rollout_files(chinvex_home: Path, home: Path, no_codex: dict[str, str]) -> dict[str, str]:
    """The first ingest, `auto` without codex on PATH: the rollout files, no warning about the
    server, and --verbose (human) says why per thread. Returns thread id → rollout file."""
    home_key = str(home)
    # auto, no codex on PATH: the rollout files, no warning; --verbose (human) says why per thread
    first = run_cli("ingest", "--context", "Sw", "--verbose", env=no_codex)
    assert_no_traceback(first)
    assert first.code == 0, first
    warnings = [line for line in first.stdout.splitlines() if line.startswith("warning: ")]
    # the one warning is the CRLF file's own (set-up lines only); nothing about the server
    assert len(warnings) == 1 and warnings[0].endswith("no conversation turns yet (session set-up only)"), warnings
    printed = path_lines(first.stdout)
    files = {tid: str(path) for tid, (path, _) in jsonl_docs(home).items()}
    assert printed == {uri: ("rollout", "codex not on PATH (mode auto)") for uri in files.values()}
    summary = run_summary(chinvex_home, "Sw", 0)
    assert summary["readers"] == {home_key: {"reader": "jsonl", "why": "codex not on PATH (mode auto)",
                                             "mode": "auto", "codex_home": home_key}}
    assert len(summary["warnings"]) == 1 and summary["sources"]["indexed"] == len(files)
    stats = run_cli("stats", "--context", "Sw", "--json", env=no_codex)
    assert stats.code == 0 and stats.json["last_run"]["stats"]["readers"] == summary["readers"], stats
    return files


def _ingest_unchanged(chinvex_home: Path, env: dict[str, str], reader: tuple[str, str, str], *,
                      files: dict[str, str], home_key: str, stored: dict, before: dict) -> dict:
    """An ingest under another reader that reads, writes, embeds and removes nothing."""
    reader_name, why, mode = reader
    result = ingest(chinvex_home, "Sw", env=env)
    assert result.code == 0, result
    s = result.json
    assert (s["sources"]["indexed"], s["sources"]["removed"], s["sources"]["refreshed"]) == (0, 0, 0), s["decisions"]
    assert s["sources"]["unchanged"] == s["sources"]["scanned"] == len(files)
    assert s["chunks"]["embedded"] == s["chunks"]["written"] == s["chunks"]["deleted"] == 0
    assert s["documents"] == {"written": 0, "removed": 0}
    assert s["errors"] == [] and s["warnings"] == []
    assert s["readers"] == {home_key: {"reader": reader_name, "why": why, "mode": mode, "codex_home": home_key}}
    assert stored_threads(chinvex_home, "Sw") == stored
    assert set(fingerprints(chinvex_home, "Sw")) == set(before)
    return s


def _append_user_message(path: Path, ts: str, message: str) -> None:
    """A user message appended to a rollout file, as Codex writes one."""
    with open(path, "ab") as handle:
        handle.write(json.dumps({"timestamp": ts, "type": "event_msg", "payload": {
            "type": "user_message", "message": message}}).encode() + b"\n")


def test_killed_once_mid_ingest_falls_back_for_that_thread(codex_bin, tmp_path: Path) -> None:
    """legacy_read=appserver so that every listed thread is read through the server; the
    server is killed at its 5th request (initialize, thread/list, then the 3rd thread read)."""
    home = seed_home(tmp_path / ".codex", with_codemie=False)
    chinvex_home = tmp_path / "chinvex"
    settings, log = killer_settings(tmp_path, codex_bin, limit=5, mode="once")
    create_context(chinvex_home, "Kill", home, settings)
    no_bin = {"CHINVEX_CODEX_BIN": ""}  # keep the wrapper as command[0]
    first = ingest(chinvex_home, "Kill", env=no_bin)
    assert first.code == 0, first
    summary = first.json
    assert summary["status"] == "completed" and summary["errors"] == []
    assert sum(1 for line in log.read_text().splitlines() if line.startswith("kill")) == 1
    killed = [w["message"] for w in summary["warnings"] if "appserver_failed" in w["message"]]
    assert len(killed) == 1 and "killed by signal 9" in killed[0], summary["warnings"]
    assert "indexed from its rollout file" in killed[0]
    stored = stored_threads(chinvex_home, "Kill")
    listed = listed_ids(codex_bin, home)
    assert len(stored) == len(listed) + len(UNLISTED_IDS)
    via = Counter(stored[doc(t)]["read_via"] for t in listed)
    # the killed thread and the projection-less paginated one came from their rollout files;
    # the others were read by the (restarted) server
    assert via == {"app-server": len(listed) - 2, "fallback": 2}
    assert summary["adapter_counts"]["cx_appserver"]["fallback_appserver_failed"] == 1

    second = ingest(chinvex_home, "Kill", env=no_bin)
    assert second.code == 0, second
    assert second.json["errors"] == [] and second.json["sources"]["indexed"] == 0
    assert stored_threads(chinvex_home, "Kill") == stored


def test_server_killed_every_time_ends_with_an_error_keeps_the_index_and_the_next_run_completes(codex_bin, tmp_path: Path) -> None:
    home = seed_home(tmp_path / ".codex", with_codemie=False)
    chinvex_home = tmp_path / "chinvex"
    create_context(chinvex_home, "Flaky", home, {"legacy_read": "appserver", "timeout_s": 60})
    first = ingest(chinvex_home, "Flaky", env={"CHINVEX_CODEX_BIN": codex_bin})
    assert first.code == 0, first
    before = stored_threads(chinvex_home, "Flaky")
    listed = listed_ids(codex_bin, home)
    assert Counter(before[doc(t)]["read_via"] for t in listed) == {"app-server": len(listed) - 1, "fallback": 1}

    # Re-read everything while every server instance dies at its 3rd request: the source
    # restarts it twice, then gives up and the remaining threads come from their rollout files.
    settings, log = killer_settings(tmp_path, codex_bin, limit=3, mode="always")
    set_settings(chinvex_home, "Flaky", settings)
    crashed = ingest(chinvex_home, "Flaky", "--full", env={"CHINVEX_CODEX_BIN": ""})
    # The run ends with one clear error for the server of this CODEX_HOME (exit 0: a failed
    # source never fails the run, unless --strict), yet every thread was still indexed from its
    # rollout file.
    assert crashed.code == 0, crashed
    summary = crashed.json
    assert summary["status"] == "completed_with_errors", summary
    [error] = summary["errors"]
    assert Path(error["source_uri"]).resolve() == home.resolve() and error["adapter"] == "cx_appserver", error
    assert "stopped answering mid-ingest" in error["message"] and "giving up" in error["message"]
    assert "\n" not in error["message"]
    kills = [line for line in log.read_text().splitlines() if line.startswith("kill")]
    assert len(kills) == 3  # the first start and two restarts
    messages = [w["message"] for w in summary["warnings"]]
    assert sum("appserver_failed" in m and "killed by signal 9" in m for m in messages) == 3, messages
    assert any("appserver_gave_up" in m and "giving up" in m for m in messages), messages
    reader = summary["readers"][str(home)]
    assert reader["reader"] == "app-server" and "giving up" in reader["stopped"], reader
    after = stored_threads(chinvex_home, "Flaky")
    assert set(after) == set(before)  # nothing indexed was lost
    assert all(after[d]["turns"] >= 1 for d in after if d != doc(CRLF_ID))

    set_settings(chinvex_home, "Flaky", {"legacy_read": "appserver", "timeout_s": 60})
    final = ingest(chinvex_home, "Flaky", env={"CHINVEX_CODEX_BIN": codex_bin})
    assert final.code == 0, final
    assert final.json["errors"] == [] and final.json["status"] == "completed"
    assert set(stored_threads(chinvex_home, "Flaky")) == set(before)
    assert servers_left(home) == []
