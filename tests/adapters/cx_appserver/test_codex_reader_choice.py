"""The cx_appserver adapter's settings, reader choice and routing, without a full ingest."""

from __future__ import annotations

from pathlib import Path
import pytest
from chinvex.ingest.adapters import adapter as registered_adapter
from chinvex.ingest.adapters import adapters_for
from chinvex.ingest.origins import precedence_of
from chinvex.models.sources import Adapter, AdapterOptions, ParseReport, SkippedSource, SourceCandidate
from chinvex_adapters.cx_appserver.adapter import CodexAppServerAdapter
from chinvex_adapters.cx_appserver.reader_choice import AppServerSettings, codex_home_for
from chinvex_adapters.cx_sessions_jsonl import CodexRolloutAdapter
from helpers import assert_no_traceback, run_cli
from codex_ingest_support import (
    CRLF_ID,
    LEGACY_ID,
    PAGINATED_ID,
    TRUNCATED_ID,
    UNLISTED_IDS,
    ZST_ID,
    _enumerate,
    create_context,
    listed_ids,
    rollout_files,
    seed_home,
)


def test_registration() -> None:
    assert adapters_for("codex_session_roots") == ["cx_appserver"]
    app = registered_adapter("cx_appserver")
    assert isinstance(app, CodexAppServerAdapter) and isinstance(app, Adapter)
    assert (app.name, app.source_type, app.parser_version, app.include_key) == (
        "cx_appserver", "codex_session", "cx_appserver_v2+cx_sessions_jsonl_v3", "codex_session_roots")
    assert type(registered_adapter("cx_sessions_jsonl")) is CodexRolloutAdapter  # still parses


def test_codex_home_detection(tmp_path: Path) -> None:
    home = tmp_path / ".codex"
    (home / "sessions").mkdir(parents=True)
    assert codex_home_for(home) == home
    assert codex_home_for(home / "sessions") == home
    (tmp_path / "plain").mkdir()
    assert codex_home_for(tmp_path / "plain") is None
    assert codex_home_for(tmp_path / "missing") is None


def test_settings_validation() -> None:
    def opts(block):
        return AdapterOptions(context_name="T", settings={"codex_appserver": block})

    assert AppServerSettings.from_options(opts(None), environ={}).legacy_read == "rollout"
    custom = AppServerSettings.from_options(opts({"legacy_read": "appserver", "command": ["x", "app-server"]}),
                                            environ={"CHINVEX_CODEX_BIN": "/opt/codex"})
    assert (custom.legacy_read, custom.binary, custom.config.command) == ("appserver", "/opt/codex", ["x", "app-server"])
    assert AppServerSettings.from_options(opts({}), environ={"CHINVEX_CODEX_BIN": ""}).binary is None
    from chinvex.models.sources import SourceError

    with pytest.raises(SourceError, match='legacy_read must be "rollout" or "appserver"'):
        AppServerSettings.from_options(opts({"legacy_read": "server"}), environ={})


