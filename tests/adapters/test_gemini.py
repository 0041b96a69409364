"""The gemini adapter on real Gemini CLI chats (tests/fixtures/samples/gemini_cli): legacy
whole-file JSON of 0.2x and 0.3x, the append-only JSONL of 0.39+ (upserts, `$set`), and
copies made in tmp_path for what no real file shows (rewinds, replaced message lists, a resumed
legacy chat beside its JSONL, sub-agents, damaged files)."""

from __future__ import annotations

import hashlib
import json
import shutil
from collections import Counter
from pathlib import Path

import pytest

from chinvex.models import ConversationDoc
from chinvex.models.sources import AdapterOptions, ParseReport, SkippedSource, SourceCandidate, UnrecognisedSource
from chinvex_adapters.gemini import STORES
from chinvex_adapters.gemini.adapter import GeminiAdapter
from chinvex_adapters.kit.registry import Where
from chinvex_adapters.kit.sessionfile import session_doc_id
from helpers import FIXTURES, assert_no_traceback, parse_file, run_cli, run_cli_in_process

SAMPLES = FIXTURES / "gemini_cli"
ENTIRE = SAMPLES / "entireio-cli" / "tmp"
HASH_DIR = ENTIRE / "7e8989f71805c3147f6be9b7a71de2a156f8face69f9380beeeb8a777414f21c" / "chats"
APPEND = HASH_DIR / "session-2026-01-10T02-08-faff42ab.json"
COLORS = HASH_DIR / "session-2026-01-15T20-51-f7633853.json"
WARNING_ONLY = (ENTIRE / "41d597d6d7729546af33d345040d55a7018cf1136e850b23d51c76d6192af7fb" / "chats"
                / "session-2026-02-03T04-09-29eb990e.json")
TRACKER = SAMPLES / "vibecodingtracker" / "tmp"
READMES = TRACKER / "vibecodingtracker" / "chats" / "session-2026-03-27T10-19-8a20078e.json"
DISCORD = TRACKER / "discordbot" / "chats" / "session-2026-04-23T12-52-0ab84937.jsonl"
DISCORD_ID = "0ab84937-9fe7-4284-986a-33c832af0b6a"
ADAPTER = GeminiAdapter()
LATER = {"id": "extra-1", "timestamp": "2026-01-11T09:00:00.000Z", "type": "user", "content": "and once more"}
"""A prompt a newer CLI appended after resuming a legacy chat into a .jsonl."""


def parse(path: Path) -> tuple[list[ConversationDoc], ParseReport]:
    return parse_file(ADAPTER, path)


def one(path: Path) -> ConversationDoc:
    docs, _ = parse(path)
    assert len(docs) == 1
    return docs[0]


def tools(doc: ConversationDoc, name: str) -> list:
    return [t for t in doc.turns if t.tool is not None and t.tool.name == name]


def texts(doc: ConversationDoc, role: str) -> list[str]:
    return [t.text for t in doc.turns if t.role == role and not t.meta.get("thinking")]


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]


def write_lines(path: Path, records: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), "utf-8")
    return path


# -- legacy JSON -------------------------------------------------------------------------------

