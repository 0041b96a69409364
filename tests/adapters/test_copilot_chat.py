"""The copilot_chat adapter on real VS Code Copilot Chat sessions (tests/fixtures/samples/vscode_copilot):
a flat `.json` of Copilot Chat 0.31.5 and a `.jsonl` mutation log of 0.37.1; copies made in tmp_path
for what no real file shows (workspace.json, a session in both forms, log sets/truncations/deletes,
answers without the model's rounds, other edit tools, empty and damaged files)."""

from __future__ import annotations

import copy
import json
import shutil
from datetime import datetime, timezone
from pathlib import Path

import pytest

from chinvex.models import ConversationDoc
from chinvex.ingest.session_stores import detect
from chinvex.models.sources import AdapterOptions, ParseReport, SkippedSource, SourceCandidate, UnrecognisedSource
from chinvex_adapters.copilot_chat import STORES
from chinvex_adapters.copilot_chat.adapter import CopilotChatAdapter
from chinvex_adapters.kit.registry import Where
from helpers import FIXTURES, assert_no_traceback, parse_file, run_cli, run_cli_in_process

SAMPLES = FIXTURES / "vscode_copilot" / "git-ai" / "chatSessions"
FLAT_ID = "331fed7f-cfd6-409c-8502-06a56322b636"
FLAT = SAMPLES / f"{FLAT_ID}.json"
LOG_ID = "7de89a80-6d93-43e7-be0a-0a9afe980198"
LOG = SAMPLES / f"{LOG_ID}.jsonl"
FOLDER = "/Users/user/projects/testing-git"
ADAPTER = CopilotChatAdapter()


def parse(path: Path) -> tuple[list[ConversationDoc], ParseReport]:
    return parse_file(CopilotChatAdapter(), path)


def one(path: Path) -> ConversationDoc:
    docs, _ = parse(path)
    assert len(docs) == 1
    return docs[0]


def ms(value: int) -> datetime:
    return datetime.fromtimestamp(value / 1000, timezone.utc)


def flat() -> dict:
    return json.loads(FLAT.read_text("utf-8"))


def log_lines(path: Path = LOG) -> list[dict]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]


def write_lines(path: Path, records: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), "utf-8")
    return path


def write_json(path: Path, data: dict) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, ensure_ascii=False), "utf-8")
    return path


def calls(doc: ConversationDoc, name: str) -> list:
    return [t for t in doc.turns if t.tool is not None and t.tool.name == name]


# -- the real sessions -------------------------------------------------------------------------

def test_flat_session_keeps_prompts_rounds_tool_calls_and_the_edit():
    doc, report = (lambda r: (r[0][0], r[1]))(parse(FLAT))
    assert doc.source == "copilot_chat" and doc.thread_id == FLAT_ID
    assert doc.title == "Assistance with TypeScript project tasks"
    assert doc.metadata["cwd"] == FOLDER and doc.metadata["cwd_from"] == "markdown baseUri"
    assert doc.metadata["model"] == "claude-sonnet-4" and doc.metadata["copilot_chat_version"] == "0.31.5"
    assert doc.metadata["participants"] == ["github.copilot.editsAgent"] and doc.metadata["schema_version"] == 3
    users = [t for t in doc.turns if t.role == "user"]
    assert [u.text for u in users] == ["What can you help me with?", "Change Bonjour World to hello world",
                                       "Search for any other mentions of Bonjour"]
    assert users[0].ts == ms(1759845073835) and users[0].attachments[0].path == f"{FOLDER}/index.ts"
    assert users[1].attachments[0].model_dump()["implicit"] is True
    replace = calls(doc, "replace_string_in_file")[0]
    assert replace.meta["tool_use_id"] == "toolu_vrtx_01UAL9wRmnDUwNjStDn4qhne__vscode-1759845028970"
    assert "The following files were successfully edited" in replace.text
    edit = replace.meta["edits"][0]
    assert edit["path"] == f"{FOLDER}/index.ts" and edit["op"] == "edit"
    assert edit["old_text"].endswith("console.log('Bonjour World');") and edit["new_text"].endswith("console.log('hello world');")
    grep = calls(doc, "grep_search")[0]
    assert grep.tool.input == {"query": "Bonjour", "isRegexp": False} and "console.log('Bonjour');" in grep.text
    replies = [t for t in doc.turns if t.role == "assistant"]
    assert replies[2].text.startswith('Done! I\'ve changed "Bonjour World" to "hello world"')
    assert replies[2].ts == ms(1759845101282 + 9509)  # the request's time + totalElapsed
    assert doc.metadata["files_edited"] == [f"{FOLDER}/index.ts"] and report.counts["file_edits"] == 1
    assert not calls(doc, "copilot_replaceString")  # the UI's view of the same call is not doubled


