"""`chinvex blame` on git repositories whose history is made by replaying real session files'
edits (tests/blame/replay.py): one repository per agent that edits files, one context holding
all those sessions. For every line git attributes to a session's commit, blame must name that
session and that commit; for a line a person committed, no session. Then the harder cases: a
later session rewriting part of a function (Codex), a file moved with `git mv`, an edit not
committed yet, and a folder without git."""

from __future__ import annotations

import shutil
from datetime import timedelta
from pathlib import Path

import pytest
from helpers import FIXTURES, run_cli_in_process
from replay import (
    ADAPTER,
    CODEX_JITTER,
    ONE_PER_AGENT,
    PERSON,
    Replayer,
    git,
    oracle,
    session_edits,
)

pytestmark = pytest.mark.slow


def _blame(home: Path, spec: str, *extra: str) -> dict:
    result = run_cli_in_process("blame", spec, "--context", "agents", "--json", *extra,
                                env={"CHINVEX_HOME": str(home)})
    assert result.code == 0, result.stderr + result.stdout
    return result.json


def _norm(text: str) -> str:
    return " ".join(text.split())


def _store(kind: str, rel: str, base: Path) -> Path:
    """Where the context reads a kind's session: the fixture itself, or for Aider a copy under
    the name Aider gives its history inside a project."""
    if kind == "kimi":  # Kimi's store is a folder of session folders
        return FIXTURES / "kimi/agent-sessions/kimi-code/sessions"
    if kind != "aider":
        return FIXTURES / rel
    project = base / "aider-project"
    project.mkdir(exist_ok=True)
    shutil.copy(FIXTURES / rel, project / ".aider.chat.history.md")
    return project / ".aider.chat.history.md"


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """Repositories replayed from each agent's session, and one ingested context of them all."""
    base = tmp_path_factory.mktemp("blame_world")
    home = base / "home"
    replays, threads = {}, {}
    stores = {kind: _store(kind, rel, base) for kind, rel in ONE_PER_AGENT.items()}
    for kind, rel in ONE_PER_AGENT.items():
        edits, ids = session_edits(ADAPTER.get(kind, kind), stores[kind] if kind == "aider" else FIXTURES / rel)
        assert edits, f"{kind}: the fixture records no edit"
        replayer = Replayer(base / "repos" / kind)
        if kind == "codex":
            edits += session_edits("cx_sessions_jsonl", FIXTURES / CODEX_JITTER)[0]
        for edit in edits:
            replayer.apply(edit)
        for rel_file in sorted(replayer.r.files):
            if (replayer.r.repo / rel_file).exists():
                replayer.person_line(rel_file, f"reviewed_by_person = '{kind}'  # not an agent's line",
                                     edits[-1].ts + timedelta(hours=1))
        replays[kind], threads[kind] = replayer.r, ids
    entries = [arg for kind, store in stores.items() for arg in ("--sessions", f"{kind}={store}")]
    entries += ["--sessions", f"codex={FIXTURES / CODEX_JITTER}"]
    env = {"CHINVEX_HOME": str(home)}
    assert run_cli_in_process("context", "create", "agents", *entries, env=env).code == 0
    done = run_cli_in_process("ingest", "--context", "agents", "--json", env=env)
    assert done.code == 0, done.stdout + done.stderr
    return home, replays, threads


@pytest.mark.parametrize("kind", sorted(ONE_PER_AGENT))
def test_blame_names_the_session_and_commit_behind_each_line(world, kind):
    home, replays, threads = world
    replay = replays[kind]
    checked_session = checked_person = 0
    for rel in sorted(replay.files):
        if not (replay.repo / rel).exists():
            continue
        truth = oracle(replay.repo, rel)
        report = _blame(home, str(replay.repo / rel))
        by_line = {entry["line"]: entry for entry in report["lines"]}
        ids = {s["doc_id"]: s["session_id"] for s in report["sessions"]}
        assert report["git"] is True and report["repository"] == str(replay.repo.resolve())
        for number, sha, text in truth:
            entry = by_line[number]
            assert entry["commit"]["sha"] == sha, (kind, rel, number)
            norm = _norm(text)
            if sum(ch.isalnum() for ch in norm) < 3:
                continue  # `}`, blank: explained only through neighbours
            named = [ids[d] for d in entry["sessions"]]
            actor = replay.actors[sha]
            if actor == PERSON:
                if norm in replay.added.get(rel, set()):
                    continue  # the person's text is also a line some session added: ambiguous
                assert named == [], (kind, rel, number, text)
                checked_person += 1
            elif norm in replay.added.get(rel, set()):
                assert named and named[0] == actor, (kind, rel, number, text, named)
                checked_session += 1
    assert checked_session >= 1 and checked_person >= 1, (checked_session, checked_person)


