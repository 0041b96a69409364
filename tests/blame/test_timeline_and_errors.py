"""`chinvex timeline` on real sessions and a repository, and the one-line errors of `blame` and
`timeline` for what a user can get wrong."""

from __future__ import annotations

import shutil
from datetime import datetime, timedelta

import pytest
from helpers import FIXTURES, assert_no_traceback, git, init_repo, run_cli_in_process

SESSIONS = FIXTURES / "codex-rollout/generated-0.169.0/apply-patch/sessions"
FIRST, SECOND = "01a2240a-5ee5-7170-a256-a40cba21d208", "01a2240a-7629-7143-95ba-74722ae2ab78"
T0 = datetime.fromisoformat("2026-11-28T21:23:09+00:00")


@pytest.fixture
def indexed(tmp_path, chinvex_home):
    repo = tmp_path / "repo"
    init_repo(repo)
    (repo / "README.md").write_text("retry demo\n", encoding="utf-8")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "Start the repository", when=T0 - timedelta(hours=1))
    (repo / "net").mkdir()
    (repo / "net/retry.py").write_text("import time\n", encoding="utf-8")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "Add retry helper", when=T0 + timedelta(seconds=3))
    (repo / "net/retry.py").write_text("import time\nimport random\n", encoding="utf-8")
    git(repo, "commit", "-qam", "Jitter", when=T0 + timedelta(minutes=2))
    env = {"CHINVEX_HOME": str(chinvex_home)}
    # a copy under another name: the fixture's own folder would be a CODEX_HOME, which Codex's
    # app-server (when installed) writes its state databases into
    rollouts = shutil.copytree(SESSIONS, tmp_path / "rollouts")
    assert run_cli_in_process("context", "create", "tl", "--sessions", f"codex={rollouts}", "--repo", str(repo),
                              env=env).code == 0
    assert run_cli_in_process("ingest", "--context", "tl", env=env).code == 0
    return repo, env


def test_timeline_merges_sessions_and_commits_in_time_order(indexed):
    repo, env = indexed
    done = run_cli_in_process("timeline", "--context", "tl", "--since", "2026-11-28", "--until", "2026-11-29",
                              "--json", env=env)
    assert done.code == 0, done.stderr
    report = done.json
    assert [d["date"] for d in report["days"]] == ["2026-11-28"]
    events = report["days"][0]["events"]
    kinds = [(e["kind"], e.get("session_id") or e["subject"]) for e in events]
    assert kinds == [("commit", "Start the repository"), ("session", FIRST), ("commit", "Add retry helper"),
                     ("session", SECOND), ("commit", "Jitter")]
    session = events[1]
    assert session["agent"] == "codex" and session["files_edited"] == ["/home/dev/run3/work/net/retry.py"]
    assert session["first_request"].startswith("Add a helper that retries flaky network calls")
    assert session["project"] == "/home/dev/run3/work" and session["duration_min"] == 0
    assert events[2]["files"] == ["net/retry.py"] and events[2]["repository"] == str(repo.resolve())
    times = [e["time"] for e in events]
    assert times == sorted(times)
    human = run_cli_in_process("timeline", "--context", "tl", "--since", "2026-11-28", "--until", "2026-11-29", env=env)
    assert "2026-11-28" in human.stdout and "commit" in human.stdout and "edited: /home/dev/run3/work/net/retry.py" in human.stdout


def test_timeline_filters_by_agent_and_project(indexed, tmp_path):
    _, env = indexed
    only = run_cli_in_process("timeline", "--context", "tl", "--since", "2026-11-01", "--agent", "codex", "--json",
                              env=env).json
    assert only["commits"] == 0 and only["sessions"] == 2
    none = run_cli_in_process("timeline", "--context", "tl", "--since", "2026-11-01", "--agent", "gemini", "--json",
                              env=env).json
    assert none["sessions"] == 0
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    nothing = run_cli_in_process("timeline", "--context", "tl", "--since", "2026-11-01", "--project", str(elsewhere),
                                 "--json", env=env).json
    assert nothing["sessions"] == 0 and nothing["commits"] == 0 and nothing["days"] == []
    past = run_cli_in_process("timeline", "--context", "tl", "--since", "2026-01-01", "--until", "2026-02-01", env=env)
    assert past.code == 0 and "No session or commit in this period." in past.stdout