def test_log_is_replayed_and_the_applied_text_replaces_a_fragment():
    doc = one(LOG)
    assert doc.thread_id == LOG_ID and doc.title == "Adding a joke to jokes.csv file"
    assert doc.metadata["file_format"].startswith("jsonl") and doc.metadata["log_entries"] == 5
    assert doc.metadata["model"] == "gpt-4o" and doc.metadata["copilot_chat_version"] == "0.37.1"
    assert doc.metadata["selected_model"] == "copilot/gpt-4o" and doc.metadata["has_pending_edits"] is True
    users = [t for t in doc.turns if t.role == "user"]
    assert [u.text for u in users] == ["Add a joke about 7sadfh32u23gdaWF to jokes.csv", "follow up message"]
    assert users[1].ts == ms(1770583417096)  # the request pushed by a kind-2 line
    read = calls(doc, "read_file")[0]
    assert read.tool.input == {"filePath": f"{FOLDER}/jokes.csv", "startLine": 1, "endLine": 20}
    assert "1,Why do programmers prefer dark mode?,Because light attracts bugs." in read.text
    insert = calls(doc, "insert_edit_into_file")[0]
    assert "...existing code..." in insert.tool.input["code"]
    edit = insert.meta["edits"][0]
    assert edit["path"] == f"{FOLDER}/jokes.csv" and "...existing code..." not in edit["new_text"]
    assert "5,Why did 7sadfh32u23gdaWF cross the road?,To debug the chicken's code." in edit["new_text"]
    replies = [t for t in doc.turns if t.role == "assistant"]
    assert replies[0].text.startswith('I added a joke about "7sadfh32u23gdaWF"') and replies[0].ts == ms(1770580262625)
    assert doc.metadata["tokens"] == {"prompt_tokens": 19671, "output_tokens": 73}  # result.usage, both requests


def test_workspace_json_gives_the_folder_and_a_remote_or_multi_root_workspace(tmp_path: Path):
    storage = tmp_path / "workspaceStorage"
    for name, spec in (("a1", {"folder": "file:///home/me/app%20one"}),
                       ("b2", {"folder": "vscode-remote://ssh-remote%2Bbox/srv/app"}),
                       ("c3", {"workspace": "file:///c%3A/Users/me/all.code-workspace"})):
        (storage / name / "chatSessions").mkdir(parents=True)
        shutil.copy(FLAT, storage / name / "chatSessions" / FLAT.name)
        (storage / name / "workspace.json").write_text(json.dumps(spec))
    local = one(storage / "a1" / "chatSessions" / FLAT.name)
    assert local.metadata["cwd"] == "/home/me/app one" and local.metadata["cwd_from"] == "workspace.json"
    assert local.metadata["workspace_id"] == "a1" and local.metadata["workspace_kind"] == "folder"
    remote = one(storage / "b2" / "chatSessions" / FLAT.name)
    assert remote.metadata["cwd"] == "/srv/app" and remote.metadata["remote"] == "ssh-remote+box"
    multi = one(storage / "c3" / "chatSessions" / FLAT.name)
    assert multi.metadata["cwd"] == "c:/Users/me" and multi.metadata["workspace_kind"] == "workspace"