def test_routing_by_history_mode(codex_bin, tmp_path: Path) -> None:
    home = seed_home(tmp_path / ".codex", with_codemie=False)
    adapter, options, items = _enumerate(home, {}, codex_bin)
    candidates = [i for i in items if isinstance(i, SourceCandidate)]
    by_thread = {c.thread_id: c for c in candidates}
    # Every candidate is the composite adapter's and is keyed by its rollout file, whichever
    # reader reads it: the identity of a thread must not change with its reader.
    assert {c.adapter for c in candidates} == {"cx_appserver"}
    assert sorted(c.source_uri for c in candidates) == sorted(str(p) for p in rollout_files(home))
    assert all(c.path is not None and c.size_bytes is not None for c in candidates)
    # one thread read through the server: the paginated one (its updatedAt kept for information)
    server = [c for c in candidates if c.extra["reader"] == "app-server"]
    assert [c.thread_id for c in server] == [PAGINATED_ID]
    assert server[0].thread_updated_at.endswith("Z")
    # everything else is read by the rollout parser, each file exactly once
    files = [c for c in candidates if c.extra["reader"] == "rollout"]
    assert sorted(str(c.path) for c in files) == sorted(
        str(p) for p in rollout_files(home) if PAGINATED_ID not in p.name)
    assert by_thread[LEGACY_ID].extra["listed_by_appserver"] is True
    assert "listed_by_appserver" not in by_thread[CRLF_ID].extra  # not listed: read from disk
    skipped = [i for i in items if isinstance(i, SkippedSource)]
    assert [s.reason for s in skipped] == ["superseded"]
    report = adapter.end_run(options)
    assert report["counts"]["threads_listed"] == 7
    assert report["counts"]["threads_appserver"] == 1
    assert report["counts"]["rollout_files_not_listed"] == 2
    assert report["warnings"] == []
    assert report["readers"] == {str(home): {"reader": "app-server", "why": f"{codex_bin} found (mode auto)",
                                             "mode": "auto", "codex_home": str(home)}}
    assert adapter.end_run(options) is None  # the children are stopped once


def test_legacy_read_appserver_routes_every_listed_thread_to_the_server(codex_bin, tmp_path: Path) -> None:
    home = seed_home(tmp_path / ".codex", with_codemie=False)
    adapter, options, items = _enumerate(home, {"legacy_read": "appserver"}, codex_bin)
    server = {c.thread_id for c in items if isinstance(c, SourceCandidate) and c.extra["reader"] == "app-server"}
    files = {c.thread_id for c in items if isinstance(c, SourceCandidate) and c.extra["reader"] == "rollout"}
    assert server == listed_ids(codex_bin, home)
    assert files == UNLISTED_IDS
    adapter.end_run(options)


def test_sessions_root_excludes_and_disabled(codex_bin, tmp_path: Path) -> None:
    home = seed_home(tmp_path / ".codex", with_codemie=False)
    # A root named `sessions` is read through its parent CODEX_HOME.
    adapter, options, items = _enumerate(home / "sessions", {}, codex_bin)
    assert [c.thread_id for c in items if isinstance(c, SourceCandidate) and c.extra["reader"] == "app-server"] \
        == [PAGINATED_ID]
    assert adapter.end_run(options)["counts"]["threads_listed"] == 7
    # Excluded files stay excluded even when the server lists their thread.
    adapter, options, items = _enumerate(home, {}, codex_bin, excludes=["sessions/2026/11/22/*"])
    threads = {c.thread_id for c in items if isinstance(c, SourceCandidate)}
    assert PAGINATED_ID not in threads and LEGACY_ID not in threads and TRUNCATED_ID not in threads
    assert adapter.end_run(options)["counts"]["threads_excluded"] == 3
    # A folder exclude: the walk does not enter the folder, and the threads the server lists
    # there stay out too (as they would without the server).
    adapter, options, items = _enumerate(home, {}, codex_bin, excludes=["sessions/2026/11/"])
    threads = {c.thread_id for c in items if isinstance(c, SourceCandidate)}
    assert not threads & {PAGINATED_ID, LEGACY_ID, TRUNCATED_ID, ZST_ID}, threads
    assert adapter.end_run(options)["counts"]["threads_excluded"] == 4
    # Disabled, by the old key or by mode: plain rollout reading, no server, no warning (it
    # was asked for), and the same candidates as with the server.
    for block, why in (({"enabled": False}, "codex_appserver.enabled is false"),
                       ({"mode": "off"}, "codex_appserver.mode is off")):
        adapter, options, items = _enumerate(home, {**block, "command": ["/nonexistent/codex"]})
        assert {(c.adapter, c.extra["reader"]) for c in items if isinstance(c, SourceCandidate)} == {
            ("cx_appserver", "rollout")}
        assert sorted(c.source_uri for c in items if isinstance(c, SourceCandidate)) == sorted(
            str(p) for p in rollout_files(home))
        report = adapter.end_run(options)
        assert report["warnings"] == []
        assert {p["reason"] for p in report["paths"].values()} == {why}
        assert report["readers"][str(home)] == {"reader": "jsonl", "why": why, "mode": "off",
                                                "codex_home": str(home)}