@pytest.mark.parametrize("args, fragment", [
    (["--since", "last tuesday"], "--since 'last tuesday': expected a duration ago"),
    (["--since", "2026-11-28", "--until", "2026-11-01"], "is not after --since"),
    (["--project", "/no/such/folder"], "--project /no/such/folder: no such folder"),
])
def test_timeline_usage_errors(indexed, args, fragment):
    _, env = indexed
    done = run_cli_in_process("timeline", "--context", "tl", *args, env=env)
    assert done.code == 2 and fragment in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert_no_traceback(done)


@pytest.mark.parametrize("spec, code, fragment", [
    ("{repo}/net/nothing.py", 1, "no such file"),
    ("{repo}/net/retry.py:abc", 2, "the line range 'abc' is not a number"),
    ("{repo}/net/retry.py:2-x", 2, "the line range '2-x' is not a number"),
    ("{repo}/net/retry.py:9", 2, "has 2 lines; line 9 is past its end"),
    ("{repo}/net/retry.py:0", 2, "1 <= FIRST <= LAST"),
    ("{repo}/net/retry.py:2-1", 2, "1 <= FIRST <= LAST"),
    ("{repo}/net", 2, "is a folder"),
    ("", 2, "PATH is empty"),
])
def test_blame_errors_are_one_line(indexed, spec, code, fragment):
    repo, env = indexed
    done = run_cli_in_process("blame", spec.format(repo=repo), "--context", "tl", env=env)
    assert done.code == code, done.stdout + done.stderr
    assert fragment in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert_no_traceback(done)


def test_blame_finds_the_context_from_the_path(indexed, tmp_path):
    repo, env = indexed
    done = run_cli_in_process("blame", f"{repo / 'net/retry.py'}:1", "--json", env=env, cwd=tmp_path)
    assert done.code == 0, done.stderr
    assert done.json["context"] == "tl"


def test_blame_of_a_binary_file_says_so(indexed):
    repo, env = indexed
    (repo / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\0\0\0")
    done = run_cli_in_process("blame", str(repo / "logo.png"), "--context", "tl", env=env)
    assert done.code == 2 and "a binary file" in done.stderr


def test_blame_of_a_missing_file_outside_any_context_says_the_file_is_missing(indexed, tmp_path):
    """Without --context the context is found from the file; a missing file must be reported as
    such, not as "No context given"."""
    _, env = indexed
    done = run_cli_in_process("blame", str(tmp_path / "nope.py"), env=env, cwd=tmp_path)
    assert done.code == 1 and "nope.py: no such file" in done.stderr, done.stderr
    assert "context" not in done.stderr.lower() and len(done.stderr.strip().splitlines()) == 1


def test_blame_header_says_line_for_one_line_and_lines_for_a_range(indexed):
    repo, env = indexed
    one = run_cli_in_process("blame", f"{repo / 'net/retry.py'}:1", "--context", "tl", env=env)
    assert one.code == 0 and one.stdout.splitlines()[0].split("  ")[1] == "line 1", one.stdout
    two = run_cli_in_process("blame", f"{repo / 'net/retry.py'}:1-2", "--context", "tl", env=env)
    assert two.code == 0 and two.stdout.splitlines()[0].split("  ")[1] == "lines 1-2", two.stdout


def test_timeline_times_say_utc_and_titles_line_up_after_a_long_agent_name():
    from chinvex.blame.render import timeline_text

    def session(agent: str, time: str, title: str) -> dict:
        return {"kind": "session", "agent": agent, "time": time, "title": title, "session_id": "s",
                "project": "/p", "duration_min": 3}

    report = {"days": [{"date": "2026-11-24", "events": [
        session("claude_code", "2026-11-24T00:00:00Z", "First"),
        session("codex", "2026-11-24T14:03:10+00:00", "Second"),
        {"kind": "commit", "time": "2026-11-24T15:00:00Z", "sha": "0123456789ab", "author": "a",
         "subject": "Third", "files": ["x.py"]},
    ]}]}
    rows = timeline_text(report).splitlines()
    assert rows[1].startswith("  00:00 UTC  claude_code  First"), rows
    assert rows[3].startswith("  14:03 UTC  codex"), rows
    assert rows[5].startswith("  15:00 UTC  commit") and rows[5].endswith("(1 file)"), rows
    assert rows[1].index("First") == rows[3].index("Second") == rows[5].index("01234567")
    assert rows[2].index("in /p") == rows[1].index("First")