def test_a_session_in_both_forms_is_one_document_and_the_log_wins(tmp_path: Path):
    data = flat()
    old = write_json(tmp_path / FLAT.name, data)
    later = copy.deepcopy(data["requests"][2])
    later.update(requestId="request_later", timestamp=1759860000000, message={"text": "one more", "parts": []})
    new = write_lines(tmp_path / f"{FLAT_ID}.jsonl", [{"kind": 0, "v": data},
                                                      {"kind": 2, "k": ["requests"], "v": [later]}])
    json_doc, log_doc = one(old), one(new)
    assert json_doc.doc_id == log_doc.doc_id and log_doc.source_uri.endswith(".jsonl")
    assert max([log_doc, json_doc], key=CopilotChatAdapter.precedence_key) is log_doc
    assert max([json_doc, log_doc], key=CopilotChatAdapter.precedence_key) is log_doc
    assert [t.text for t in log_doc.turns if t.role == "user"][-1] == "one more"


def test_log_sets_truncating_pushes_deletes_and_bad_paths(tmp_path: Path):
    first, *rest = log_lines()
    snapshot = first["v"]
    second = next(r for r in rest if r["kind"] == 2)["v"][0]
    redo = copy.deepcopy(second)
    redo.update(requestId="request_redo", message={"text": "redo it differently", "parts": []})
    records = [first,
               {"kind": 1, "k": ["customTitle"], "v": "Jokes, renamed"},
               {"kind": 2, "k": ["requests"], "v": [second]},
               {"kind": 2, "k": ["requests"], "i": 1, "v": [redo]},  # the second request edited and resent
               {"kind": 1, "k": ["requests", 1, "message"], "v": {"text": "redo it, edited", "parts": []}},
               {"kind": 3, "k": ["hasPendingEdits"]},
               {"kind": 1, "k": ["requests", 9, "result"], "v": {}},  # no such request
               {"kind": 2, "k": ["inputState", "inputText"], "v": ["x"]}]  # not an array
    doc, report = (lambda r: (r[0][0], r[1]))(parse(write_lines(tmp_path / "s.jsonl", records)))
    assert doc.title == "Jokes, renamed" and "has_pending_edits" not in doc.metadata
    assert [t.text for t in doc.turns if t.role == "user"] == [snapshot["requests"][0]["message"]["text"], "redo it, edited"]
    assert report.counts["log_entries_invalid"] == 2 and doc.metadata["log_entries"] == 5
    compacted = write_lines(tmp_path / "c.jsonl", [first, {"kind": 0, "v": {**snapshot, "requests": []}}])
    docs, report = parse(compacted)
    assert docs == [] and report.counts["sessions_empty"] == 1 and report.counts["log_snapshots"] == 2


def test_answers_without_the_models_rounds_come_from_the_response_parts(tmp_path: Path):
    data = flat()
    for request in data["requests"]:
        request["result"]["metadata"].pop("toolCallRounds")
    data["requests"][0]["response"].insert(0, {"kind": "thinking", "value": ["Listing ", "what I can do."]})
    data["requests"][2]["response"].append({"kind": "toolInvocationSerialized", "toolId": "run_in_terminal",
                                             "invocationMessage": "Running `npm test`", "pastTenseMessage": "Ran `npm test`",
                                             "toolSpecificData": {"kind": "terminal", "commandLine": {"original": "npm test"}},
                                             "isComplete": True, "toolCallId": "ui-1"})
    doc, report = (lambda r: (r[0][0], r[1]))(parse(write_json(tmp_path / FLAT.name, data)))
    thinking = next(t for t in doc.turns if t.meta.get("thinking"))
    assert thinking.text == "Listing what I can do."
    replies = [t.text for t in doc.turns if t.role == "assistant" and not t.meta.get("thinking")]
    done = next(r for r in replies if "Done! I've changed" in r)
    assert done == ('I\'ll change "Bonjour World" to "hello world" in your selected text. \nDone! I\'ve changed '
                    '"Bonjour World" to "hello world" in line 10 of your `index.ts` file.')  # empty code fences dropped
    assert "TypeScript project with an `index.ts` file" in replies[0]
    edit_reply = next(t for t in doc.turns if t.meta.get("edits"))
    assert edit_reply.role == "assistant" and edit_reply.meta["edits"][0]["new_text"].endswith("console.log('hello world');")
    search = calls(doc, "copilot_findTextInFiles")[0]
    assert "Searched text for `Bonjour`, 1 result" in search.text and search.meta["ui_only"]
    terminal = calls(doc, "run_in_terminal")[0]
    assert terminal.tool.input["command"] == "npm test" and "Ran `npm test`" in terminal.text
    assert not calls(doc, "copilot_replaceString") and report.counts["hidden_tool_invocations"] == 1


