"""The amp adapter, on a REAL Amp thread and on threads written here.

The real one (tests/fixtures/samples/amp/empathic-toolpath, Apache-2.0, see PROVENANCE.md) is
the output of `amp threads export` by Amp CLI 0.0.1785170481 (2026-07-27): shell commands,
`apply_patch` adds and updates, a failed command, a `Task` sub-agent and thinking blocks. The
others are written by the tests in tmp_path, in the shape read from
Amp's published CLI bundle (`JSON.stringify(thread, null, 2)` of `{v, id, created (ms), title,
agentMode, env.initial, messages[]}`), to reach cases the real thread does not have (refusals,
images, child threads, cut files). Other agents' real fixtures check that the sniff claims none
of them."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from chinvex.models.sources import AdapterOptions, ParseReport, SkippedSource, SourceCandidate, UnrecognisedSource
from chinvex_adapters.amp import STORES
from chinvex_adapters.amp.adapter import AmpAdapter
from chinvex_adapters.kit.registry import Where
from helpers import FIXTURES, assert_no_traceback, parse_file, run_cli, run_cli_in_process, tool_turns

TID = "T-019b9c4e-2d1a-7f3e-8c5b-4a6d2e1f0c9b"
OTHER_TID = "T-019b9c50-0000-7000-8000-000000000001"
ADAPTER = AmpAdapter()
OPTIONS = AdapterOptions(context_name="t")


def user(mid: int, sent_ms: int, *blocks: dict[str, Any]) -> dict[str, Any]:
    return {"role": "user", "messageId": mid, "content": list(blocks), "meta": {"sentAt": sent_ms}}


def assistant(mid: int, stamp: str | None, *blocks: dict[str, Any], state: str = "complete") -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "messageId": mid, "content": list(blocks),
                               "state": {"type": state, "stopReason": "end_turn" if state == "complete" else None}}
    if stamp:
        message["usage"] = {"model": "claude-sonnet-4-5", "inputTokens": 1200, "outputTokens": 80,
                            "cacheReadInputTokens": 0, "totalInputTokens": 1200, "timestamp": stamp}
    return message


def text(body: str) -> dict[str, Any]:
    return {"type": "text", "text": body}


def tool_use(call_id: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": name, "input": args, "complete": True}


def tool_result(call_id: str, run: Any) -> dict[str, Any]:
    return {"type": "tool_result", "toolUseID": call_id, "run": run}


def thread(messages: list[dict[str, Any]], *, thread_id: str = TID, **extra: Any) -> dict[str, Any]:
    """A thread object in the documented shape (key order as Amp's serialiser gives it)."""
    return {"v": 17, "id": thread_id, "created": 1767830400000, "title": "Fix the off-by-one in the tokenizer",
            "agentMode": "smart", "nextMessageId": len(messages),
            "env": {"initial": {
                "trees": [{"displayName": "tok lib", "uri": "file:///home/dev/tok%20lib",
                           "repository": {"type": "git", "url": "https://github.com/acme/tok", "ref": "refs/heads/main",
                                          "sha": "0f3c2a1"}}],
                "platform": {"os": "linux", "osVersion": "6.8", "cpuArchitecture": "x64", "client": "cli",
                             "clientVersion": "0.0.1767830505-ga62310", "clientType": "cli"},
                "tags": ["model:claude-sonnet-4-5"]}},
            "messages": messages, **extra}


def conversation_messages() -> list[dict[str, Any]]:
    return [
        user(0, 1767830401000, text("The tokenizer drops the last token. Fix it in src/tok.py")),
        assistant(1, "2026-01-08T00:00:05.000Z",
                  {"type": "thinking", "thinking": "The loop stops at len - 1.", "signature": "c2lnbmF0dXJl"},
                  text("The loop bound is off by one; reading the file first."),
                  tool_use("toolu_01read", "Read", {"path": "/home/dev/tok lib/src/tok.py"})),
        user(2, 1767830406000, tool_result("toolu_01read", {"status": "done", "result": {
            "content": "1: def tokens(s):\n2:     return [s[i] for i in range(len(s) - 1)]"}})),
        assistant(3, "2026-01-08T00:00:09.000Z",
                  tool_use("toolu_02edit", "edit_file", {"path": "src/tok.py", "old_str": "range(len(s) - 1)",
                                                         "new_str": "range(len(s))"})),
        user(4, 1767830410000, tool_result("toolu_02edit", {"status": "done", "result": {
            "diff": "-    return [s[i] for i in range(len(s) - 1)]\n+    return [s[i] for i in range(len(s))]",
            "lineRange": [2, 2]}})),
        assistant(5, "2026-01-08T00:00:12.000Z",
                  tool_use("toolu_03new", "create_file", {"path": "tests/test_tok.py",
                                                          "content": "def test_last():\n    assert tokens('ab') == ['a', 'b']\n"}),
                  tool_use("toolu_04bash", "Bash", {"cmd": "pytest -q"})),
        user(6, 1767830415000, tool_result("toolu_03new", {"status": "done", "result": {"diff": "+def test_last():"}}),
             tool_result("toolu_04bash", {"status": "done", "result": {"output": "1 passed in 0.01s", "exitCode": 0}})),
        assistant(7, "2026-01-08T00:00:16.000Z", text("Fixed: the loop now covers every index, and a test guards it.")),
    ]


def write(folder: Path, data: Any, name: str | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / (name or f"{data['id']}.json")
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")
    return path


def parse(path: Path) -> tuple[list, ParseReport]:
    return parse_file(ADAPTER, path)


def one(path: Path):
    docs, report = parse(path)
    assert len(docs) == 1, report
    return docs[0], report


# -- a thread --------------------------------------------------------------------------------

def test_thread_keeps_words_thinking_calls_results_and_edits(tmp_path: Path):
    doc, report = one(write(tmp_path, thread(conversation_messages())))
    assert doc.source == "amp" and doc.thread_id == TID and doc.title == "Fix the off-by-one in the tokenizer"
    assert doc.metadata["cwd"] == "/home/dev/tok lib" and doc.links.repo_paths == ["/home/dev/tok lib"]
    assert doc.metadata["model"] == "claude-sonnet-4-5" and doc.metadata["agent_mode"] == "smart"
    assert doc.metadata["revision"] == 17 and doc.metadata["version"] == "0.0.1767830505-ga62310"
    assert doc.metadata["repository"] == "https://github.com/acme/tok"
    assert doc.metadata["thread_created_at"] == "2026-01-08T00:00:00.000Z"
    first = doc.turns[0]
    assert first.role == "user" and first.text.startswith("The tokenizer drops the last token.")
    assert first.ts.isoformat() == "2026-01-08T00:00:01+00:00" and first.turn_id == "m0"
    thinking = next(t for t in doc.turns if t.meta.get("thinking"))
    assert thinking.text == "The loop stops at len - 1." and "c2lnbmF0dXJl" not in thinking.text
    replies = [t.text for t in doc.turns if t.role == "assistant" and not t.meta.get("thinking")]
    assert replies == ["The loop bound is off by one; reading the file first.",
                       "Fixed: the loop now covers every index, and a test guards it."]
    read = tool_turns(doc, "Read")[0]
    assert "Result:\n1: def tokens(s):" in read.text and read.meta["status"] == "done"
    edit = tool_turns(doc, "edit_file")[0]
    assert edit.meta["edits"] == [{"path": "src/tok.py", "op": "edit", "abs_path": "/home/dev/tok lib/src/tok.py",
                                   "old_text": "range(len(s) - 1)", "new_text": "range(len(s))"}]
    assert "+    return [s[i] for i in range(len(s))]" in edit.text
    created = tool_turns(doc, "create_file")[0].meta["edits"][0]
    assert created["op"] == "write" and created["abs_path"] == "/home/dev/tok lib/tests/test_tok.py"
    assert created["new_text"].startswith("def test_last():")
    bash = tool_turns(doc, "Bash")[0]
    assert bash.tool.input == {"cmd": "pytest -q"} and "1 passed in 0.01s" in bash.text and "exit code" not in bash.text
    assert bash.ts.isoformat() == "2026-01-08T00:00:12+00:00"
    assert doc.metadata["files_edited"] == ["/home/dev/tok lib/src/tok.py", "/home/dev/tok lib/tests/test_tok.py"]
    assert report.counts["tool_results_unmatched"] == 0 and report.counts["file_edits"] == 2


def test_failed_refused_and_unfinished_runs(tmp_path: Path):
    messages = [
        user(0, 1767830401000, text("run the build")),
        assistant(1, "2026-01-08T00:00:02Z", tool_use("t1", "Bash", {"cmd": "make"}), tool_use("t2", "Bash", {"cmd": "rm -rf /"}),
                  tool_use("t3", "oracle", {"task": "review"}), tool_use("t4", "Bash", {"cmd": "make test"})),
        user(2, 1767830403000, tool_result("t1", {"status": "done", "result": {"output": "make: *** [all] Error 2", "exitCode": 2}}),
             tool_result("t2", {"status": "rejected-by-user"}),
             tool_result("t3", {"status": "error", "error": {"message": "oracle timed out"}}),
             tool_result("t4", "in-progress")),
        assistant(3, None, text("The build failed; should I look at the Makefile?"), state="streaming"),
    ]
    doc, _ = one(write(tmp_path, thread(messages)))
    calls = {t.meta["tool_use_id"]: t for t in doc.turns if t.role == "tool"}
    assert "make: *** [all] Error 2\n(exit code 2)" in calls["t1"].text
    assert calls["t2"].meta["is_error"] and "(rejected-by-user)" in calls["t2"].text
    assert calls["t3"].meta["is_error"] and "Result (error):\noracle timed out" in calls["t3"].text
    assert "(in-progress)" in calls["t4"].text and not calls["t4"].meta.get("is_error")
    last = doc.turns[-1]
    assert last.meta["state"] == "streaming" and last.ts.isoformat() == "2026-01-08T00:00:03+00:00"  # the results' message's


def test_info_messages_images_and_a_result_before_its_call(tmp_path: Path):
    image = {"type": "image", "source": {"type": "base64", "mediaType": "image/png", "data": "iVBORw0KGgo" * 400}}
    messages = [
        user(0, 1767830401000, text("what is on this screenshot?"), image),
        {"role": "info", "messageId": 1, "content": [
            {"type": "manual_bash_invocation", "args": {"cmd": "git status"}, "hidden": False,
             "toolRun": {"status": "done", "result": {"output": "On branch main", "exitCode": 0}}}]},
        user(2, 1767830404000, tool_result("t9", {"status": "done", "result": "early output"})),
        assistant(3, "2026-01-08T00:00:05Z", text("A login form."), tool_use("t9", "look_at", {"path": "shot.png"})),
        {"role": "info", "messageId": 4, "content": [
            {"type": "summary", "summary": {"type": "message", "summary": "The user asked about a screenshot."}}]},
        {"role": "assistant", "messageId": 5, "content": [{"type": "redacted_thinking", "data": "xxx"}, {"type": "hologram"}]},
        "not a message",
    ]
    doc, report = one(write(tmp_path, thread(messages)))
    first = doc.turns[0]
    assert first.attachments[0].kind == "image" and first.attachments[0].mime_type == "image/png"
    assert "iVBORw0KGgo" not in first.text
    bash = tool_turns(doc, "Bash")[0]
    assert bash.meta["run_by_user"] and "git status" in bash.text and "On branch main" in bash.text
    look = tool_turns(doc, "look_at")[0]
    assert "early output" in look.text and report.counts["tool_results_before_call"] == 1
    summary = next(t for t in doc.turns if t.meta.get("summary"))
    assert summary.role == "system" and summary.text == "The user asked about a screenshot."
    assert report.counts["blocks_skipped:redacted_thinking"] == 1 and report.counts["blocks_unknown:hologram"] == 1
    assert report.counts["messages_malformed"] == 1


def test_a_thread_without_messages_is_no_conversation(tmp_path: Path):
    docs, report = parse(write(tmp_path, thread([])))
    assert docs == [] and report.counts["threads_without_messages"] == 1


def test_child_threads_keep_their_links(tmp_path: Path):
    child = thread(conversation_messages()[:2], thread_id=OTHER_TID, mainThreadID=TID, originThreadID=TID,
                   relationships=[{"threadID": TID, "type": "handoff", "role": "parent", "messageIndex": 3}])
    child.pop("title")
    doc, _ = one(write(tmp_path, child))
    assert doc.metadata["main_thread_id"] == TID and doc.metadata["relationships"][0]["type"] == "handoff"
    assert doc.title == "The tokenizer drops the last token. Fix it in src/tok.py"  # no title: the first prompt


# -- files in the store ----------------------------------------------------------------------

def test_store_folder_keeps_threads_and_passes_over_partials(tmp_path: Path):
    store = tmp_path / "threads"
    write(store, thread(conversation_messages()))
    write(store, thread(conversation_messages(), thread_id=OTHER_TID), name=f"{OTHER_TID}.json.amptmp")
    (store / "index.json").write_text("{}")
    items = list(ADAPTER.enumerate(store, OPTIONS))
    kept = [Path(i.source_uri).name for i in items if isinstance(i, SourceCandidate)]
    skipped = {Path(i.source_uri).name: i.detail for i in items if isinstance(i, SkippedSource)}
    assert kept == [f"{TID}.json"]
    assert "being saved" in skipped[f"{OTHER_TID}.json.amptmp"] and "not an Amp thread file" in skipped["index.json"]
    dump = write(tmp_path / "tmp", thread(conversation_messages()), name=f"amp-thread-{TID}-1767830500000.json")
    assert [i.source_uri for i in ADAPTER.enumerate(dump.parent, OPTIONS)] == [str(dump)]
    assert one(dump)[0].thread_id == TID


def test_cut_and_misshaped_threads_are_one_line(tmp_path: Path):
    good = json.dumps(thread(conversation_messages()), indent=2)
    cases = {"cut": good[: len(good) // 2], "empty": "", "list": "[1, 2]",
             "nomsg": json.dumps({"v": 1, "id": TID, "created": 1767830400000})}
    for label, body in cases.items():
        path = tmp_path / label / f"{TID}.json"
        path.parent.mkdir()
        path.write_text(body)
        with pytest.raises(UnrecognisedSource) as caught:
            parse(path)
        message = str(caught.value)
        assert message.startswith(f"{path}: not ") and "Amp thread" in message and "\n" not in message, message
    named = tmp_path / "noid" / f"{OTHER_TID}.json"  # no id inside: the file name is the thread id
    named.parent.mkdir()
    named.write_text(json.dumps({"v": 1, "created": 1767830400000, "messages": conversation_messages()[:2]}))
    assert one(named)[0].thread_id == OTHER_TID
    anonymous = tmp_path / "noid" / "whatever.json"
    anonymous.write_text(json.dumps({"v": 1, "created": 1767830400000, "messages": []}))
    with pytest.raises(UnrecognisedSource, match=r"whatever\.json: not an Amp thread \(no T-<uuid> thread id\)"):
        list(ADAPTER.parse_file(anonymous, ParseReport(), None, None))


# -- routing and stores ----------------------------------------------------------------------

def test_recognises_threads_and_no_other_agents_files(tmp_path: Path):
    assert ADAPTER.recognises(write(tmp_path, thread(conversation_messages())))
    # A first message longer than the sniffed head, with the id after it: the file name decides.
    big = {"messages": [user(0, 1767830401000, text("x" * 200_000))], "v": 2, "id": OTHER_TID, "created": 1767830400000}
    path = write(tmp_path / "big", big)
    assert ADAPTER.recognises(path) and not ADAPTER.recognises(write(tmp_path / "big2", big, name="other.json"))
    assert one(path)[0].thread_id == OTHER_TID
    others = [p for p in sorted(FIXTURES.rglob("*")) if p.is_file() and "amp" not in p.relative_to(FIXTURES).parts[:1]]
    assert len(others) > 100
    assert [p for p in others if ADAPTER.recognises(p)] == []  # no other agent's file is taken for Amp's


def test_stores_are_the_xdg_folder_and_the_extension_storage(tmp_path: Path):
    home = tmp_path / "u"
    where = Where(home=home, env={"XDG_DATA_HOME": str(tmp_path / "x")})
    assert STORES[0].locate(where) == [tmp_path / "x" / "amp" / "threads", home / ".local/share" / "amp" / "threads"]
    vscode = STORES[1].locate(Where(home=home, env={}))
    assert home / ".config" / "Code" / "User" / "globalStorage" / "sourcegraph.amp" / "threads3" in vscode
    assert home / "Library" / "Application Support" / "Cursor" / "User" / "globalStorage" / "sourcegraph.amp" / "threads3" in vscode


# -- end to end ------------------------------------------------------------------------------

def test_ingest_finds_amp_threads_under_home(tmp_path: Path, chinvex_home: Path, monkeypatch: pytest.MonkeyPatch):
    home = tmp_path / "home"
    write(home / ".local" / "share" / "amp" / "threads", thread(conversation_messages()))
    legacy = home / ".config" / "Code" / "User" / "globalStorage" / "sourcegraph.amp" / "threads3"
    write(legacy, thread(conversation_messages()[:2], thread_id=OTHER_TID))
    monkeypatch.setenv("HOME", str(home))
    for var in ("XDG_DATA_HOME", "XDG_CONFIG_HOME", "APPDATA", "LOCALAPPDATA"):
        monkeypatch.delenv(var, raising=False)
    detected = run_cli_in_process("sessions", "detect", "--json")
    assert detected.code == 0 and "amp" in detected.json["agents"], detected
    assert run_cli_in_process("context", "create", "X", "--sessions", "auto").code == 0
    result = run_cli_in_process("ingest", "--context", "X", "--json")
    assert_no_traceback(result)
    assert result.code == 0 and result.json["errors"] == [] and result.json["sources"]["indexed"] == 2, result
    got = run_cli_in_process("get", TID, "--context", "X", "--json")
    assert got.code == 0 and got.json["thread_id"] == TID, got
    turns = got.json["turns"]
    assert {"user", "assistant", "tool"} <= {t["role"] for t in turns} and all(t["ts"] for t in turns)
    shutil.rmtree(legacy)
    again = run_cli_in_process("ingest", "--context", "X", "--json")
    assert again.code == 0 and again.json["sources"]["unchanged"] == 1, again


REAL = FIXTURES / "amp" / "empathic-toolpath" / "threads" / "T-019fa4db-29cf-70c9-8d9b-81524df70e52.json"


def test_a_real_thread_keeps_requests_answers_tools_and_edits():
    docs, report = parse_file(ADAPTER, REAL)
    assert report.warnings == [] and len(docs) == 1
    doc = docs[0]
    assert doc.source == "amp" and doc.thread_id == REAL.stem and doc.title == "Filesystem tool exercise"
    assert doc.metadata["cwd"] == "/tmp/amp-elicit" and doc.metadata["model"] == "gpt-5.6-sol"
    assert doc.metadata["version"] == "0.0.1785170481-ga5b614"
    assert doc.turns[0].role == "user" and doc.turns[0].text.startswith("You're going to walk through")
    assert all(t.ts is not None for t in doc.turns) and doc.created_at < doc.updated_at
    shells = [t.tool.input["command"] for t in tool_turns(doc, "shell_command")]
    assert shells[:2] == ["ls -la", "cat notes.md"] and "bash count.sh" in shells
    failed = next(t for t in tool_turns(doc, "shell_command") if t.tool.input["command"] == "cat does-not-exist.txt")
    assert "No such file or directory" in failed.text
    patches = tool_turns(doc, "apply_patch")
    assert [e["path"] for t in patches for e in t.meta["edits"]] == ["notes.md", "notes.md", "count.sh"]
    assert report.counts["file_edits"] == 3 and tool_turns(doc, "Task")
    assert doc.metadata["files_edited"] == ["/tmp/amp-elicit/notes.md", "/tmp/amp-elicit/count.sh"]
    assert "11 words" in doc.turns[-1].text


def test_a_real_thread_is_recognised_and_searchable(tmp_path: Path, chinvex_home: Path):
    store = tmp_path / "amp"
    shutil.copytree(REAL.parent.parent, store)
    assert run_cli_in_process("context", "create", "A", "--sessions", f"amp={store}").code == 0
    result = run_cli_in_process("ingest", "--context", "A", "--json")
    assert result.code == 0 and result.json["sources"]["indexed"] == 1, result
    hit = run_cli("search", "--context", "A", "count.sh five lines", "--json").json["results"][0]
    assert hit["source_type"] == "agent_session" and hit["metadata"]["source"] == "amp"