def test_auto_without_the_binary_reads_rollout_files_without_a_warning(tmp_path: Path) -> None:
    home = seed_home(tmp_path / ".codex", with_codemie=False)
    for command, why in ((["/nonexistent/bin/codex", "app-server"], "/nonexistent/bin/codex not found (mode auto)"),
                         (["codex-not-installed-here", "app-server"], "codex-not-installed-here not on PATH (mode auto)")):
        adapter, options, items = _enumerate(home, {"command": command})
        assert {(c.adapter, c.extra["reader"]) for c in items if isinstance(c, SourceCandidate)} == {
            ("cx_appserver", "rollout")}
        report = adapter.end_run(options)
        assert report["warnings"] == [] and report["errors"] == []
        assert report["readers"] == {str(home): {"reader": "jsonl", "why": why, "mode": "auto",
                                                 "codex_home": str(home)}}
        assert {p["reason"] for p in report["paths"].values()} == {why}


def test_reader_choice_and_the_enabled_key(tmp_path: Path) -> None:
    from chinvex.models import CodexAppServerConfig
    from chinvex_adapters.cx_appserver.reader_choice import choose_reader

    home = tmp_path / ".codex"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "codex"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)

    def choice(block: dict, search_path: str = str(bin_dir), binary: str | None = None, at: Path | None = home):
        settings = AppServerSettings(CodexAppServerConfig.model_validate(block), binary=binary)
        made = choose_reader(settings, at, search_path)
        return made.reader, made.why

    assert choice({}) == ("app-server", f"codex found at {fake} (mode auto)")
    assert choice({}, search_path=str(tmp_path / "empty")) == ("jsonl", "codex not on PATH (mode auto)")
    assert choice({}, search_path=str(tmp_path / "empty"), binary=str(fake)) == ("app-server", f"{fake} found (mode auto)")
    assert choice({"mode": "on"}, search_path=str(tmp_path / "empty")) == ("app-server", "codex_appserver.mode is on")
    assert choice({"mode": "off"}) == ("jsonl", "codex_appserver.mode is off")
    assert choice({"enabled": True}, search_path="") == ("app-server", "codex_appserver.enabled is true")
    assert choice({"enabled": False}) == ("jsonl", "codex_appserver.enabled is false")
    assert choice({"enabled": True, "mode": "auto"}) == ("app-server", f"codex found at {fake} (mode auto)")
    assert choice({}, at=None) == ("jsonl", "not a CODEX_HOME (no sessions/ or archived_sessions/ folder)")
    for block in ({"enabled": False, "mode": "on"}, {"enabled": True, "mode": "off"}):
        with pytest.raises(ValueError, match="contradicts mode"):
            CodexAppServerConfig.model_validate(block)
    with pytest.raises(ValueError, match="mode"):
        CodexAppServerConfig.model_validate({"mode": "sometimes"})


@pytest.mark.parametrize(("block", "says"), [
    ({"mode": "sometimes"}, "invalid field 'codex_appserver.mode': Input should be 'auto', 'on' or 'off'"),
    ({"mode": "on", "enabled": False}, "enabled false contradicts mode 'on'; keep only mode"),
])
def test_a_bad_mode_is_a_one_line_config_error(tmp_path: Path, block: dict, says: str) -> None:
    home = tmp_path / ".codex"
    (home / "sessions").mkdir(parents=True)
    chinvex_home = tmp_path / "chinvex"
    create_context(chinvex_home, "Bad", home, block)
    result = run_cli("ingest", "--context", "Bad", env={"CHINVEX_HOME": str(chinvex_home)})
    assert_no_traceback(result)
    assert result.code == 2, result
    [line] = result.stderr.strip().splitlines()
    assert str(chinvex_home / "contexts" / "Bad" / "context.json") in line and says in line, line