def test_other_edit_tools_cancelled_and_failed_requests(tmp_path: Path):
    data = flat()
    request = data["requests"][1]
    rounds = request["result"]["metadata"]["toolCallRounds"]
    rounds[0]["toolCalls"] = [
        {"id": "c1", "name": "multi_replace_string_in_file", "arguments": json.dumps({"explanation": "x", "replacements": [
            {"filePath": f"{FOLDER}/a.ts", "oldString": "a1", "newString": "a2"},
            {"filePath": f"{FOLDER}/b.ts", "oldString": "b1", "newString": "b2"}]})},
        {"id": "c2", "name": "create_file", "arguments": json.dumps({"filePath": f"{FOLDER}/new.ts", "content": "export {}\n"})},
        {"id": "c3", "name": "apply_patch", "arguments": json.dumps({"explanation": "p", "input":
            "*** Begin Patch\n*** Update File: /srv/c.ts\n@@\n-old line\n+new line\n*** End Patch"})},
        {"id": "c4", "name": "insert_edit_into_file", "arguments": json.dumps({"filePath": "/srv/d.ts",
                                                                               "code": "// ...existing code...\nrun()"})}]
    data["requests"][2]["modelState"] = {"value": 2}
    data["requests"][0]["result"]["errorDetails"] = {"message": "Sorry, the response was filtered."}
    doc = one(write_json(tmp_path / FLAT.name, data))
    multi = calls(doc, "multi_replace_string_in_file")[0].meta["edits"]
    assert [(e["path"], e["old_text"], e["new_text"]) for e in multi] == [
        (f"{FOLDER}/a.ts", "a1", "a2"), (f"{FOLDER}/b.ts", "b1", "b2")]
    assert calls(doc, "create_file")[0].meta["edits"][0] == {"path": f"{FOLDER}/new.ts", "op": "write",
                                                            "abs_path": f"{FOLDER}/new.ts", "new_text": "export {}\n"}
    patch = calls(doc, "apply_patch")[0].meta["edits"][0]
    assert (patch["path"], patch["old_text"], patch["new_text"]) == ("/srv/c.ts", "old line", "new line")
    fragment = calls(doc, "insert_edit_into_file")[0].meta["edits"]  # no applied text: the fragment, as an edit
    assert fragment == [{"path": "/srv/d.ts", "op": "edit", "abs_path": "/srv/d.ts", "new_text": "// ...existing code...\nrun()"}]
    # index.ts's applied edit, claimed by no call now, goes to the request's last reply
    last_reply = [t for t in doc.turns if t.role == "assistant" and t.turn_id.startswith(request["requestId"])][-1]
    assert last_reply.meta["edits"][0]["path"] == f"{FOLDER}/index.ts"
    assert any(t.role == "system" and t.text == "Error: Sorry, the response was filtered." for t in doc.turns)
    assert [t.meta.get("response_state") for t in doc.turns if t.role == "user"] == ["failed", None, "cancelled"]
    assert doc.metadata["response_states"] == {"failed": 1, "cancelled": 1}