def test_legacy_chat_keeps_prompts_thoughts_calls_results_and_the_write():
    doc = one(APPEND)
    assert doc.source == "gemini" and doc.thread_id == "faff42ab-6ea5-4f78-b8c4-f7dd6272af08"
    assert doc.doc_id == session_doc_id("gemini", doc.thread_id)
    assert doc.title == "add new text to test-gemini.txt"
    assert texts(doc, "user") == ["add new text to test-gemini.txt", '",how are you"']
    assert texts(doc, "assistant")[-1] == 'I have added the text ",how are you" to `test-gemini.txt`.'
    thinking = [t for t in doc.turns if t.meta.get("thinking")]
    assert len(thinking) == 4
    assert thinking[0].text.startswith("**Gathering User Input**\nI'm currently focused")
    assert thinking[0].ts.isoformat() == "2026-01-10T02:08:35.617000+00:00"  # the thought's own time
    read = tools(doc, "read_file")[0]
    assert read.meta["tool_use_id"] == "read_file-1768010961326-7266fc4bc8133"
    assert read.meta["status"] == "success"
    assert "file_path: test-gemini.txt" in read.text and read.text.endswith("Result:\nhello from gemini")
    write = tools(doc, "write_file")[0]
    assert write.meta["edits"] == [{"path": "test-gemini.txt", "op": "write",
                                    "new_text": "hello from gemini,how are you"}]
    written = "/Users/user/Documents/entire/devenv/entireio/cli/test-gemini.txt"
    assert f"Successfully overwrote file: {written}" in write.text
    assert doc.created_at.isoformat() == "2026-01-10T02:08:26.108000+00:00"
    assert doc.updated_at.isoformat() == "2026-01-10T02:09:27.575000+00:00"
    assert all(t.ts is not None and t.ts.tzinfo is not None for t in doc.turns)
    meta = doc.metadata
    assert meta["model"] == "gemini-2.5-flash" and meta["file_format"] == "json (legacy)"
    assert meta["usage"]["input"] == 12874 + 11998 + 12018 + 12075 and meta["usage"]["thoughts"] == 232
    assert next(t for t in doc.turns if t.role == "assistant").meta["tokens"]["total"] == 12923
    # The hash is of the un-anonymised path: no folder is claimed, the hash is kept.
    assert "cwd" not in meta and meta["project_hash"].startswith("7e8989f7") and doc.links.repo_paths == []


def test_legacy_chat_of_0_23_shell_calls_and_the_update_notice():
    doc = one(COLORS)
    assert doc.metadata["cli_version"] == "0.23.0"
    notice = next(t for t in doc.turns if t.role == "system")
    assert notice.meta["notice"] == "info" and notice.text.startswith("Gemini CLI update available! 0.23.0")
    shells = tools(doc, "run_shell_command")
    assert len(shells) == 6 and "command: git status" in shells[1].text
    assert "Exit Code: 0" in shells[1].text
    assert tools(doc, "write_file")[0].meta["edits"][0]["path"] == "docs/blue.md"


def test_part_array_prompt_four_writes_and_a_folder_proven_by_the_project_hash(tmp_path: Path):
    doc = one(READMES)
    assert texts(doc, "user")[0].startswith("請幫我依照專案實際狀況更新 README.md")
    assert doc.metadata["model"] == "gemini-3.1-pro-preview-customtools" and doc.metadata["kind"] == "main"
    writes = tools(doc, "write_file")
    assert [w.meta["edits"][0]["path"] for w in writes] == ["README.md", "README.zh-CN.md", "README.zh-TW.md",
                                                            "CONTRIBUTING.md"]
    assert writes[3].meta["edits"][0]["new_text"].startswith("# Contributing to Vibe Coding Tracker")
    assert len([t for t in doc.turns if t.meta.get("thinking")]) == 3
    assert "cwd" not in doc.metadata  # no store around the fixture, and its hash is of another path
    # Hash era: a path its tools reported whose sha256 is the file's projectHash is its folder.
    root = "/home/user/repo/VibeCodingTracker"
    digest = hashlib.sha256(root.encode()).hexdigest()
    data = json.loads(READMES.read_text("utf-8"))
    data["projectHash"] = digest
    copy = tmp_path / "tmp" / digest / "chats" / READMES.name
    copy.parent.mkdir(parents=True)
    copy.write_text(json.dumps(data, ensure_ascii=False), "utf-8")
    found = one(copy)
    assert found.metadata["cwd"] == root and found.metadata["cwd_from"] == "projectHash"
    assert found.links.repo_paths == [root]
    assert tools(found, "write_file")[0].meta["edits"][0]["abs_path"] == f"{root}/README.md"


def test_a_session_of_only_a_warning_is_no_conversation():
    docs, report = parse(WARNING_ONLY)
    assert docs == [] and report.counts["sessions_without_messages"] == 1


# -- current JSONL -----------------------------------------------------------------------------