def test_unavailable_server_one_warning_per_root(tmp_path: Path) -> None:
    home = seed_home(tmp_path / ".codex", with_codemie=False)
    adapter, options, items = _enumerate(home, {"mode": "on", "command": ["/nonexistent/bin/codex", "app-server"]})
    assert {(c.adapter, c.extra["reader"]) for c in items if isinstance(c, SourceCandidate)} == {
        ("cx_appserver", "rollout")}
    assert sorted(str(c.path) for c in items if isinstance(c, SourceCandidate)) == \
        sorted(str(p) for p in rollout_files(home))
    report = adapter.end_run(options)
    assert report["warnings"] == [(str(home), "codex app-server unavailable (codex binary not found at "
                                   "/nonexistent/bin/codex; run scripts/install-codex.sh or fix "
                                   "codex_appserver.command); reading rollout files directly")]
    assert {p["path"] for p in report["paths"].values()} == {"rollout"}
    assert report["readers"][str(home)]["reader"] == "jsonl"
    assert report["readers"][str(home)]["why"].startswith("codex app-server unavailable (codex binary not found")


def test_fallback_without_a_rollout_file_is_a_clear_source_error(codex_bin, tmp_path: Path) -> None:
    from chinvex.models.sources import SourceError

    home = seed_home(tmp_path / ".codex", with_codemie=False)
    adapter, options, items = _enumerate(home, {}, codex_bin)
    (paginated,) = [c for c in items if isinstance(c, SourceCandidate) and c.extra["reader"] == "app-server"]
    paginated.path.unlink()  # gone between listing and reading
    with pytest.raises(SourceError, match=f"codex thread {PAGINATED_ID}: "
                                          "(paginated_projection_missing|server_error): "
                                          ".*; no rollout file to read instead"):
        list(adapter.parse(paginated, ParseReport(), None))
    adapter.end_run(options)


def test_precedence_server_copy_wins_fallback_does_not(codex_bin, tmp_path: Path) -> None:
    home = seed_home(tmp_path / ".codex", with_codemie=False)
    adapter, options, items = _enumerate(home, {"legacy_read": "appserver"}, codex_bin)
    by_thread = {c.thread_id: c for c in items if isinstance(c, SourceCandidate)}
    (server_doc,) = adapter.parse(by_thread[LEGACY_ID], ParseReport(), None)
    assert server_doc.source == "cx_appserver" and server_doc.metadata["read_via"] == "app-server"
    (fallback_doc,) = adapter.parse(by_thread[PAGINATED_ID], report := ParseReport(), None)
    assert fallback_doc.source == "cx_sessions_jsonl" and fallback_doc.metadata["read_via"] == "fallback"
    assert report.counts["fallback_paginated_projection_missing"] == 1
    adapter.end_run(options)
    rollout = CodexRolloutAdapter()
    legacy_file = home / f"sessions/2026/11/22/rollout-2026-11-22T02-29-41-{LEGACY_ID}.jsonl"
    (rollout_doc,) = rollout.parse(SourceCandidate(str(legacy_file), "codex_session", rollout.name,
                                                   str(home), legacy_file), ParseReport(), None)
    assert len(rollout_doc.turns) > len(server_doc.turns)  # 0.169's legacy replay drops tool calls
    # ... yet the server's copy is the one the origin ledger keeps ("app-server preferred"),
    assert precedence_of(adapter, server_doc) > precedence_of(rollout, rollout_doc)
    # while a fallback read ranks exactly like the rollout adapter's own copy would.
    assert precedence_of(adapter, fallback_doc) == precedence_of(rollout, fallback_doc)
    empty = server_doc.model_copy(update={"turns": []})
    assert precedence_of(adapter, empty) == precedence_of(rollout, empty)