def test_a_later_session_rewriting_part_of_a_function_takes_those_lines(world):
    """Codex's second session replaced one line of `with_backoff` by three: those lines are its,
    the rest of the function stays the first session's."""
    home, replays, _ = world
    path = replays["codex"].repo / "net/retry.py"
    report = _blame(home, str(path))
    ids = {s["doc_id"]: s["session_id"] for s in report["sessions"]}
    owner = {_norm(e["text"]): ids[e["sessions"][0]] for e in report["lines"] if e["sessions"]}
    first, second = "01a2240a-5ee5-7170-a256-a40cba21d208", "01a2240a-7629-7143-95ba-74722ae2ab78"
    assert owner["def with_backoff(call, attempts=4, base_delay=0.25):"] == first
    assert owner["for attempt in range(attempts):"] == first
    assert owner["delay = base_delay * 2 ** attempt"] == second
    assert owner["time.sleep(delay + random.uniform(0, delay / 2))"] == second
    assert "time.sleep(base_delay * 2 ** attempt)" not in owner  # replaced: no longer in the file
    top = report["sessions"][0]
    assert top["session_id"] == first and top["request"]["text"].startswith("Add a helper that retries")
    assert top["request"]["chunk_id"] and top["chunk_ids"]


def test_after_git_mv_the_sessions_still_explain_the_lines(world, tmp_path):
    home, replays, threads = world
    source = replays["claude_code"].repo
    repo = tmp_path / "moved"
    shutil.copytree(source, repo)
    git(repo, "mv", "hello.py", "greeting.py")
    git(repo, "commit", "-q", "-m", "rename hello.py")
    report = _blame(home, str(repo / "greeting.py"))
    named = {s["session_id"] for s in report["sessions"]}
    assert named == set(threads["claude_code"])
    explained = [e for e in report["lines"] if e["sessions"]]
    assert explained and all(e["commit"] is not None for e in explained)


def test_an_uncommitted_edit_is_explained_and_says_so(world, tmp_path):
    home, _, threads = world
    edits, _ = session_edits("claude_code", FIXTURES / ONE_PER_AGENT["claude_code"])
    replayer = Replayer(tmp_path / "wip")
    for edit in edits[:-1]:
        replayer.apply(edit)
    replayer.apply(edits[-1], commit=False)  # the last Edit, not committed yet
    report = _blame(home, str(replayer.r.repo / edits[-1].rel))
    pending = [e for e in report["lines"] if e["uncommitted"]]
    assert pending and all(e["commit"] is None for e in pending)
    assert any(e["sessions"] for e in pending)
    assert {s["session_id"] for s in report["sessions"]} == set(threads["claude_code"])


def test_without_git_the_edits_alone_explain_the_lines(world, tmp_path):
    home, replays, _ = world
    plain = tmp_path / "plain" / "net"
    plain.mkdir(parents=True)
    shutil.copy(replays["codex"].repo / "net/retry.py", plain / "retry.py")
    report = _blame(home, f"{plain / 'retry.py'}:7-9")
    assert report["git"] is False and report["repository"] is None
    assert [e["line"] for e in report["lines"]] == [7, 8, 9]
    assert all(e["commit"] is None and not e["uncommitted"] for e in report["lines"])
    assert {s["session_id"] for s in report["sessions"]} == {"01a2240a-5ee5-7170-a256-a40cba21d208"}


def test_human_output_groups_lines_and_names_unexplained_ones(world):
    home, replays, _ = world
    path = replays["codex"].repo / "net/retry.py"
    result = run_cli_in_process("blame", str(path), "--context", "agents", env={"CHINVEX_HOME": str(home)})
    assert result.code == 0, result.stderr
    out = result.stdout
    assert "01a2240a-5ee5" in out and "01a2240a-7629" in out
    assert "asked (turn 1): Add a helper that retries flaky network calls" in out
    assert "No session explains line" in out  # the person's review line
    rows = [line for line in out.splitlines() if "<- [1]" in line]
    assert any("-" in line.split()[0] for line in rows)  # consecutive lines grouped


def test_one_repository_a_codex_apply_patch_line_and_a_claude_code_edit_line(world, tmp_path):
    """The issue's case: `blame FILE:LINE --json` names the Codex session for a line its
    `apply_patch` added and the Claude Code session for a line its `Edit` added, in one repository."""
    home, replays, threads = world
    repo = tmp_path / "both"
    codex, claude = replays["codex"].repo, replays["claude_code"].repo
    shutil.copytree(codex, repo)
    shutil.copy(claude / "hello.py", repo / "hello.py")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "bring hello.py over")
    edits, _ = session_edits("claude_code", FIXTURES / ONE_PER_AGENT["claude_code"])
    edit = next(e for e in reversed(edits) if e.op == "edit" and e.rel == "hello.py")
    from chinvex.blame.lines import added_lines

    wanted = next(line for line in added_lines(edit.old, edit.new) if sum(c.isalnum() for c in line) >= 3)
    hello = (repo / "hello.py").read_text(encoding="utf-8").splitlines()
    claude_line = next(n for n, text in enumerate(hello, start=1) if _norm(text) == wanted)
    retry = (repo / "net/retry.py").read_text(encoding="utf-8").splitlines()
    codex_line = next(n for n, text in enumerate(retry, start=1) if "def with_backoff" in text)
    for rel, line, expected in (("net/retry.py", codex_line, "01a2240a-5ee5-7170-a256-a40cba21d208"),
                                ("hello.py", claude_line, threads["claude_code"][0])):
        report = _blame(home, f"{repo / rel}:{line}")
        assert [e["line"] for e in report["lines"]] == [line]
        assert [s["session_id"] for s in report["sessions"]] == [expected], (rel, line)
        assert report["sessions"][0]["agent"] == ("codex" if rel.endswith("retry.py") else "claude_code")