def test_jsonl_replays_upserts_and_keeps_what_the_user_typed():
    doc = one(DISCORD)
    assert doc.thread_id == DISCORD_ID and doc.metadata["file_format"] == "jsonl"
    assert doc.metadata["messages"] == 11 and doc.metadata["messages_rewritten"] == 5
    calls = [t for t in doc.turns if t.role == "tool"]
    assert len(calls) == 12 and len({t.meta["tool_use_id"] for t in calls}) == 12  # each call once
    init = next(t for t in doc.turns if t.role == "user")
    assert init.text == "/init" and init.meta["sent_chars"] > 1000
    assert doc.title.startswith("幫我做一個小修改 請幫我將上面確保執行時要透過 uv run 來執行")
    auto = next(t for t in doc.turns if t.text == "System: Please continue.")
    assert auto.role == "system" and auto.meta["auto_continue"] is True
    assert [t.text for t in doc.turns if t.meta.get("notice")] == [
        "Empty GEMINI.md created. Now analyzing the project to populate it.", "Request cancelled."]
    replace = tools(doc, "replace")[0]
    edit = replace.meta["edits"][0]
    assert edit["path"] == "GEMINI.md" and edit["op"] == "edit"
    assert edit["old_text"] == "專案統一使用 `uv` 進行管理，不應直接使用 `pip`。"
    assert "都透過 `uv run` 來執行" in edit["new_text"]
    assert "Successfully modified file: /home/user/repo/discordbot/GEMINI.md" in replace.text
    created = tools(doc, "write_file")[0].meta["edits"][0]
    assert created["path"] == "GEMINI.md" and created["new_text"].startswith("# GEMINI.md - Project Context")
    assert set(doc.metadata["models"]) == {"gemini-3-flash-preview", "gemini-3.1-pro-preview"}
    assert doc.metadata["topics"][0] == "產生專案指令文件 (GEMINI.md)"
    assert doc.updated_at.isoformat() == "2026-04-23T12:58:35.591000+00:00"


def test_the_folder_comes_from_the_store_registry_or_the_project_root_marker(tmp_path: Path):
    home = tmp_path / ".gemini"
    chats = home / "tmp" / "discordbot" / "chats"
    chats.mkdir(parents=True)
    shutil.copy(DISCORD, chats / DISCORD.name)
    registry = {"projects": {"/home/user/repo/discordbot": "discordbot"}}
    (home / "projects.json").write_text(json.dumps(registry))
    doc = one(chats / DISCORD.name)
    assert doc.metadata["cwd"] == "/home/user/repo/discordbot" and doc.metadata["cwd_from"] == "projects.json"
    assert tools(doc, "replace")[0].meta["edits"][0]["abs_path"] == "/home/user/repo/discordbot/GEMINI.md"
    (home / "tmp" / "discordbot" / ".project_root").write_text("/srv/discordbot\n")
    assert one(chats / DISCORD.name).metadata["cwd"] == "/srv/discordbot"


def test_rewind_and_replaced_message_lists_are_applied(tmp_path: Path):
    records = lines(DISCORD)
    second_prompt = "231038fa-bbfb-4b43-9a30-b8b7fcf54895"
    rewound = one(write_lines(tmp_path / "rewound.jsonl", [*records, {"$rewindTo": second_prompt}]))
    assert "幫我做一個小修改" not in " ".join(texts(rewound, "user"))
    assert not tools(rewound, "replace")
    assert rewound.metadata["rewinds"] == 1 and tools(rewound, "write_file")
    kept = [r for r in records if r.get("id") in (second_prompt, "0cf1a565-3230-4426-bdfc-d4d7af19f867")]
    replaced = {"$set": {"messages": kept, "summary": "uv run"}}
    compressed = one(write_lines(tmp_path / "set.jsonl", [*records, replaced]))
    assert [t.text for t in compressed.turns] == [kept[0]["content"], kept[1]["content"][0]["text"]]
    assert compressed.title == "uv run" and compressed.metadata["message_lists_replaced"] == 1
    gone = write_lines(tmp_path / "gone.jsonl", [*records, {"$rewindTo": "no-such-id"}])
    docs, report = parse(gone)
    assert docs == [] and report.counts["sessions_without_messages"] == 1