# -- damaged, empty and foreign files ----------------------------------------------------------

def test_damaged_files_are_one_line_each_and_a_cut_log_keeps_its_complete_lines(tmp_path: Path):
    raw = FLAT.read_bytes()
    cut = tmp_path / "cut.json"
    cut.write_bytes(raw[: len(raw) // 2])
    empty = tmp_path / "empty.json"
    empty.write_bytes(b"")
    array = write_json(tmp_path / "array.json", [{"requests": []}])  # type: ignore[arg-type]
    shaped = write_json(tmp_path / "shaped.json", {"version": 3, "requests": "none"})
    headless = write_lines(tmp_path / "headless.jsonl", log_lines()[1:])
    for path in (cut, empty, array, shaped, headless):
        with pytest.raises(UnrecognisedSource) as info:
            parse(path)
        assert str(info.value).startswith(str(path)) and "\n" not in str(info.value)
    data = LOG.read_bytes()
    torn = tmp_path / "torn.jsonl"
    torn.write_bytes(data[: data.index(b'"request_16102909') + 40])  # inside the pushed request
    docs, report = parse(torn)
    assert len(docs) == 1 and report.counts["partial_last_line"] == 1 and docs[0].metadata["partial_last_line"]
    assert [t.text for t in docs[0].turns if t.role == "user"] == ["Add a joke about 7sadfh32u23gdaWF to jokes.csv"]
    nothing = write_json(tmp_path / "nothing.json", {**flat(), "requests": []})
    docs, report = parse(nothing)
    assert docs == [] and report.counts["sessions_empty"] == 1


def test_recognises_its_sessions_and_no_other_agents_files():
    assert ADAPTER.recognises(FLAT) and ADAPTER.recognises(LOG)
    kinds = {p.name for p in FIXTURES.iterdir() if p.is_dir() and p.name != "vscode_copilot"}
    assert {"claude-code", "codex-rollout", "cline", "cursor", "copilot_cli", "gemini_cli"} <= kinds
    others = [p for kind in sorted(kinds) for p in sorted((FIXTURES / kind).rglob("*")) if p.is_file()]
    assert len(others) > 100
    assert [p for p in others if ADAPTER.recognises(p)] == []


# -- enumeration and stores --------------------------------------------------------------------

def test_enumeration_lists_chat_sessions_folders_only(tmp_path: Path):
    user = tmp_path / "Code" / "User"
    storage = user / "workspaceStorage"
    chats = storage / "0f1e2d3c" / "chatSessions"
    chats.mkdir(parents=True)
    shutil.copy(FLAT, chats)
    shutil.copy(LOG, chats)
    (chats / "notes.txt").write_text("x")
    other = storage / "9a8b7c6d" / "ms-python.python" / "chatSessions"  # another extension's data
    other.mkdir(parents=True)
    shutil.copy(FLAT, other)
    (storage / "9a8b7c6d" / "state.vscdb").write_bytes(b"SQLite format 3\x00")
    empty = user / "globalStorage" / "emptyWindowChatSessions"
    empty.mkdir(parents=True)
    shutil.copy(LOG, empty / "e0.jsonl")
    options = AdapterOptions(context_name="t")
    items = list(ADAPTER.enumerate(storage, options))
    kept = sorted(Path(i.source_uri).name for i in items if isinstance(i, SourceCandidate))
    assert kept == sorted([FLAT.name, LOG.name])
    skipped = {Path(i.source_uri).name: i.detail for i in items if isinstance(i, SkippedSource)}
    assert skipped == {"notes.txt": "not a chat session (sessions are <id>.json or <id>.jsonl)"}
    from_user = [Path(i.source_uri) for i in ADAPTER.enumerate(user, options) if isinstance(i, SourceCandidate)]
    assert empty / "e0.jsonl" in from_user and len(from_user) == 3
    assert [Path(i.source_uri).name for i in ADAPTER.enumerate(chats.parent, options)
            if isinstance(i, SourceCandidate)] == [FLAT.name, LOG.name]
    assert [i.source_uri for i in ADAPTER.enumerate(empty, options)] == [str(empty / "e0.jsonl")]
    excluded = list(ADAPTER.enumerate(storage, AdapterOptions(context_name="t", excludes=["*.jsonl"])))
    assert [Path(i.source_uri).name for i in excluded if isinstance(i, SourceCandidate)] == [FLAT.name]
    empty_doc = one(empty / "e0.jsonl")
    assert empty_doc.metadata["empty_window"] is True and "workspace_id" not in empty_doc.metadata


def test_stores_are_every_editors_workspace_storage_and_present_only_with_chats(tmp_path: Path):
    home = tmp_path / "home"
    where = Where(home=home, env={"VSCODE_PORTABLE": str(tmp_path / "portable"),
                                  "VSCODE_APPDATA": str(tmp_path / "appdata")})
    located = STORES[0].locate(where)
    assert located[0] == tmp_path / "portable/user-data/User/workspaceStorage"
    assert tmp_path / "appdata/Code/User/workspaceStorage" in located
    for user in (".config/Code/User", ".config/Code - Insiders/User", ".config/VSCodium/User",
                 "Library/Application Support/Code/User", "AppData/Roaming/Code/User", ".vscode-server/data/User"):
        assert home / user / "workspaceStorage" in located
    assert home / ".config/Code/User/globalStorage/emptyWindowChatSessions" in located
    storage = home / ".config/Code/User/workspaceStorage"
    (storage / "abc" / "ms-python.python").mkdir(parents=True)  # other extensions' data only
    env = {"HOME": str(home)}
    assert detect(home, env, {"copilot_chat"}) == []
    (storage / "abc" / "chatSessions").mkdir()
    shutil.copy(LOG, storage / "abc" / "chatSessions")
    found = detect(home, env, {"copilot_chat"})
    assert [(s.agent, s.path, s.sessions) for s in found] == [("copilot_chat", str(storage), 1)]


# -- end to end --------------------------------------------------------------------------------

def test_ingest_finds_the_sessions_under_home(tmp_path: Path, chinvex_home: Path, monkeypatch: pytest.MonkeyPatch):
    home = tmp_path / "home"
    workspace = home / ".config" / "Code" / "User" / "workspaceStorage" / "5d41402abc4b2a76"
    shutil.copytree(SAMPLES, workspace / "chatSessions")
    (workspace / "workspace.json").write_text(json.dumps({"folder": "file:///home/user/projects/testing-git"}))
    for var in ("XDG_CONFIG_HOME", "VSCODE_PORTABLE", "VSCODE_APPDATA", "APPDATA"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(home))
    detected = run_cli_in_process("sessions", "detect", "--json")
    assert detected.code == 0 and "copilot_chat" in detected.json["agents"], detected
    assert run_cli_in_process("context", "create", "X", "--sessions", "auto").code == 0
    result = run_cli_in_process("ingest", "--context", "X", "--json")
    assert_no_traceback(result)
    assert result.code == 0 and result.json["errors"] == [], result
    got = run_cli("get", LOG_ID, "--context", "X", "--json", env={"HOME": str(home)})
    assert got.code == 0 and got.json["thread_id"] == LOG_ID, got
    turns = got.json["turns"]
    assert {"user", "assistant", "tool"} <= {t["role"] for t in turns} and all(t["ts"] for t in turns)
    exported = tmp_path / "export.jsonl"
    assert run_cli_in_process("export", "--context", "X", "--out", str(exported)).code == 0
    docs = {r["metadata"]["thread_id"]: r for r in map(json.loads, exported.read_text().splitlines())
            if r["kind"] == "document"}
    assert sorted(docs) == sorted([FLAT_ID, LOG_ID])
    assert {d["metadata"]["source"] for d in docs.values()} == {"copilot_chat"}
    assert docs[FLAT_ID]["metadata"]["cwd"] == "/home/user/projects/testing-git"
