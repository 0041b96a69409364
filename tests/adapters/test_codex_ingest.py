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

With the default `legacy_read = "rollout"` the "full" run reads no thread's content through the
server (legacy threads go to the rollout parser, the copied paginated one falls back), so its
turn counts match the rollout adapter's by construction: it checks the routing. The acceptance
proper is `appserver_run`: the "full" home plus a paginated thread the real server wrote (so it
has a projection), ingested with `legacy_read = "appserver"`, every listed thread's content read
through thread/read or thread/turns/list and compared with the rollout adapter's reading of the
same file (`legacy_replay` says what 0.169.0's legacy replay leaves out, derived from the file).

The pipeline calls `Adapter.end_run(options)` at the end of a run, which is how the run-level
warning ("app-server unavailable") and `IngestSummary.paths` (which path each thread took)
reach the summary; those checks always run.
"""

from __future__ import annotations

import io
import json
import os
import re
import sqlite3
import sys
from collections import Counter
from pathlib import Path

import pytest
import zstandard

from chinvex.ids import thread_doc_id
from chinvex.models import ConversationDoc, Turn
from chinvex.ingest.adapters import adapter as registered_adapter
from chinvex.ingest.adapters import adapters_for
from chinvex.ingest.origins import precedence_of
from chinvex.models.sources import Adapter, AdapterOptions, ParseReport, SkippedSource, SourceCandidate
from chinvex_adapters.cx_appserver.adapter import CodexAppServerAdapter
from chinvex_adapters.cx_appserver.reader_choice import AppServerSettings, codex_home_for
from chinvex_adapters.cx_appserver.source import AppServerSource, client_factory_from
from chinvex_adapters.cx_sessions_jsonl import CodexRolloutAdapter
from chinvex_adapters.cx_sessions_jsonl.reader import open_stream
from helpers import (CODEX_INSTALL_SCRIPT, CODEX_TRIPLE, CODEX_VERSION, FIXTURES, CliResult,
                     assert_no_traceback, codex_binary_or_skip, run_cli, run_cli_in_process)
from test_cx_appserver_live import record_paginated_thread, squash_ws, turn_kind

ROLLOUTS = FIXTURES / "codex-rollout"
INSTALL_SCRIPT, VERSION, TRIPLE = CODEX_INSTALL_SCRIPT, CODEX_VERSION, CODEX_TRIPLE

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


# -- the binary ---------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def codex_bin() -> str:
    return codex_binary_or_skip()


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


def jsonl_docs(home: Path) -> dict[str, tuple[Path, ConversationDoc]]:
    """Thread id -> (rollout file, document), as the rollout adapter alone reads the home."""
    adapter = CodexRolloutAdapter()
    docs: dict[str, tuple[Path, ConversationDoc]] = {}
    for path in rollout_files(home):
        cand = SourceCandidate(source_uri=str(path), source_type="codex_session",
                               adapter=adapter.name, root=str(home), path=path)
        (doc,) = adapter.parse(cand, ParseReport(), None)
        assert doc.thread_id not in docs, f"{path}: thread {doc.thread_id} twice in the home"
        docs[doc.thread_id] = (path, doc)
    return docs


def jsonl_turns(home: Path) -> dict[str, int]:
    """Thread id -> number of turns, as the rollout adapter alone gives them."""
    return {tid: len(doc.turns) for tid, (_, doc) in jsonl_docs(home).items()}


def rollout_events(path: Path) -> Counter[str]:
    """How many `event_msg` records of each type a rollout file (.zst included) holds."""
    events: Counter[str] = Counter()
    with open_stream(path) as stream:
        for line in stream.read().splitlines():
            try:
                record = json.loads(line)
            except ValueError:
                continue  # the truncated file's partial last line
            if isinstance(record, dict) and record.get("type") == "event_msg":
                events[str((record.get("payload") or {}).get("type"))] += 1
    return events


def legacy_replay(turns: list[Turn], events: Counter[str]) -> list[tuple[str, str]]:
    """What codex 0.169.0's `thread/read` replay of a legacy rollout must give, derived from the
    rollout adapter's reading of the same file, as (kind, text modulo whitespace):

    - the replay is built from `event_msg` records, so the tool calls and their outputs (which
      exist only as response_items) are absent;
    - for the same reason, a file without `agent_message` / `agent_reasoning` events (the
      codemie fixture, whose author kept only response_items for the assistant side) has no
      assistant messages / reasoning in the replay;
    - reasoning summaries that were separated only by tool calls become one reasoning item,
      the texts joined in order.

    Everything else — every user turn and every assistant message — must come back one for one,
    with the same text, so a replay that drops or duplicates one of them fails the comparison."""
    out: list[tuple[str, str]] = []
    for turn in turns:
        kind, text = turn_kind(turn), squash_ws(turn.text)
        if kind == "tool":
            continue
        if kind == "assistant" and not events["agent_message"]:
            continue
        if kind == "reasoning":
            if not events["agent_reasoning"]:
                continue
            if out and out[-1][0] == "reasoning":
                out[-1] = ("reasoning", f"{out[-1][1]} {text}")
                continue
        out.append((kind, text))
    return out


def listed_ids(binary: str, home: Path) -> set[str]:
    from chinvex.models import CodexAppServerConfig

    with AppServerSource(client_factory_from(CodexAppServerConfig(timeout_s=30), codex_home=str(home),
                                             binary=binary)) as source:
        return {t.thread_id for t in source.list_threads()}


# -- contexts and runs --------------------------------------------------------------------------

def create_context(chinvex_home: Path, name: str, codex_home: Path, settings: dict) -> None:
    """Set-up, in this process (conftest.run_cli_in_process); the ingests are processes."""
    env = {"CHINVEX_HOME": str(chinvex_home)}
    result = run_cli_in_process("context", "create", name, "--codex-sessions", str(codex_home), env=env)
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


def stored_turns(chinvex_home: Path, name: str, doc_id: str) -> list[Turn]:
    """The turns the index holds for one document (what search and chunking saw)."""
    with db(chinvex_home, name) as conn:
        rows = conn.execute("SELECT turn_json FROM conversation_turns WHERE doc_id=? ORDER BY turn_index",
                            (doc_id,)).fetchall()
    return [Turn.model_validate_json(row["turn_json"]) for row in rows]


def origins_of(chinvex_home: Path, name: str, doc_id: str) -> set[str]:
    """The origin ledger: every source that currently produces the document."""
    with db(chinvex_home, name) as conn:
        return {row["origin_uri"] for row in conn.execute("SELECT origin_uri FROM doc_origins WHERE doc_id=?",
                                                          (doc_id,))}


def run_summary(chinvex_home: Path, name: str, index: int) -> dict:
    """The summary of the index-th ingest run (0 = first) as stored in ingest_runs.stats_json —
    the same document `--json` prints, minus decisions — for runs printed in human form."""
    with db(chinvex_home, name) as conn:
        rows = conn.execute("SELECT stats_json FROM ingest_runs ORDER BY started_at, rowid").fetchall()
    return json.loads(rows[index]["stats_json"])


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
        "cx_appserver", "codex_session", "cx_appserver_v2+cx_sessions_jsonl_v2", "codex_session_roots")
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
            "stored": stored, "listed": listed_ids(codex_bin, home), "codex_bin": codex_bin}


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


# -- the acceptance with every listed thread read through the server ----------------------------

LISTED_LEGACY = (*LOCALPUSH_IDS, CODEMIE_ID, LEGACY_ID, TRUNCATED_ID, ZST_ID)
PATH_LINE = re.compile(r"^  (app-server|fallback|rollout): (\S+)(?: \((.*)\))?$")


def path_lines(stdout: str) -> dict[str, tuple[str, str]]:
    """The per-thread lines of `chinvex ingest --verbose` (human form): uri -> (path, reason)."""
    out: dict[str, tuple[str, str]] = {}
    for line in stdout.splitlines():
        match = PATH_LINE.match(line)
        if match:
            assert match.group(2) not in out, f"{match.group(2)} printed twice"
            out[match.group(2)] = (match.group(1), match.group(3) or "")
    return out


@pytest.fixture(scope="module")
def appserver_run(codex_bin, tmp_path_factory):
    """The full home, plus a paginated thread the real server wrote itself (so, unlike the
    copied paginated fixture, it has a projection), ingested with
    `codex_appserver.legacy_read = "appserver"`: every listed thread's content is read through
    the server (thread/read for legacy threads, thread/turns/list for paginated ones). The
    first run is printed for a human with --verbose (its summary is read back from
    ingest_runs), the second with --json."""
    base = tmp_path_factory.mktemp("cxserver")
    home = seed_home(base / ".codex", with_codemie=True)
    live = record_paginated_thread(codex_bin, home)
    chinvex_home = base / "chinvex"
    create_context(chinvex_home, "Srv", home, {"legacy_read": "appserver", "timeout_s": 60})
    env = {"CHINVEX_HOME": str(chinvex_home), "CHINVEX_CODEX_BIN": codex_bin}
    human = run_cli("ingest", "--context", "Srv", "--verbose", env=env)
    assert_no_traceback(human)
    stored = stored_threads(chinvex_home, "Srv")
    turns = {doc_id: stored_turns(chinvex_home, "Srv", doc_id) for doc_id in stored}
    second = ingest(chinvex_home, "Srv", env=env)
    assert servers_left(home) == []
    return {"home": home, "chinvex_home": chinvex_home, "live": live, "human": human,
            "first": run_summary(chinvex_home, "Srv", 0), "second": second, "stored": stored,
            "turns": turns, "listed": listed_ids(codex_bin, home)}


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


# -- one thread through both paths ---------------------------------------------------------------

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


# -- without the binary -------------------------------------------------------------------------

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


# -- switching readers --------------------------------------------------------------------------

def reader_env(chinvex_home: Path, path_dirs: list[Path], codex_bin: str = "") -> dict[str, str]:
    """An environment whose PATH is `path_dirs` plus the system folders (never a folder with a
    `codex` in it unless given), with CHINVEX_CODEX_BIN as given ("" = unset)."""
    system = [d for d in os.environ.get("PATH", "").split(os.pathsep)
              if d and not (Path(d) / "codex").exists()]
    return {"CHINVEX_HOME": str(chinvex_home), "CHINVEX_CODEX_BIN": codex_bin,
            "PATH": os.pathsep.join([*map(str, path_dirs), *system])}


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
    stored = stored_threads(chinvex_home, "Sw")
    assert {entry["source"] for entry in stored.values()} == {"cx_sessions_jsonl"}
    before = fingerprints(chinvex_home, "Sw")

    def unchanged(env: dict[str, str], reader: str, why: str, mode: str) -> dict:
        result = ingest(chinvex_home, "Sw", env=env)
        assert result.code == 0, result
        s = result.json
        assert (s["sources"]["indexed"], s["sources"]["removed"], s["sources"]["refreshed"]) == (0, 0, 0), s["decisions"]
        assert s["sources"]["unchanged"] == s["sources"]["scanned"] == len(files)
        assert s["chunks"]["embedded"] == s["chunks"]["written"] == s["chunks"]["deleted"] == 0
        assert s["documents"] == {"written": 0, "removed": 0}
        assert s["errors"] == [] and s["warnings"] == []
        assert s["readers"] == {home_key: {"reader": reader, "why": why, "mode": mode, "codex_home": home_key}}
        assert stored_threads(chinvex_home, "Sw") == stored
        assert set(fingerprints(chinvex_home, "Sw")) == set(before)
        return s

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
    with open(legacy_file, "ab") as handle:
        handle.write(json.dumps({"timestamp": "2026-11-22T03:00:00.000Z", "type": "event_msg", "payload": {
            "type": "user_message", "message": "one more question after the switch"}}).encode() + b"\n")
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
    with open(legacy_file, "ab") as handle:
        handle.write(json.dumps({"timestamp": "2026-11-22T03:05:00.000Z", "type": "event_msg", "payload": {
            "type": "user_message", "message": "and one after switching back"}}).encode() + b"\n")
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