def test_a_resumed_legacy_chat_and_its_jsonl_are_one_document(tmp_path: Path):
    data = json.loads(APPEND.read_text("utf-8"))
    header = {k: v for k, v in data.items() if k != "messages"}
    resumed = write_lines(tmp_path / (APPEND.name + "l"),
                          [header, *data["messages"], {"$set": {"sessionId": data["sessionId"]}}, LATER])
    old, new = one(APPEND), one(resumed)
    assert old.doc_id == new.doc_id and old.thread_id == new.thread_id
    assert max([old, new], key=GeminiAdapter.precedence_key) is new
    assert texts(new, "user")[-1] == "and once more"


def test_subagent_chats_keep_their_own_id_and_name_their_parent(tmp_path: Path):
    records = lines(DISCORD)
    records[0] = {**records[0], "sessionId": "sub-1", "kind": "subagent", "directories": ["/w"]}
    sub = write_lines(tmp_path / "tmp" / "p" / "chats" / DISCORD_ID / "sub-1.jsonl", records)
    verdict = ADAPTER.accepts(f"p/chats/{DISCORD_ID}/sub-1.jsonl", _entry(sub))
    assert verdict is True
    doc = one(sub)
    assert doc.thread_id == "sub-1" and doc.metadata["parent_session_id"] == DISCORD_ID
    assert doc.metadata["kind"] == "subagent" and doc.metadata["directories"] == ["/w"]


def test_newer_part_array_records_and_the_old_edit_tool_name(tmp_path: Path):
    records = lines(DISCORD)[:2]
    args = {"file_path": "/w/a.py", "old_string": "x = 1", "new_string": "x = 2"}
    model_turn = {"id": "g-1", "timestamp": "2026-05-01T10:00:00.000Z", "type": "gemini",
                  "model": "gemini-3-pro",
                  "content": [{"text": "weighing options", "thought": True, "thoughtSignature": "c2ln"},
                              {"text": "Editing now."},
                              {"functionCall": {"id": "c1", "name": "smart_edit", "args": args}}]}
    response = {"id": "c1", "name": "smart_edit", "response": {"output": "Edited /w/a.py"}}
    result = {"id": "u-1", "timestamp": "2026-05-01T10:00:01.000Z", "type": "user",
              "content": [{"functionResponse": response}]}
    image = {"id": "u-2", "timestamp": "2026-05-01T10:00:02.000Z", "type": "user",
             "content": [{"text": "what is in this picture"},
                         {"inlineData": {"mimeType": "image/png", "data": "QUJD" * 500}}]}
    doc = one(write_lines(tmp_path / "session-new.jsonl", [*records, model_turn, result, image]))
    thinking = next(t for t in doc.turns if t.meta.get("thinking"))
    assert thinking.text == "weighing options" and thinking.meta["model"] == "gemini-3-pro"
    assert "Editing now." in texts(doc, "assistant")
    call = tools(doc, "smart_edit")[0]
    assert call.meta["edits"] == [{"path": "/w/a.py", "op": "edit", "abs_path": "/w/a.py",
                                   "old_text": "x = 1", "new_text": "x = 2"}]
    assert call.text.endswith("Result:\nEdited /w/a.py")
    assert not [t for t in doc.turns if t.meta.get("unmatched_result")]
    picture = doc.turns[-1]
    assert picture.text == "what is in this picture" and "QUJD" not in picture.text
    refs = [(a.kind, a.mime_type, a.size_bytes) for a in picture.attachments]
    assert refs == [("image", "image/png", 1500)]


# -- damaged and foreign files -----------------------------------------------------------------

