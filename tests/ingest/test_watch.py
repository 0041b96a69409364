"""`chinvex watch` against a real temporary repository, a growing Codex rollout and a growing
Claude Code transcript: each edit, new file, deletion and appended session turn is searchable (or
gone) within 5 s, an appended Codex turn is read from where the last run stopped, and Ctrl-C
leaves an index `doctor` finds clean."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

from chinvex.ingest.watch import IGNORED_DIRS, Target, may_be_source, owners
from helpers import CHINVEX_BIN, FIXTURES, assert_no_traceback, run_cli, run_cli_in_process

INCR = FIXTURES / "codex-rollout" / "public" / "codemie-code" / "incremental"
ROLLOUT = "rollout-2026-05-12T10-00-00-0196c0de-0000-7000-8000-000000000001.jsonl"
LIMIT_S = 5.0


def test_owners_maps_paths_to_contexts_and_ignores_what_is_never_a_source(tmp_path: Path):
    from types import SimpleNamespace

    a, b, codex = tmp_path / "a", tmp_path / "b", tmp_path / "codex"
    targets = [Target(SimpleNamespace(name="A"), ((a, "repos"),), (a / ".index",)),
               Target(SimpleNamespace(name="B"), ((b, "note_roots"), (a / "shared", "note_roots"),
                                                  (codex, "codex_session_roots")), ())]
    rollout = codex / "sessions" / "2026" / "05" / "12" / ROLLOUT
    found = owners([str(a / "x.py"), str(a / "shared" / "n.md"), str(b / "c.md"), str(a / ".index" / "h.db"),
                    str(a / ".git" / "HEAD"), str(tmp_path / "elsewhere.md"), str(rollout),
                    str(codex / "logs_2.sqlite-wal"), str(codex / "goals_1.sqlite"), str(codex / "config.toml"),
                    str(b / "notes.db-journal")], targets)
    assert found == {"A": [str(a / "x.py"), str(a / "shared" / "n.md")],
                     "B": [str(a / "shared" / "n.md"), str(b / "c.md"), str(rollout)]}
    assert ".git" in IGNORED_DIRS and "node_modules" in IGNORED_DIRS
    assert may_be_source(Path("/s/proj/abc.jsonl"), "claude_session_roots")
    assert not may_be_source(Path("/s/proj/todo.json"), "claude_session_roots")


class _Watch:
    """`chinvex watch --json` as a subprocess; its event lines are collected by a thread."""

    def __init__(self, env: dict[str, str], *args: str):
        self.proc = subprocess.Popen([str(CHINVEX_BIN), "watch", *args, "--json", "--debounce-ms", "200"],
                                     env={**os.environ, **env}, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True)
        self.events: list[dict] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.events.append(json.loads(line))

    def wait_for(self, predicate, timeout: float) -> dict:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for event in list(self.events):
                if predicate(event):
                    return event
            assert self.proc.poll() is None, self.proc.stderr.read()
            time.sleep(0.05)
        raise AssertionError(f"no such event within {timeout} s; events: {self.events}")


def _found(env: dict[str, str], term: str) -> list[dict]:
    result = run_cli("search", term, "--context", "W", "--mode", "fts", "--json", env=env)
    assert result.code == 0, result
    return result.json["results"]


def _searchable_within(env: dict[str, str], term: str, present: bool, since: float) -> float:
    while True:
        hits = [r for r in _found(env, term) if term in r["text"]]
        elapsed = time.monotonic() - since
        if bool(hits) == present:
            return elapsed
        assert elapsed < LIMIT_S, f"{term!r} still {'missing' if present else 'found'} after {elapsed:.1f} s"
        time.sleep(0.1)


@pytest.fixture
def watched(tmp_path: Path):
    repo, sessions = tmp_path / "repo", tmp_path / "codex" / "sessions" / "2026" / "05" / "12"
    (repo / "pkg").mkdir(parents=True)
    sessions.mkdir(parents=True)
    (repo / "pkg" / "core.py").write_text('def start():\n    """Start the engine."""\n    return 1\n')
    (repo / "old.md").write_text("# Old\n\nThe pelicanmarker note will be deleted.\n")
    (sessions / ROLLOUT).write_bytes((INCR / "turn-1.jsonl").read_bytes())
    claude = tmp_path / "claude" / "projects" / "-tmp-w"
    claude.mkdir(parents=True)
    transcript = claude / f"{CLAUDE_SESSION}.jsonl"
    transcript.write_text(_claude_line("user", "Where is the engine started?", 1)
                          + _claude_line("assistant", "In pkg/core.py, function start.", 2))
    env = {"CHINVEX_HOME": str(tmp_path / "home"), "ANONYMIZED_TELEMETRY": "False"}
    created = run_cli_in_process("context", "create", "W", "--repo", str(repo), "--codex-sessions",
                                 str(tmp_path / "codex"), "--claude-sessions", str(tmp_path / "claude"), env=env)
    assert created.code == 0, created
    return {"env": env, "repo": repo, "rollout": sessions / ROLLOUT, "transcript": transcript}


CLAUDE_SESSION = "5e5e5e5e-1111-4222-8333-444444444444"


def _claude_line(role: str, text: str, n: int) -> str:
    """One Claude Code transcript record (tests/fixtures/samples/claude-code has real ones)."""
    content = text if role == "user" else [{"type": "text", "text": text}]
    return json.dumps({"parentUuid": f"u{n - 1}" if n > 1 else None, "isSidechain": False, "userType": "external",
                       "cwd": "/tmp/w", "sessionId": CLAUDE_SESSION, "version": "2.1.207", "type": role,
                       "message": {"role": role, "content": content}, "uuid": f"u{n}",
                       "timestamp": f"2026-05-12T10:00:{n:02d}.000Z"}) + "\n"


def test_watch_keeps_the_index_current_and_stops_cleanly(watched):
    env, repo, rollout = watched["env"], watched["repo"], watched["rollout"]
    watch = _Watch(env, "--context", "W")
    try:
        watch.wait_for(lambda e: e["event"] == "ingest" and e["trigger"] == "start", 120)
        assert _found(env, "pelicanmarker")
        timings = {}

        started = time.monotonic()
        (repo / "pkg" / "core.py").write_text('def start():\n    """Start the engine: ospreymarker."""\n    return 2\n')
        timings["edit"] = _searchable_within(env, "ospreymarker", True, started)

        started = time.monotonic()
        (repo / "pkg" / "new.py").write_text('def stop():\n    """Stop the engine: kestrelmarker."""\n')
        timings["add"] = _searchable_within(env, "kestrelmarker", True, started)

        started = time.monotonic()
        (repo / "old.md").unlink()
        timings["delete"] = _searchable_within(env, "pelicanmarker", False, started)

        first, second = (INCR / "turn-1.jsonl").read_bytes(), (INCR / "turn-2.jsonl").read_bytes()
        assert second.startswith(first)
        appended = second[len(first):].replace(b"What languages can you work with?",
                                               b"Which languages? puffinmarker")
        started = time.monotonic()
        with open(rollout, "ab") as handle:
            handle.write(appended)
        timings["append"] = _searchable_within(env, "puffinmarker", True, started)

        started = time.monotonic()
        with open(watched["transcript"], "a", encoding="utf-8") as handle:  # a live Claude Code session
            handle.write(_claude_line("user", "And where does it stop? ternmarker", 3)
                         + _claude_line("assistant", "In pkg/new.py, function stop.", 4))
        timings["claude append"] = _searchable_within(env, "ternmarker", True, started)
        print("write -> searchable:", {k: round(v, 2) for k, v in timings.items()})

        appended_run = watch.wait_for(lambda e: e["event"] == "ingest" and any(
            p.endswith(ROLLOUT) for p in e["sample"]) and e["sources"]["indexed"], 10)
        claude_run = watch.wait_for(lambda e: e["event"] == "ingest" and any(
            p.endswith(CLAUDE_SESSION + ".jsonl") for p in e["sample"]) and e["sources"]["indexed"], 10)
        # The transcript is read again whole (no resume point for Claude Code yet); only its new
        # chunk is embedded.
        assert claude_run["chunks"]["embedded"] <= 2
        assert appended_run["status"] == "completed"
        assert appended_run["sessions_resumed"] == 1  # only the appended turns were parsed
        # Quiet sources, quiet watcher: an ingest's own writes (the index, Codex's databases in
        # CODEX_HOME when the app-server reads threads) never trigger the next one.
        time.sleep(1.5)
        settled = len(watch.events)
        time.sleep(2.0)
        assert len(watch.events) == settled, watch.events[settled:]
    finally:
        watch.proc.send_signal(signal.SIGINT)
        try:
            code = watch.proc.wait(timeout=60)
        finally:
            if watch.proc.poll() is None:
                watch.proc.kill()
    assert code == 0, watch.proc.stderr.read()
    watch.reader.join(timeout=5)
    assert watch.events[-1]["event"] == "stopped"
    assert all(e["event"] != "error" for e in watch.events), watch.events

    doctor = run_cli("doctor", "--context", "W", "--json", env=env)
    assert_no_traceback(doctor)
    assert doctor.code == 0, doctor
    assert all(c["status"] == "ok" for c in doctor.json["checks"]), doctor.json["checks"]


def test_watch_usage_errors(watched, tmp_path: Path):
    env = watched["env"]
    both = run_cli("watch", "--all", "--context", "W", env=env)
    assert both.code == 2 and "--all" in both.stderr
    bad = run_cli("watch", "--context", "W", "--debounce-ms", "5", env=env)
    assert bad.code == 2 and "--debounce-ms" in bad.stderr
    unknown = run_cli("watch", "--context", "Nope", env=env)
    assert_no_traceback(unknown)
    assert unknown.code != 0 and "Nope" in unknown.stderr
    gone = tmp_path / "gone"
    gone.mkdir()
    assert run_cli_in_process("context", "create", "Gone", "--repo", str(gone), env=env).code == 0
    gone.rmdir()
    nothing = run_cli("watch", "--context", "Gone", env=env)
    assert_no_traceback(nothing)
    assert nothing.code == 1 and "nothing to watch" in nothing.stderr and str(gone) in nothing.stderr
