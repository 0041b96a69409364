"""Hits that show why they matched (issue 41): the CLI prints the lines of a hit that hold a query
word, numbered by file line or labelled with their turn and role; conversation hits are labelled
by agent, title and date; turns are numbered from 1 and times read `YYYY-MM-DD HH:MM UTC` in
`search` and `get` alike. The functions are checked on their own, then the real CLI on a real
ingest of a repository and a real Claude Code transcript."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from chinvex.cli.show import conversation_text, hit_label, matched_lines
from chinvex.models.responses import SearchResult
from chinvex.retrieval.matching import QueryMatcher
from helpers import REPO_ROOT, assert_no_traceback, run_cli, run_cli_in_process

TRANSCRIPT = (REPO_ROOT / "tests/fixtures/samples/claude-code/codemie-code/projects/-tmp-private/"
              "4c2ddfdc-b619-4525-8d03-1950fb1b0257.jsonl")
ISO_STAMP = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}")
READABLE = r"\d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC"


def test_matched_lines_number_file_lines_and_follow_stems():
    text = "\n".join(["intro"] * 10 + ["the retries pile up", "nothing", "Retry budget exceeded"])
    with QueryMatcher(["retry"]) as matcher:
        lines = matched_lines(text, matcher.matches, first_line=41)
    assert lines == ["51 │ the retries pile up", "53 │ Retry budget exceeded"]


def test_matched_lines_prefer_lines_holding_more_of_the_query():
    """A heading and a line with one common query word come before the line naming the thing
    asked about; with a limit of two, the line holding two query words is shown, in file order."""
    text = ("## Context registry\n- Home holds the contexts folder\n"
            "- `CHINVEX_CONTEXTS_ROOT` moves the contexts root\n- indexes live apart")
    with QueryMatcher(["moves", "contexts", "folder"]) as matcher:
        lines = matched_lines(text, matcher.held, first_line=62, limit=2)
        assert lines == ["63 │ - Home holds the contexts folder",
                         "64 │ - `CHINVEX_CONTEXTS_ROOT` moves the contexts root"]
        assert matched_lines(text, matcher.held, first_line=62, limit=1) == [
            "63 │ - Home holds the contexts folder"]


def test_matched_lines_label_conversation_lines_with_turn_and_role():
    text = ("[Turn 4 of 9] user:\nwhy does the deploy fail?\n\n"
            "[Turn 5 of 9, part 1/2] tool (Bash):\nError: deploy key expired\n")
    with QueryMatcher(["deploy"]) as matcher:
        lines = matched_lines(text, matcher.matches, first_line=None)
    assert lines == ["turn 4 · user │ why does the deploy fail?", "turn 5 · tool (Bash) │ Error: deploy key expired"]


def test_matched_lines_fall_back_to_the_first_lines_and_respect_the_limit():
    """The first lines of a vector-only hit are placed like matched ones (turn and role, or file
    line numbers), so hits in one result list read alike."""
    text = "[Turn 1 of 2] user:\nalpha\nbeta\ngamma\ndelta"
    with QueryMatcher(["zebra"]) as matcher:
        assert matched_lines(text, matcher.matches, first_line=None) == [
            "turn 1 · user │ alpha", "turn 1 · user │ beta", "turn 1 · user │ gamma"]
        assert matched_lines("def f():\n\n    return 1", matcher.matches, first_line=7) == [
            "7 │ def f():", "9 │ return 1"]
    with QueryMatcher(["a"]) as matcher:
        assert len(matched_lines("a\na\na\na\na", matcher.matches, first_line=1, limit=2)) == 2


def test_a_long_line_is_cut_with_an_ellipsis():
    with QueryMatcher(["deploy"]) as matcher:
        [line] = matched_lines("deploy " + "x" * 300, matcher.matches, first_line=1)
    assert line.endswith("…") and len(line) == len("1 │ ") + 160


def _result(**fields) -> SearchResult:
    base = {"rank": 1, "chunk_id": "c1", "doc_id": "d1", "context": "ctx", "source_type": "agent_session",
            "source_uri": "/x/s.jsonl", "title": "fix the deploy", "text": "[Turn 3 of 5] user:\nhello",
            "range": {"char_start": 0, "char_end": 5}, "scores": {"rank": 0.5},
            "metadata": {"source": "claude_code", "turn_start": 2, "turn_end": 3, "ts_start": "2026-05-20T09:15:00Z"}}
    base.update(fields)
    return SearchResult.model_validate(base)


def test_conversation_hits_are_labelled_by_agent_title_and_date():
    label = hit_label(_result(), with_context=False)
    assert label == '[agent_session] claude_code · "fix the deploy" · 2026-05-20 09:15 UTC · turn 3'
    file_hit = _result(source_type="repo", source_uri="/r/a.py", title="a.py", metadata={"path": "a.py"},
                       range={"char_start": 0, "char_end": 5, "line_start": 3, "line_end": 9})
    assert hit_label(file_hit, with_context=True) == "[ctx/repo] a.py:3-9"
    codex = _result(source_type="codex_session", metadata={**_result().metadata, "source": "cx_sessions_jsonl"})
    assert hit_label(codex, with_context=False).startswith('[codex_session] codex · "fix the deploy"')
    chat = _result(source_type="chat", metadata={**_result().metadata, "source": "chatgpt_export"})
    assert hit_label(chat, with_context=False).startswith('[chat] chatgpt · "fix the deploy"')


def test_get_numbers_turns_from_one_with_readable_times():
    found = {"title": "t", "thread_id": "th", "source_type": "agent_session", "context": "c", "source_uri": "u",
             "turn_count": 2, "turns": [{"index": 0, "role": "user", "ts": "2026-05-20T09:15:00Z", "text": "hi"},
                                        {"index": 1, "role": "assistant", "text": "hello"}]}
    text = conversation_text(found)
    assert "[Turn 1] user · 2026-05-20 09:15 UTC" in text and "[Turn 2] assistant\n" in text
    assert " · 2 turns\n" in text
    assert " · 1 turn\n" in conversation_text({**found, "turn_count": 1, "turns": found["turns"][:1]})
    assert not ISO_STAMP.search(text)


@pytest.fixture(scope="module")
def indexed(tmp_path_factory) -> dict:
    base = tmp_path_factory.mktemp("show")
    repo, sessions = base / "repo", base / "sessions" / "-tmp-private"
    repo.mkdir()
    sessions.mkdir(parents=True)
    shutil.copy(TRANSCRIPT, sessions / TRANSCRIPT.name)
    body = [f"def helper_{i}(value):\n    return value + {i}\n" for i in range(12)]
    body.insert(9, "def reconcile_ledger(entries):\n    return sorted(entries)  # zanzibar ordering\n")
    (repo / "ledger.py").write_text("\n".join(body), encoding="utf-8")
    env = {"CHINVEX_HOME": str(base / "home"), "CHINVEX_CONTEXT": "", "EDI_PROJECT_PATH": ""}
    for args in (("context", "create", "show", "--repo", str(repo), "--claude-sessions", str(base / "sessions")),
                 ("ingest", "--context", "show")):
        result = run_cli_in_process(*args, env=env)
        assert result.code == 0, result
    return {"env": env, "source": (repo / "ledger.py").read_text(encoding="utf-8").splitlines()}


def test_search_prints_the_matching_file_line_with_its_number(indexed):
    result = run_cli("search", "--context", "show", "zanzibar", "--k", "3", env=indexed["env"])
    assert_no_traceback(result)
    line = next(n for n, text in enumerate(indexed["source"], start=1) if "zanzibar" in text)
    assert re.search(rf"^\s+{line} │ .*zanzibar ordering", result.stdout, re.M), result.stdout
    fts = run_cli("search", "--context", "show", "zanzibar", "--mode", "fts", env=indexed["env"])
    assert re.search(r"^fts, 1 candidate, ", fts.stdout, re.M), fts.stdout  # not "1 candidates"


def test_search_labels_a_session_hit_and_get_reads_it_the_same_way(indexed):
    result = run_cli("search", "--context", "show", "one liner comment", "--k", "3",
                     "--source-types", "agent_session", env=indexed["env"])
    assert_no_traceback(result)
    assert re.search(rf'claude_code · "create hello.py, md and js" · {READABLE} · turns? \d', result.stdout), result.stdout
    assert re.search(r"^\s+turn \d+ · user │ update py with one liner comment", result.stdout, re.M), result.stdout
    assert "4c2ddfdc" not in result.stdout.split("chunk")[0]  # labelled by title, not by its file
    got = run_cli("get", "4c2ddfdc-b619-4525-8d03-1950fb1b0257", "--context", "show", env=indexed["env"])
    assert_no_traceback(got)
    assert re.search(rf"^\[Turn 1\] user · {READABLE}$", got.stdout, re.M), got.stdout
    assert "[Turn 0]" not in got.stdout and not ISO_STAMP.search(got.stdout)


def test_get_with_a_too_short_prefix_says_how_long_one_must_be(indexed):
    short = run_cli_in_process("get", "4c2d", "--context", "show", env=indexed["env"])
    assert short.code == 1 and "at least 8 characters" in short.stderr, short.stderr
    unknown = run_cli_in_process("get", "ffffffffffff", "--context", "show", env=indexed["env"])
    assert unknown.code == 1 and "at least" not in unknown.stderr, unknown.stderr