def test_damaged_files_are_one_line_each_and_a_cut_jsonl_keeps_its_complete_lines(tmp_path: Path):
    raw = APPEND.read_bytes()
    cut = tmp_path / "session-cut.json"
    cut.write_bytes(raw[: len(raw) // 2])
    empty = tmp_path / "session-empty.json"
    empty.write_bytes(b"")
    array = tmp_path / "session-array.json"
    array.write_text(json.dumps([{"sessionId": "x", "messageId": 0, "type": "user", "message": "hi"}]))
    empty_log = tmp_path / "session-empty.jsonl"
    empty_log.write_bytes(b"\n")
    for path in (cut, empty, array, empty_log):
        with pytest.raises(UnrecognisedSource) as info:
            parse(path)
        assert str(info.value).startswith(str(path)) and "\n" not in str(info.value)
    data = DISCORD.read_bytes()
    torn = tmp_path / "session-torn.jsonl"
    torn.write_bytes(data[: data.index(b'"id":"231038fa') + 40])
    docs, report = parse(torn)
    assert len(docs) == 1 and report.counts["partial_last_line"] == 1
    assert docs[0].metadata["partial_last_line"]
    assert "幫我做一個小修改" not in " ".join(texts(docs[0], "user")) and tools(docs[0], "write_file")


def test_fields_of_the_wrong_type_cost_only_themselves(tmp_path: Path):
    records = lines(DISCORD)
    records[0]["directories"] = "/not/a/list"
    wrong = {"toolCalls": 5, "thoughts": "x", "tokens": "many", "model": 3}
    odd = [{**r, **wrong} if r.get("type") == "gemini" else r for r in records]
    odd += [{"id": "w-1", "type": "user", "content": 7, "timestamp": []},
            {"id": "w-2", "type": "gemini", "content": [{"functionCall": "nope"}, 4], "toolCalls": [
                {"id": 1, "name": ["x"], "args": "not json", "result": 9, "status": {}}]},
            {"id": "w-3", "type": "banner", "content": "?"}, {"$set": "nothing"}, {"$rewindTo": 4}]
    docs, report = parse(write_lines(tmp_path / "session-odd.jsonl", odd))
    assert len(docs) == 1 and report.counts["messages_unknown_type:banner"] == 1
    assert not report.counts["messages_failed"]
    assert "/init" in texts(docs[0], "user") and "directories" not in docs[0].metadata


def test_recognises_its_chats_and_no_other_agents_files():
    mine = [APPEND, COLORS, WARNING_ONLY, READMES, DISCORD]
    assert all(ADAPTER.recognises(p) for p in mine)
    kinds = {p.name for p in FIXTURES.iterdir() if p.is_dir() and p.name != "gemini_cli"}
    assert {"claude-code", "codex-rollout", "qwen_code", "cline", "pi"} <= kinds
    others = [p for kind in sorted(kinds) for p in sorted((FIXTURES / kind).rglob("*")) if p.is_file()]
    assert len(others) > 100
    assert [p for p in others if ADAPTER.recognises(p)] == []


def _entry(path: Path):
    from chinvex_adapters.kit.walk import WalkEntry

    st = path.stat()
    return WalkEntry(path, path.name, st.st_size, st.st_mtime_ns)


def test_enumeration_reads_chats_only_and_says_why_not_the_rest(tmp_path: Path):
    home = tmp_path / ".gemini"
    project = home / "tmp" / "proj"
    chats = project / "chats"
    chats.mkdir(parents=True)
    shutil.copy(APPEND, chats / APPEND.name)
    shutil.copy(DISCORD, chats / DISCORD.name)
    (chats / (DISCORD.name + ".tmp-123")).write_text("{}")
    (project / "logs.json").write_text("[]")
    (project / "checkpoint-mytag.json").write_text('{"history": []}')
    (project / "checkpoints").mkdir()
    (project / "checkpoints" / "2026-01-01T00_00_00_000Z-a.txt-replace.json").write_text("{}")
    (project / "logs").mkdir()
    (project / "logs" / f"session-{DISCORD_ID}.jsonl").write_text("{}\n")
    (home / "history" / "proj").mkdir(parents=True)
    (home / "history" / "proj" / "HEAD").write_text("ref: refs/heads/main\n")
    (home / "settings.json").write_text("{}")
    items = list(ADAPTER.enumerate(home, AdapterOptions(context_name="t")))
    kept = sorted(Path(i.source_uri).name for i in items if isinstance(i, SourceCandidate))
    assert kept == sorted([APPEND.name, DISCORD.name])
    skipped = {Path(i.source_uri).name: i.detail for i in items if isinstance(i, SkippedSource)}
    assert "prompt log" in skipped["logs.json"] and "checkpoint" in skipped["checkpoint-mytag.json"]
    assert "activity log" in skipped[f"session-{DISCORD_ID}.jsonl"]
    assert "temporary" in skipped[DISCORD.name + ".tmp-123"]
    assert "HEAD" not in skipped and "settings.json" not in skipped  # only tmp/ is walked
    shutil.rmtree(home / "tmp")
    assert list(ADAPTER.enumerate(home, AdapterOptions(context_name="t"))) == []  # no chats yet
    in_chats = ADAPTER.enumerate(HASH_DIR, AdapterOptions(context_name="t"))  # a chats folder as the root
    assert [Path(i.source_uri).name for i in in_chats] == [APPEND.name, COLORS.name]


def test_stores_follow_gemini_cli_home(tmp_path: Path):
    where = Where(home=tmp_path / "u", env={"GEMINI_CLI_HOME": str(tmp_path / "g")})
    assert STORES[0].locate(where) == [tmp_path / "g" / ".gemini", tmp_path / "u" / ".gemini"]
    assert STORES[0].locate(Where(home=tmp_path / "u", env={})) == [tmp_path / "u" / ".gemini"]


# -- end to end --------------------------------------------------------------------------------

def test_ingest_finds_the_chats_under_home(tmp_path: Path, chinvex_home: Path,
                                           monkeypatch: pytest.MonkeyPatch):
    home = tmp_path / "home"
    store = home / ".gemini"
    shutil.copytree(ENTIRE, store / "tmp")
    shutil.copytree(DISCORD.parent, store / "tmp" / "discordbot" / "chats")
    (store / "tmp" / "discordbot" / ".project_root").write_text("/home/user/repo/discordbot")
    data = json.loads(APPEND.read_text("utf-8"))  # APPEND resumed by a newer CLI: one document
    header = {k: v for k, v in data.items() if k != "messages"}
    resumed_copy = store / "tmp" / HASH_DIR.parent.name / "chats" / (APPEND.name + "l")
    write_lines(resumed_copy, [header, *data["messages"], LATER])
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("GEMINI_CLI_HOME", raising=False)
    detected = run_cli_in_process("sessions", "detect", "--json")
    assert detected.code == 0 and "gemini" in detected.json["agents"], detected
    assert run_cli_in_process("context", "create", "X", "--sessions", "auto").code == 0
    result = run_cli_in_process("ingest", "--context", "X", "--json")
    assert_no_traceback(result)
    assert result.code == 0 and result.json["errors"] == [], result
    got = run_cli("get", DISCORD_ID, "--context", "X", "--json", env={"HOME": str(home)})
    assert got.code == 0 and got.json["thread_id"] == DISCORD_ID, got
    turns = got.json["turns"]
    assert {"user", "assistant", "tool", "system"} <= {t["role"] for t in turns}
    assert all(t["ts"] for t in turns)
    exported = tmp_path / "export.jsonl"
    assert run_cli_in_process("export", "--context", "X", "--out", str(exported)).code == 0
    docs = {r["metadata"]["thread_id"]: r for r in lines(exported) if r["kind"] == "document"}
    assert sorted(docs) == sorted([DISCORD_ID, "faff42ab-6ea5-4f78-b8c4-f7dd6272af08",
                                   "f7633853-6663-4dbb-bbf4-6159afa29df8"])  # the warning-only chat is none
    assert all(d["metadata"]["source"] == "gemini" for d in docs.values())
    assert docs[DISCORD_ID]["metadata"]["cwd"] == "/home/user/repo/discordbot"
    resumed = docs["faff42ab-6ea5-4f78-b8c4-f7dd6272af08"]  # the .json and its .jsonl: one document
    assert resumed["source_uri"].endswith(".jsonl") and len(resumed["origins"]) == 2
    assert Counter(t["role"] for t in resumed["turns"])["user"] == 3
    again = run_cli_in_process("ingest", "--context", "X", "--json")
    assert again.code == 0 and again.json["errors"] == [], again
    assert result.json["sources"]["indexed"] == 5 and again.json["sources"]["unchanged"] == 5
