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
import zstandard
from chinvex.ids import thread_doc_id
from chinvex.models import ConversationDoc, Turn
from chinvex.models.sources import AdapterOptions, ParseReport, SourceCandidate
from chinvex_adapters.cx_appserver.adapter import CodexAppServerAdapter
from chinvex_adapters.cx_appserver.source import AppServerSource, client_factory_from
from chinvex_adapters.cx_sessions_jsonl import CodexRolloutAdapter
from chinvex_adapters.cx_sessions_jsonl.reader import open_stream
from helpers import (
    CODEX_INSTALL_SCRIPT,
    CODEX_TRIPLE,
    CODEX_VERSION,
    FIXTURES,
    assert_no_traceback,
    run_cli,
    run_cli_in_process,
)
from live_support import squash_ws, turn_kind

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


def reader_env(chinvex_home: Path, path_dirs: list[Path], codex_bin: str = "") -> dict[str, str]:
    """An environment whose PATH is `path_dirs` plus the system folders (never a folder with a
    `codex` in it unless given), with CHINVEX_CODEX_BIN as given ("" = unset)."""
    system = [d for d in os.environ.get("PATH", "").split(os.pathsep)
              if d and not (Path(d) / "codex").exists()]
    return {"CHINVEX_HOME": str(chinvex_home), "CHINVEX_CODEX_BIN": codex_bin,
            "PATH": os.pathsep.join([*map(str, path_dirs), *system])}


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
