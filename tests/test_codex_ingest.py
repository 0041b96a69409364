"""Issue 6: Codex sessions through `chinvex ingest` with the real `codex app-server` 0.169.0.

The `cx_appserver` adapter lists threads through the server, hands legacy threads and unlisted
rollout files to the rollout parser (`cx_sessions_jsonl`), reads paginated threads through the
server and falls back to their rollout files when the server has no turns (a copied paginated
rollout has no SQLite projection) or fails. These tests drive it end to end, as a subprocess,
with the real binary (scripts/install-codex.sh), the built-in embedder and a real Chroma store.

Binary: $CHINVEX_CODEX_BIN, else the install script's cache, else `codex` on PATH. The tests
that need it skip only when it is absent *and* npm is unavailable to install it.

Two Codex homes are seeded from fixtures/codex-rollout with proper rollout names:
- "full" (the integration test): the 0.104 localpush rollouts, the 0.128 codemie rollout, the
  0.169.0 legacy and paginated rollouts, the `.zst` twin of the legacy one (superseded by its
  plain sibling), a `.zst`-only thread (recompressed with a fresh id), the truncated file and
  the CRLF file (fresh ids), and a synthetic era-B file. The server lists 8 threads; the CRLF
  and era-B files are not listed and are read from disk anyway.
- "small": the same without the codemie rollout (it alone is ~500 chunks to embed), for the
  tests whose point is the failure paths.

Some checks need the pipeline to call `Adapter.end_run(options)` at the end of a run (the
run-level warning and `IngestSummary.paths`); they skip, saying so, when it does not.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
import zstandard

from chinvex.ids import thread_doc_id
from chinvex.ingest import pipeline
from chinvex.ingest.adapters import adapter as registered_adapter
from chinvex.ingest.adapters import adapters_for
from chinvex.ingest.origins import precedence_of
from chinvex.sources import Adapter, AdapterOptions, ParseReport, SkippedSource, SourceCandidate
from chinvex_adapters.cx_appserver.adapter import AppServerSettings, CodexAppServerAdapter, codex_home_for
from chinvex_adapters.cx_appserver.source import AppServerSource, client_factory_from
from chinvex_adapters.cx_sessions_jsonl import CodexRolloutAdapter
from conftest import assert_no_traceback, run_cli

REPO_ROOT = Path(__file__).resolve().parents[1]
ROLLOUTS = REPO_ROOT.parent / "shared" / "fixtures" / "codex-rollout"
INSTALL_SCRIPT = REPO_ROOT / "scripts" / "install-codex.sh"
VERSION = "0.169.0"
TRIPLE = "x86_64-unknown-linux-musl"

LEGACY_ID = "01a20116-7f80-7e82-8754-e5125007d434"
PAGINATED_ID = "01a20116-364e-7ac1-8d5a-b68a4dbbf7c6"
TRUNCATED_ID = "01a20116-7f80-7e82-8754-00000000aaaa"
ZST_ID = "01a20116-7f80-7e82-8754-00000000bbbb"
CRLF_ID = "01a20116-7f80-7e82-8754-00000000cccc"
ERA_B_ID = "019b0000-0000-7000-8000-0000000000eb"
CODEMIE_ID = "019e1695-0522-7c83-8b39-0dd379793f80"
LOCALPUSH_IDS = ("019c8a4d-8f45-7010-8b5d-7fad920aa6f9", "019c8a70-dda7-7f33-98ea-f30553347322",
                 "019c8bfe-ec25-79e0-97d7-bda6a9c575ff")
UNLISTED_IDS = {CRLF_ID, ERA_B_ID}  # CRLF and pre-envelope files: 0.169.0 does not list them

HOOKED = hasattr(pipeline._Run, "_end_adapters")
NEEDS_HOOK = "the pipeline does not call Adapter.end_run yet (see the issue-6 report): " \
             "run-level warnings and IngestSummary.paths cannot reach the summary"

pytestmark = pytest.mark.skipif(not ROLLOUTS.is_dir(), reason="shared fixtures not present")


# -- the binary ---------------------------------------------------------------------------------

def find_codex_binary() -> str | None:
    env = os.environ.get("CHINVEX_CODEX_BIN")
    if env:
        return env
    cache = Path(os.environ.get("CHINVEX_CODEX_CACHE") or REPO_ROOT / ".cache" / f"codex-{VERSION}")
    cached = cache / "vendor" / TRIPLE / "bin" / "codex"
    if cached.is_file():
        return str(cached)
    return shutil.which("codex")


@pytest.fixture(scope="module")
def codex_bin() -> str:
    binary = find_codex_binary()
    if binary is None:
        how = f"install it with `{INSTALL_SCRIPT.relative_to(REPO_ROOT)}` or set CHINVEX_CODEX_BIN"
        if shutil.which("npm") is None:
            pytest.skip(f"codex {VERSION} binary absent and npm unavailable; {how}")
        pytest.fail(f"codex {VERSION} binary not installed (npm is available): {how}")
    out = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=60)
    if not out.stdout.strip().endswith(VERSION):
        pytest.fail(f"{binary} reports {out.stdout.strip()!r}; these tests need codex-cli {VERSION}")
    return binary


# -- Codex homes --------------------------------------------------------------------------------

def _copy(src: Path, dest: Path, replace: tuple[str, str] | None = None) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    data = src.read_bytes()
    if replace:
        data = data.replace(replace[0].encode(), replace[1].encode())
    dest.write_bytes(data)


ERA_B_LINES = [
    {"id": ERA_B_ID, "timestamp": "2025-06-01T10:00:00Z", "instructions": None, "cwd": "/old/proj"},
    {"record_type": "state"},
    {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "fix the flaky build"}]},
    {"type": "local_shell_call", "call_id": "s1", "status": "completed",
     "action": {"type": "exec", "command": ["make", "all"], "working_directory": "/old/proj"}},
    {"type": "function_call_output", "call_id": "s1",
     "output": json.dumps({"output": "ok built", "metadata": {"exit_code": 0}})},
    {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Fixed the build."}]},
]


def seed_home(home: Path, *, with_codemie: bool) -> Path:
    """A CODEX_HOME laid out as Codex writes it (sessions/YYYY/MM/DD/rollout-<stamp>-<id>)."""
    sessions = home / "sessions"
    sessions.mkdir(parents=True)
    for src in (ROLLOUTS / "public/localpush/sessions/2026/02/23").glob("rollout-*.jsonl"):
        _copy(src, sessions / "2026/02/23" / src.name)
    if with_codemie:
        codemie = ROLLOUTS / f"public/codemie-code/rollout-2026-05-11T13-28-45-{CODEMIE_ID}.jsonl"
        _copy(codemie, sessions / "2026/05/11" / codemie.name)
    for kind in ("legacy", "paginated"):
        base = ROLLOUTS / "generated-0.169.0" / kind / "sessions"
        for src in base.rglob("rollout-*.jsonl"):
            _copy(src, sessions / src.relative_to(base))
    zst = ROLLOUTS / f"edge-cases/sessions/2026/11/22/rollout-2026-11-22T02-29-41-{LEGACY_ID}.jsonl.zst"
    _copy(zst, sessions / "2026/11/22" / zst.name)  # beside its plain twin: superseded
    plain = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(zst.read_bytes())).read()
    alone = sessions / f"2026/11/23/rollout-2026-11-23T02-29-41-{ZST_ID}.jsonl.zst"
    alone.parent.mkdir(parents=True)
    alone.write_bytes(zstandard.ZstdCompressor().compress(plain.replace(LEGACY_ID.encode(), ZST_ID.encode())))
    _copy(ROLLOUTS / "edge-cases/truncated-last-line.jsonl",
          sessions / f"2026/11/22/rollout-2026-11-22T02-29-41-{TRUNCATED_ID}.jsonl", (LEGACY_ID, TRUNCATED_ID))
    _copy(ROLLOUTS / "edge-cases/crlf-and-blank-lines.jsonl",
          sessions / f"2026/11/24/rollout-2026-11-24T02-29-41-{CRLF_ID}.jsonl", (LEGACY_ID, CRLF_ID))
    era_b = sessions / f"2025/06/01/rollout-2025-06-01T10-00-00-{ERA_B_ID}.jsonl"
    era_b.parent.mkdir(parents=True)
    era_b.write_text("".join(json.dumps(line) + "\n" for line in ERA_B_LINES))
    return home


def rollout_files(home: Path) -> list[Path]:
    """The files the rollout parser reads (a `.zst` beside its plain twin is superseded)."""
    files = sorted(p for p in (home / "sessions").rglob("rollout-*") if p.is_file())
    return [p for p in files if not (p.name.endswith(".zst") and p.with_name(p.name[:-4]).exists())]


def jsonl_turns(home: Path) -> dict[str, int]:
    """Thread id -> number of turns, as the rollout adapter alone gives them."""
    adapter = CodexRolloutAdapter()
    counts: dict[str, int] = {}
    for path in rollout_files(home):
        cand = SourceCandidate(source_uri=str(path), source_type="codex_session",
                               adapter=adapter.name, root=str(home), path=path)
        (doc,) = adapter.parse(cand, ParseReport(), None)
        counts[doc.thread_id] = len(doc.turns)
    return counts


def listed_ids(binary: str, home: Path) -> set[str]:
    from chinvex.models import CodexAppServerConfig

    with AppServerSource(client_factory_from(CodexAppServerConfig(timeout_s=30), codex_home=str(home),
                                             binary=binary)) as source:
        return {t.thread_id for t in source.list_threads()}


# -- contexts and runs --------------------------------------------------------------------------

def create_context(chinvex_home: Path, name: str, codex_home: Path, settings: dict) -> None:
    env = {"CHINVEX_HOME": str(chinvex_home)}
    result = run_cli("context", "create", name, "--codex-sessions", str(codex_home), env=env)
    assert result.code == 0, result
    path = chinvex_home / "contexts" / name / "context.json"
    data = json.loads(path.read_text())
    data["codex_appserver"] = settings
    path.write_text(json.dumps(data, indent=2))


def ingest(chinvex_home: Path, name: str, *extra: str, env: dict[str, str] | None = None):
    result = run_cli("ingest", "--context", name, "--json", "--verbose", *extra,
                     env={"CHINVEX_HOME": str(chinvex_home), **(env or {})})
    assert_no_traceback(result)
    return result


def db(chinvex_home: Path, name: str) -> sqlite3.Connection:
    conn = sqlite3.connect(chinvex_home / "indexes" / name / "hybrid.db")
    conn.row_factory = sqlite3.Row
    return conn


def stored_threads(chinvex_home: Path, name: str) -> dict[str, dict]:
    """doc_id -> {turns, source (the reader), read_via, origin}."""
    with db(chinvex_home, name) as conn:
        rows = conn.execute(
            "SELECT d.doc_id, d.origin_uri, d.metadata_json, "
            "(SELECT count(*) FROM conversation_turns t WHERE t.doc_id = d.doc_id) AS turns "
            "FROM documents d WHERE d.source_type = 'codex_session'").fetchall()
    out = {}
    for row in rows:
        meta = json.loads(row["metadata_json"])
        out[row["doc_id"]] = {"turns": row["turns"], "source": meta.get("source"),
                              "read_via": meta.get("read_via"), "origin": row["origin_uri"],
                              "thread_id": meta.get("thread_id")}
    return out


def fingerprints(chinvex_home: Path, name: str) -> dict[str, sqlite3.Row]:
    with db(chinvex_home, name) as conn:
        return {r["source_uri"]: r for r in conn.execute("SELECT * FROM source_fingerprints")}


def doc(thread_id: str) -> str:
    return thread_doc_id("codex_session", thread_id)


def servers_left(codex_home: Path) -> list[int]:
    """Pids of processes still running with this CODEX_HOME (app-server children that were
    not stopped)."""
    import psutil

    left = []
    for proc in psutil.process_iter(["pid"]):
        try:
            if proc.environ().get("CODEX_HOME") == str(codex_home):
                left.append(proc.pid)
        except (psutil.Error, OSError):
            continue
    return left


# -- registration and routing (in process, no embedding) -----------------------------------------

def test_registration() -> None:
    assert adapters_for("codex_session_roots") == ["cx_appserver"]
    app = registered_adapter("cx_appserver")
    assert isinstance(app, CodexAppServerAdapter) and isinstance(app, Adapter)
    assert (app.name, app.source_type, app.parser_version, app.include_key) == (
        "cx_appserver", "codex_session", "cx_appserver_v1", "codex_session_roots")
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
    from chinvex.sources import SourceError

    with pytest.raises(SourceError, match='legacy_read must be "rollout" or "appserver"'):
        AppServerSettings.from_options(opts({"legacy_read": "server"}), environ={})


def _enumerate(home_or_root: Path, settings: dict, binary: str | None = None, excludes=()):
    adapter = CodexAppServerAdapter()
    options = AdapterOptions(context_name="T", excludes=list(excludes), settings={"codex_appserver": settings})
    old = os.environ.get("CHINVEX_CODEX_BIN")
    if binary:
        os.environ["CHINVEX_CODEX_BIN"] = binary
    else:  # the configured command is what is tested (scripts/test.sh exports the variable)
        os.environ.pop("CHINVEX_CODEX_BIN", None)
    try:
        items = list(adapter.enumerate(home_or_root, options))
    finally:
        if old is None:
            os.environ.pop("CHINVEX_CODEX_BIN", None)
        else:
            os.environ["CHINVEX_CODEX_BIN"] = old
    return adapter, options, items


def test_routing_by_history_mode(codex_bin, tmp_path: Path) -> None:
    home = seed_home(tmp_path / ".codex", with_codemie=False)
    adapter, options, items = _enumerate(home, {}, codex_bin)
    candidates = [i for i in items if isinstance(i, SourceCandidate)]
    by_thread = {c.thread_id: c for c in candidates}
    # one app-server candidate: the paginated thread, fingerprinted by updatedAt, no path
    server = [c for c in candidates if c.adapter == "cx_appserver"]
    assert [c.thread_id for c in server] == [PAGINATED_ID]
    assert server[0].source_uri == f"codex://thread/{PAGINATED_ID}"
    assert server[0].path is None and server[0].thread_updated_at.endswith("Z")
    # everything else is a rollout file for the JSONL parser, each file exactly once
    files = [c for c in candidates if c.adapter == "cx_sessions_jsonl"]
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
    assert adapter.end_run(options) is None  # the children are stopped once


def test_legacy_read_appserver_routes_every_listed_thread_to_the_server(codex_bin, tmp_path: Path) -> None:
    home = seed_home(tmp_path / ".codex", with_codemie=False)
    adapter, options, items = _enumerate(home, {"legacy_read": "appserver"}, codex_bin)
    server = {c.thread_id for c in items if isinstance(c, SourceCandidate) and c.adapter == "cx_appserver"}
    files = {c.thread_id for c in items if isinstance(c, SourceCandidate) and c.adapter == "cx_sessions_jsonl"}
    assert server == listed_ids(codex_bin, home)
    assert files == UNLISTED_IDS
    adapter.end_run(options)


def test_sessions_root_excludes_and_disabled(codex_bin, tmp_path: Path) -> None:
    home = seed_home(tmp_path / ".codex", with_codemie=False)
    # A root named `sessions` is read through its parent CODEX_HOME.
    adapter, options, items = _enumerate(home / "sessions", {}, codex_bin)
    assert [c.thread_id for c in items if isinstance(c, SourceCandidate) and c.adapter == "cx_appserver"] \
        == [PAGINATED_ID]
    assert adapter.end_run(options)["counts"]["threads_listed"] == 7
    # Excluded files stay excluded even when the server lists their thread.
    adapter, options, items = _enumerate(home, {}, codex_bin, excludes=["sessions/2026/11/22/*"])
    threads = {c.thread_id for c in items if isinstance(c, SourceCandidate)}
    assert PAGINATED_ID not in threads and LEGACY_ID not in threads and TRUNCATED_ID not in threads
    assert adapter.end_run(options)["counts"]["threads_excluded"] == 3
    # Disabled: plain rollout reading, no server, and no warning (it was asked for).
    adapter, options, items = _enumerate(home, {"enabled": False, "command": ["/nonexistent/codex"]})
    assert {c.adapter for c in items if isinstance(c, SourceCandidate)} == {"cx_sessions_jsonl"}
    report = adapter.end_run(options)
    assert report["warnings"] == []
    assert {p["reason"] for p in report["paths"].values()} == {"codex_appserver.enabled is false"}


def test_unavailable_server_one_warning_per_root(tmp_path: Path) -> None:
    home = seed_home(tmp_path / ".codex", with_codemie=False)
    adapter, options, items = _enumerate(home, {"command": ["/nonexistent/bin/codex", "app-server"]})
    assert {c.adapter for c in items if isinstance(c, SourceCandidate)} == {"cx_sessions_jsonl"}
    assert sorted(str(c.path) for c in items if isinstance(c, SourceCandidate)) == \
        sorted(str(p) for p in rollout_files(home))
    report = adapter.end_run(options)
    assert report["warnings"] == [(str(home), "codex app-server unavailable (codex binary not found at "
                                   "/nonexistent/bin/codex; run scripts/install-codex.sh or fix "
                                   "codex_appserver.command); reading rollout files directly")]
    assert {p["path"] for p in report["paths"].values()} == {"rollout"}


def test_fallback_without_a_rollout_file_is_a_clear_source_error(codex_bin, tmp_path: Path) -> None:
    from chinvex.sources import SourceError

    home = seed_home(tmp_path / ".codex", with_codemie=False)
    adapter, options, items = _enumerate(home, {}, codex_bin)
    (paginated,) = [c for c in items if isinstance(c, SourceCandidate) and c.adapter == "cx_appserver"]
    Path(paginated.extra["rollout_path"]).unlink()  # gone between listing and reading
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


# -- the integration test (real binary, through `chinvex ingest`) ------------------------------

@pytest.fixture(scope="module")
def full_run(codex_bin, tmp_path_factory):
    """One context over the full home: first ingest, then a second one."""
    base = tmp_path_factory.mktemp("cxfull")
    home = seed_home(base / ".codex", with_codemie=True)
    chinvex_home = base / "chinvex"
    create_context(chinvex_home, "Cx", home, {"timeout_s": 60})
    env = {"CHINVEX_CODEX_BIN": codex_bin}
    first = ingest(chinvex_home, "Cx", env=env)
    stored = stored_threads(chinvex_home, "Cx")
    second = ingest(chinvex_home, "Cx", env=env)
    assert servers_left(home) == []  # every app-server child was stopped with its run
    return {"home": home, "chinvex_home": chinvex_home, "first": first, "second": second,
            "stored": stored, "listed": listed_ids(codex_bin, home)}


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
    expected = jsonl_turns(full_run["home"])
    stored = full_run["stored"]
    assert {tid: stored[doc(tid)]["turns"] for tid in expected} == expected
    assert expected[LOCALPUSH_IDS[0]] > 118  # the tool calls of the 0.104 session are all there


def test_which_path_each_thread_took(full_run) -> None:
    summary = full_run["first"].json
    decisions = {d["source_uri"]: d for d in summary["decisions"] if d["action"] == "ingested"}
    # The paginated thread went to the app-server adapter, which fell back to its rollout file
    # (a copied paginated rollout has no projection): a warning line and a count say so.
    assert decisions[f"codex://thread/{PAGINATED_ID}"]["adapter"] == "cx_appserver"
    assert full_run["stored"][doc(PAGINATED_ID)]["read_via"] == "fallback"
    fallback = [w for w in summary["warnings"] if PAGINATED_ID in w["message"]]
    assert len(fallback) == 1 and "paginated_projection_missing" in fallback[0]["message"]
    assert summary["adapter_counts"]["cx_appserver"]["fallback_paginated_projection_missing"] == 1
    # Every legacy thread and every unlisted file went to the rollout parser, by file.
    by_adapter = Counter(d["adapter"] for d in decisions.values())
    assert by_adapter == {"cx_appserver": 1, "cx_sessions_jsonl": len(full_run["stored"]) - 1}
    fps = fingerprints(full_run["chinvex_home"], "Cx")
    assert fps[f"codex://thread/{PAGINATED_ID}"]["thread_updated_at"].endswith("Z")
    assert fps[f"codex://thread/{PAGINATED_ID}"]["size_bytes"] is None


@pytest.mark.skipif(not HOOKED, reason=NEEDS_HOOK)
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


def test_second_ingest_skips_everything(full_run) -> None:
    second = full_run["second"]
    assert second.code == 0, second
    summary = second.json
    assert summary["sources"]["indexed"] == 0
    assert summary["sources"]["unchanged"] == summary["sources"]["scanned"] == len(full_run["stored"])
    assert summary["chunks"]["embedded"] == 0 and summary["chunks"]["written"] == 0
    assert {d["action"] for d in summary["decisions"] if d["reason"] != "superseded"} == {"skipped"}
    assert stored_threads(full_run["chinvex_home"], "Cx") == full_run["stored"]


# -- without the binary -------------------------------------------------------------------------

def test_without_the_binary_everything_is_read_from_rollout_files(tmp_path: Path) -> None:
    home = seed_home(tmp_path / ".codex", with_codemie=False)
    chinvex_home = tmp_path / "chinvex"
    create_context(chinvex_home, "NoBin", home, {"command": ["/nonexistent/bin/codex", "app-server"]})
    result = ingest(chinvex_home, "NoBin", env={"CHINVEX_CODEX_BIN": ""})
    assert result.code == 0, result
    summary = result.json
    assert summary["status"] == "completed" and summary["errors"] == []
    stored = stored_threads(chinvex_home, "NoBin")
    expected = jsonl_turns(home)
    assert {tid: stored[doc(tid)]["turns"] for tid in expected} == expected
    assert len(stored) == len(expected)
    assert {d["adapter"] for d in summary["decisions"] if d["action"] == "ingested"} == {"cx_sessions_jsonl"}
    assert not any(uri.startswith("codex://") for uri in fingerprints(chinvex_home, "NoBin"))
    if HOOKED:
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
    if HOOKED:
        assert "warning: codex app-server unavailable (codex binary not found" in human.stdout
    else:
        pytest.skip(f"warning checks not run: {NEEDS_HOOK}")


# -- killing the app-server mid-ingest ----------------------------------------------------------

KILLER = r'''
"""Stands in for `codex app-server`: runs the real binary, forwards our stdin to it, and after
the N-th request SIGKILLs it and itself (so the client sees a server killed mid-request)."""
import os, signal, subprocess, sys
log, limit, mode, real = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4:]
with open(log, "a") as f:
    f.write(f"start {os.getpid()}\n")
armed = mode == "always" or not any(l.startswith("kill") for l in open(log))
child = subprocess.Popen(real, stdin=subprocess.PIPE)  # stdout/stderr: ours, inherited
requests = 0
for line in sys.stdin.buffer:
    if b'"method"' in line and b'"id"' in line:
        requests += 1
        if armed and requests >= limit:
            with open(log, "a") as f:
                f.write(f"kill {os.getpid()} at request {requests}\n")
            os.kill(child.pid, signal.SIGKILL)
            child.wait()
            os.kill(os.getpid(), signal.SIGKILL)
    child.stdin.write(line)
    child.stdin.flush()
child.stdin.close()
sys.exit(child.wait())
'''


def killer_settings(tmp_path: Path, binary: str, limit: int, mode: str) -> tuple[dict, Path]:
    script = tmp_path / "killer.py"
    script.write_text(KILLER)
    log = tmp_path / f"killer-{mode}.log"
    return {"command": [sys.executable, str(script), str(log), str(limit), mode, binary, "app-server"],
            "legacy_read": "appserver", "timeout_s": 60}, log


def set_settings(chinvex_home: Path, name: str, settings: dict) -> None:
    path = chinvex_home / "contexts" / name / "context.json"
    data = json.loads(path.read_text())
    data["codex_appserver"] = settings
    path.write_text(json.dumps(data, indent=2))


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


def test_server_killed_every_time_keeps_the_index_and_the_next_run_completes(codex_bin, tmp_path: Path) -> None:
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
    assert crashed.code == 0, crashed
    summary = crashed.json
    assert summary["errors"] == [] and summary["status"] == "completed"
    kills = [line for line in log.read_text().splitlines() if line.startswith("kill")]
    assert len(kills) == 3  # the first start and two restarts
    messages = [w["message"] for w in summary["warnings"]]
    assert sum("appserver_failed" in m and "killed by signal 9" in m for m in messages) == 3, messages
    assert any("appserver_gave_up" in m and "giving up" in m for m in messages), messages
    after = stored_threads(chinvex_home, "Flaky")
    assert set(after) == set(before)  # nothing indexed was lost
    assert all(after[d]["turns"] >= 1 for d in after if d != doc(CRLF_ID))

    set_settings(chinvex_home, "Flaky", {"legacy_read": "appserver", "timeout_s": 60})
    final = ingest(chinvex_home, "Flaky", env={"CHINVEX_CODEX_BIN": codex_bin})
    assert final.code == 0, final
    assert final.json["errors"] == [] and final.json["status"] == "completed"
    assert set(stored_threads(chinvex_home, "Flaky")) == set(before)
    assert servers_left(home) == []
