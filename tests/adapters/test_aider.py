"""The aider adapter on real `.aider.chat.history.md` files (tests/fixtures/samples/aider)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from chinvex.models.sources import AdapterOptions, ParseReport, SourceCandidate, UnrecognisedSource
from chinvex_adapters.aider.adapter import AiderAdapter
from chinvex_adapters.aider.parser import split_sessions
from chinvex_adapters.repo.adapter import RepoAdapter
from helpers import FIXTURES, assert_no_traceback, run_cli, run_cli_in_process

AIDER = FIXTURES / "aider"
AIDER_DEV = AIDER / "aider-repo" / "chat-history.md"
ZEN = AIDER / "zen-mcp-server" / ".aider.chat.history.md"
HEADERLESS = next((AIDER / "lemon-squeezer").rglob(".aider.chat.history.md"))
ADAPTER = AiderAdapter()


def parse(path: Path, project: str | None = None) -> tuple[list, ParseReport]:
    report = ParseReport()
    cand = SourceCandidate(source_uri=str(path), source_type="agent_session", adapter="aider",
                           root=str(path.parent), path=path,
                           extra={"project": project} if project else {})
    return list(ADAPTER.parse(cand, report, None)), report


def test_each_session_of_aiders_own_history_is_a_conversation():
    docs, report = parse(AIDER_DEV, project="/Users/user/Projects/aider")
    assert [d.thread_id.split("-", 2)[2] for d in docs] == [
        "2024-08-09T184535", "2024-08-10T202540", "2024-08-17T061907", "2024-08-21T090847"]
    first = docs[0]
    assert first.source == "aider" and first.created_at.isoformat().startswith("2024-08-09T18:45:35")
    users = [t.text for t in first.turns if t.role == "user"]
    assert users[0] == "make `abs_read_only_fnames` an optional param" and users[1] == "/ex"
    reply = next(t for t in first.turns if t.role == "assistant")
    assert reply.text.startswith("Certainly! I'll make the `abs_read_only_fnames` parameter optional")
    edit = reply.meta["edits"][0]
    assert edit["path"] == "aider/io.py" and edit["abs_path"] == "/Users/user/Projects/aider/aider/io.py"
    assert "abs_read_only_fnames=None" in edit["new_text"] and "abs_read_only_fnames\n" in edit["old_text"] + "\n"
    assert first.metadata["model"] == "claude-3-5-sonnet-20240620"
    assert first.metadata["version"] == "0.48.2-dev"
    assert "f542c65 feat: make `abs_read_only_fnames` an optional param in `AutoCompleter` class" in first.metadata["commits"]
    assert "aider/io.py" in first.metadata["applied_edits"]
    outputs = [t for t in first.turns if t.role == "tool"]
    assert outputs and all(t.tool.name == "aider" for t in outputs)
    # Multi-line tool output (only its first line has "> ") stays one output turn.
    pytest_run = next(t for t in outputs if "test session starts" in t.text)
    assert "collected 4 items" in pytest_run.text
    assert docs[1].metadata["model"] == "gpt-4o-mini"
    assert sum(len(t.meta.get("edits", [])) for d in docs for t in d.turns) >= 30


def test_sessions_without_a_reply_and_non_latin_text():
    docs, report = parse(ZEN)
    assert report.counts["sessions_without_messages"] >= 1
    assert any("请你分析一下" in t.text for d in docs for t in d.turns if t.role == "user")
    assert all(d.metadata["model"].startswith("gemini/") for d in docs)


def test_a_history_without_a_header_takes_its_files_time():
    docs, _ = parse(HEADERLESS)
    assert len(docs) == 1 and docs[0].created_at is not None
    assert any("csv_total.py" in t.text for t in docs[0].turns if t.role == "assistant")


def test_input_history_is_not_a_chat_history():
    with pytest.raises(UnrecognisedSource, match=r"\.aider\.input\.history: not an Aider chat history"):
        parse(AIDER / "zen-mcp-server" / ".aider.input.history")


NO_MARKER = "not an Aider chat history (no '# aider chat started at' header, '#### ' prompt or '> ' output line)"


@pytest.mark.parametrize(("content", "why"), [
    (b"# Notes\n\nNothing but notes: no prompt, no reply.\n", NO_MARKER),
    (b"Some text.\n\n> a quote, not Aider's output\n\n### A heading\n", NO_MARKER),
    (b"", "not an Aider chat history (an empty file)"),
])
def test_a_file_of_aiders_name_holding_no_line_aider_writes_is_one_skip_line(tmp_path: Path, content: bytes,
                                                                             why: str):
    """Not one assistant turn made of whatever the file holds."""
    history = tmp_path / ".aider.chat.history.md"
    history.write_bytes(content)
    with pytest.raises(UnrecognisedSource) as skipped:
        parse(history)
    assert str(skipped.value) == f"{history}: {why}"


@pytest.mark.parametrize("line", ["#### fix the failing test", "> Applied edit to app.py  "])
def test_a_history_without_a_header_is_read_when_a_line_is_aiders(tmp_path: Path, line: str):
    history = tmp_path / ".aider.chat.history.md"
    history.write_text("Some reply first, its session's header cut away.\n\n" + line + "\n")
    docs, _ = parse(history)
    assert len(docs) == 1 and docs[0].turns


def test_truncated_history_keeps_what_is_complete(tmp_path: Path):
    cut = tmp_path / ".aider.chat.history.md"
    data = AIDER_DEV.read_bytes()
    cut.write_bytes(data[: len(data) // 3])
    docs, _ = parse(cut)
    assert docs and docs[0].turns
    assert split_sessions("", __import__("collections").Counter()) == []


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


def test_repo_hands_aider_history_on_even_when_git_ignores_it(tmp_path: Path):
    repo = tmp_path / "proj"
    repo.mkdir()
    (repo / "app.py").write_text("def main():\n    return 1\n")
    (repo / ".gitignore").write_text(".aider*\n")
    shutil.copy(ZEN, repo / ".aider.chat.history.md")
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "-c", "user.email=t@e", "-c", "user.name=t", "commit", "-qm", "init")
    items = list(RepoAdapter().enumerate(repo, AdapterOptions(context_name="t")))
    history = [i for i in items if isinstance(i, SourceCandidate) and i.adapter == "aider"]
    assert len(history) == 1 and history[0].source_type == "agent_session"
    assert history[0].extra["project"] == str(repo)
    assert not any(isinstance(i, SourceCandidate) and i.adapter == "repo"
                   and i.source_uri.endswith(".aider.chat.history.md") for i in items)


def test_ingest_reads_aider_history_as_conversations(chinvex_home: Path, tmp_path: Path):
    repo = tmp_path / "proj"
    repo.mkdir()
    (repo / "io.py").write_text("def get_input():\n    pass\n")
    text = AIDER_DEV.read_text()  # its first session, to keep the embedder's work short
    (repo / ".aider.chat.history.md").write_text(text[: text.index("# aider chat started at", 10)])
    assert run_cli_in_process("context", "create", "Aid", "--repo", str(repo)).code == 0
    result = run_cli_in_process("ingest", "--context", "Aid", "--json")
    assert_no_traceback(result)
    assert result.code == 0 and result.json["errors"] == [], result
    found = run_cli("search", "--context", "Aid", "optional abs_read_only_fnames param",
                    "--source-types", "agent_session", "--json").json["results"]
    assert found and found[0]["source_type"] == "agent_session"
    thread_id = found[0]["source_uri"].rsplit("#", 1)[1]
    got = run_cli("get", thread_id, "--context", "Aid", "--json")
    assert got.code == 0 and got.json["thread_id"] == thread_id
    assert {"user", "assistant"} <= {t["role"] for t in got.json["turns"]}
    for expr in ("agent = 'aider'", "doc.agent IN ('aider', 'gemini')"):
        only = run_cli("search", "--context", "Aid", "optional param", "--filter", expr, "--json")
        assert only.code == 0 and only.json["results"], (expr, only)
        assert {r["source_type"] for r in only.json["results"]} == {"agent_session"}
    none = run_cli("search", "--context", "Aid", "optional param", "--filter", "agent = 'gemini'", "--json")
    assert none.code == 0 and none.json["results"] == []
    stats = run_cli_in_process("stats", "--context", "Aid", "--json")
    assert stats.json["conversations_by_agent"] == {"aider": 1}


def test_a_history_named_as_the_sessions_root_is_read_whatever_its_file_name(tmp_path):
    """`--sessions aider=PATH` naming the file itself: its content says it is Aider's."""
    named = tmp_path / "chat-history.md"
    named.write_bytes((FIXTURES / "aider/aider-repo/chat-history.md").read_bytes())
    [item] = list(AiderAdapter().enumerate(named, AdapterOptions(context_name="t")))
    assert isinstance(item, SourceCandidate) and item.path == named
    other = tmp_path / "notes.md"
    other.write_text("# just notes\n", encoding="utf-8")
    [skipped] = list(AiderAdapter().enumerate(other, AdapterOptions(context_name="t")))
    assert not isinstance(skipped, SourceCandidate)
