"""The qwen adapter on real Qwen Code 0.13 chats (tests/fixtures/samples/qwen_code), copies
made in tmp_path for what no real file shows (rewinds, titles, rewritten records, newer prompt
payloads, damaged files), its strict sniffing against Claude Code, and ingests: from Qwen's own
store, and from a Claude Code projects folder where a Qwen chat lies among Claude's."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import pytest

from chinvex.models import ConversationDoc
from chinvex.models.sources import AdapterOptions, ParseReport, SkippedSource, SourceCandidate, UnrecognisedSource
from chinvex_adapters.claude_code.adapter import ClaudeCodeAdapter
from chinvex_adapters.kit.registry import Where
from chinvex_adapters.qwen import STORES
from chinvex_adapters.qwen.adapter import QwenAdapter
from helpers import FIXTURES, assert_no_traceback, parse_file, run_cli_in_process

SAMPLES = FIXTURES / "qwen_code"
PROJECT = SAMPLES / "hockeyscrapper" / "projects" / "c--users-user-se-toolkit-lab-8"
FACADE_ID = "6af11f56-0827-497c-b897-6069305c5126"
DECORATOR_ID = "596e5cb4-5eab-4ebe-a15e-cb0514e15e4b"
FACADE = PROJECT / "chats" / f"{FACADE_ID}.jsonl"
DECORATOR = PROJECT / "chats" / f"{DECORATOR_ID}.jsonl"
CWD = "c:\\Users\\user\\se-toolkit-lab-8"
ADAPTER = QwenAdapter()


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


def records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]


def write_lines(path: Path, items: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in items), "utf-8")
    return path


# -- real chats ---------------------------------------------------------------------------------

def test_chat_keeps_prompts_reasoning_words_calls_results_and_writes():
    doc = one(FACADE)
    assert doc.source == "qwen" and doc.thread_id == FACADE_ID and doc.metadata["cwd"] == CWD
    assert doc.links.repo_paths == [CWD]
    meta = doc.metadata
    assert meta["version"] == "0.13.0" and meta["git_branch"] == "a" and meta["model"] == "coder-model"
    assert meta["context_window_size"] == 1000000 and meta["api_errors"]["RateLimitError"] == 1
    assert meta["usage"]["input"] > 100000 and meta["records"] == 33
    first = doc.turns[0]
    assert first.role == "user" and first.text.startswith("d:\\AWA2\\dfd.cpp\n\nреши")
    assert [a.kind for a in first.attachments] == ["image", "image"]
    pasted = "C:\\Users\\user\\.qwen\\tmp\\clipboard\\clipboard-1774962902279-8eb5f0d1-d65c-451e-a8a5-a287196ffe2b.png"
    assert first.attachments[0].path == pasted
    thinking = doc.turns[1]
    assert thinking.meta["thinking"] and thinking.text.startswith("Нужно сначала прочитать")
    assert doc.turns[2].text.startswith("Вижу код паттерна Facade на C++")
    assert doc.turns[2].meta["model"] == "coder-model"
    assert doc.turns[1].meta["usage"]["promptTokenCount"] == 19487
    read = tools(doc, "read_file")[0]
    assert read.meta["tool_use_id"] == "call_0ab2cebea7c24bfa80c7fab9" and read.meta["status"] == "success"
    writes = [w for w in tools(doc, "write_file") if w.meta.get("edits")]
    assert len(writes) == 3 and writes[0].meta["edits"][0]["path"] == "d:\\AWA2\\dfd.cpp"
    assert writes[0].meta["edits"][0]["abs_path"] == "d:\\AWA2\\dfd.cpp"
    assert "// Subsystem" in writes[0].meta["edits"][0]["new_text"]
    assert "Successfully overwrote file: d:\\AWA2\\dfd.cpp." in writes[0].text
    shell = tools(doc, "run_shell_command")[0]
    assert "Command: g++ d:\\AWA2\\dfd.cpp -o d:\\AWA2\\dfd.exe" in shell.text and "light off" in shell.text
    stamps = [t.ts for t in doc.turns]
    assert all(s is not None and s.tzinfo is not None for s in stamps) and len(set(stamps)) >= 10
    assert doc.created_at.isoformat() == "2026-03-31T13:15:02.375000+00:00"


def test_a_failed_edit_and_a_cancelled_write_change_nothing():
    doc = one(FACADE)
    edit = tools(doc, "edit")[0]
    assert edit.meta["status"] == "error" and edit.meta["is_error"] and edit.meta["edit_not_applied"]
    assert "edits" not in edit.meta
    assert "Edit error: Failed to edit, could not find the string to replace." in edit.text
    cancelled = next(t for t in tools(doc, "write_file")
                     if t.meta["tool_use_id"] == "call_89d3170f3e1f4681875eaf09")
    assert cancelled.meta["status"] == "cancelled" and cancelled.meta["result_from"] == "telemetry"
    assert 'Tool "write_file" was canceled by the user.' in cancelled.text and "edits" not in cancelled.meta
    assert doc.metadata["files_edited"] == ["d:\\AWA2\\dfd.cpp"]


def test_records_are_read_in_file_order_not_from_the_last_leaf():
    doc = one(DECORATOR)
    # A walk of parentUuid from the last line drops these replies and the read_file call.
    replies = texts(doc, "assistant")
    assert any(t.startswith("Файл `drink_decorator.cpp` уже готов и содержит полную") for t in replies)
    read = tools(doc, "read_file")[0]
    assert read.meta["status"] == "success" and "#include <memory>" in read.text
    calls = [t for t in doc.turns if t.role == "tool"]
    assert len(calls) == 19 and Counter(t.meta.get("status") for t in calls)["cancelled"] == 11
    asked = tools(doc, "ask_user_question")
    assert len(asked) == 3 and all('Parameter "questions" must be an array.' in t.text for t in asked)
    todo = tools(doc, "todo_write")[0]
    assert "Todos have been modified successfully" in todo.text
    assert len(texts(doc, "user")) == 5 and doc.title == "Untitled-1"
    created = tools(doc, "write_file")[0].meta["edits"][0]
    assert created["path"] == f"{CWD}\\drink_decorator.cpp" and "class" in created["new_text"]


# -- shapes no real file shows ------------------------------------------------------------------

def test_rewind_title_rewritten_records_and_newer_prompt_payloads(tmp_path: Path):
    base = records(FACADE)
    header = {k: base[0][k] for k in ("sessionId", "cwd", "version", "gitBranch")}
    second_prompt = next(i for i, r in enumerate(base) if r["type"] == "user" and i > 0)
    rewind = {**header, "uuid": "rw-1", "parentUuid": base[second_prompt - 1]["uuid"],
              "timestamp": "2026-03-31T13:19:00.000Z", "type": "system", "subtype": "rewind",
              "systemPayload": {"truncatedCount": 20}}
    title = {**header, "uuid": "t-1", "parentUuid": "rw-1", "timestamp": "2026-03-31T13:19:01.000Z",
             "type": "system", "subtype": "custom_title", "systemPayload": {"customTitle": "Facade lab"}}
    hooked = "typed <qwen:user-prompt-submit-context>hook</qwen:user-prompt-submit-context>"
    prompt = {**header, "uuid": "u-9", "parentUuid": "t-1", "timestamp": "2026-03-31T13:19:02.000Z",
              "type": "user", "message": {"role": "user", "parts": [{"text": hooked}]},
              "systemPayload": {"displayText": "typed again", "attachmentReferences": [
                  {"type": "image", "attachmentId": "a1", "mimeType": "image/png", "size": 10}]}}
    notice = {**prompt, "uuid": "u-10", "subtype": "notification", "systemPayload": {},
              "message": {"role": "user", "parts": [{"text": "background task finished"}]}}
    reply = {**header, "uuid": "m-1", "parentUuid": "u-9", "timestamp": "2026-03-31T13:19:03.000Z",
             "type": "assistant", "model": "qwen3-coder-plus",
             "message": {"role": "model", "parts": [{"text": "draft"}]}}
    final = {**reply, "message": {"role": "model", "parts": [{"text": "final answer"}]}}
    doc = one(write_lines(tmp_path / "x.jsonl", [*base, rewind, title, prompt, notice, reply, final]))
    assert doc.title == "Facade lab" and doc.metadata["custom_title"] == "Facade lab"
    assert doc.metadata["rewinds"] == 1 and doc.metadata["records_rewound"] > 10
    users = texts(doc, "user")
    assert users[0].startswith("d:\\AWA2\\dfd.cpp") and users[1:] == ["typed again"]
    typed = next(t for t in doc.turns if t.text == "typed again")
    assert [a.mime_type for a in typed.attachments] == ["image/png"]
    notice = next(t for t in doc.turns if t.text == "background task finished")
    assert notice.role == "system" and notice.meta["subtype"] == "notification"
    assert "draft" not in texts(doc, "assistant") and "final answer" in texts(doc, "assistant")
    assert doc.metadata["records_rewritten"] == 1
    assert set(doc.metadata["models"]) == {"coder-model", "qwen3-coder-plus"}


def test_an_edit_that_succeeded_is_recorded_as_one(tmp_path: Path):
    changed = []
    for record in records(FACADE):
        if record.get("toolCallResult", {}).get("callId") == "call_27c5b8aed01040278a15721c":
            record["toolCallResult"]["status"] = "success"
            response = record["message"]["parts"][0]["functionResponse"]
            response["response"] = {"output": "Successfully modified file"}
        changed.append(record)
    doc = one(write_lines(tmp_path / f"{FACADE_ID}.jsonl", changed))
    edit = tools(doc, "edit")[0]
    assert edit.meta["status"] == "success" and "edit_not_applied" not in edit.meta
    change = edit.meta["edits"][0]
    assert change["path"] == "d:\\AWA2\\dfd.cpp" and change["op"] == "edit"
    assert change["old_text"].startswith("class Light {") and "\\n" in change["new_text"]


def test_fields_of_the_wrong_type_cost_only_themselves(tmp_path: Path):
    odd = []
    for n, record in enumerate(records(FACADE)):
        if record["type"] == "assistant" and n % 2:
            record = {**record, "message": {"role": "model", "parts": {"text": 5}},
                      "usageMetadata": 1, "model": 7}
        elif record["type"] == "tool_result":
            record = {**record, "toolCallResult": [], "message": "x"}
        elif record["type"] == "system":
            record = {**record, "systemPayload": "s", "subtype": ["ui"]}
        odd.append(record)
    odd.append({**odd[0], "uuid": "z", "timestamp": {},
                "message": {"role": "user", "parts": [{"text": 1}, "bare words"]}})
    docs, report = parse(write_lines(tmp_path / "odd.jsonl", odd))
    assert len(docs) == 1 and "bare words" in texts(docs[0], "user") and not report.counts["records_failed"]
    assert all(t.ts is not None for t in docs[0].turns) and report.counts["system_records:untyped"] == 17


def test_damaged_files_are_one_line_each_and_a_cut_chat_keeps_its_complete_lines(tmp_path: Path):
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    foreign = tmp_path / "foreign.jsonl"
    foreign.write_text('{"hello": "world"}\n[1, 2]\n')
    shape = tmp_path / "shape.jsonl"
    shape.write_text(json.dumps([{"uuid": "a"}]))
    for path in (empty, foreign, shape):
        with pytest.raises(UnrecognisedSource) as info:
            parse(path)
        assert str(info.value).startswith(str(path)) and "\n" not in str(info.value)
    raw = FACADE.read_bytes()
    cut = tmp_path / f"{FACADE_ID}.jsonl"
    cut.write_bytes(raw[: len(raw) // 2])
    docs, report = parse(cut)
    assert len(docs) == 1 and docs[0].thread_id == FACADE_ID and docs[0].metadata["partial_last_line"]
    assert report.counts["partial_last_line"] == 1 and len(docs[0].turns) < len(one(FACADE).turns)


def test_recognises_qwen_and_never_claude_code():
    assert ADAPTER.recognises(FACADE) and ADAPTER.recognises(DECORATOR)
    claude = sorted((FIXTURES / "claude-code").rglob("*.jsonl"))
    assert len(claude) >= 5 and not any(ADAPTER.recognises(p) for p in claude)
    assert not ClaudeCodeAdapter().recognises(FACADE) and not ClaudeCodeAdapter().recognises(DECORATOR)
    kinds = {p.name for p in FIXTURES.iterdir() if p.is_dir() and p.name != "qwen_code"}
    assert {"gemini_cli", "codex-rollout", "cline", "pi", "kimi"} <= kinds
    others = [p for kind in sorted(kinds) for p in sorted((FIXTURES / kind).rglob("*")) if p.is_file()]
    assert [p for p in others if ADAPTER.recognises(p)] == []


def test_enumeration_walks_projects_only(tmp_path: Path):
    runtime = tmp_path / ".qwen"
    chats = runtime / "projects" / PROJECT.name / "chats"
    shutil.copytree(PROJECT / "chats", chats)
    (chats / f"{FACADE_ID}.runtime.json").write_text('{"schema_version": 1}')
    (chats / "archive").mkdir()
    shutil.copy(DECORATOR, chats / "archive" / DECORATOR.name)
    (runtime / "tmp" / "abc").mkdir(parents=True)
    (runtime / "tmp" / "abc" / "logs.json").write_text("[]")
    (runtime / "debug").mkdir()
    (runtime / "debug" / "x.jsonl").write_text("{}\n")
    items = list(ADAPTER.enumerate(runtime, AdapterOptions(context_name="t")))
    kept = sorted(Path(i.source_uri).relative_to(chats).as_posix()
                  for i in items if isinstance(i, SourceCandidate))
    assert kept == sorted([FACADE.name, DECORATOR.name, f"archive/{DECORATOR.name}"])
    skipped = [i for i in items if isinstance(i, SkippedSource)]
    assert [Path(i.source_uri).name for i in skipped] == [f"{FACADE_ID}.runtime.json"]
    assert "sidecar" in skipped[0].detail
    shutil.rmtree(runtime / "projects")
    assert list(ADAPTER.enumerate(runtime, AdapterOptions(context_name="t"))) == []  # no chats yet


def test_stores_follow_the_runtime_and_home_variables(tmp_path: Path):
    env = {"QWEN_RUNTIME_DIR": str(tmp_path / "r"), "QWEN_HOME": str(tmp_path / "h")}
    where = Where(home=tmp_path / "u", env=env)
    assert STORES[0].locate(where) == [tmp_path / "r", tmp_path / "h", tmp_path / "u" / ".qwen"]
    assert STORES[0].locate(Where(home=tmp_path / "u", env={})) == [tmp_path / "u" / ".qwen"]


# -- end to end --------------------------------------------------------------------------------

def _exported(tmp_path: Path, context: str) -> dict[str, dict]:
    out = tmp_path / f"{context}.jsonl"
    assert run_cli_in_process("export", "--context", context, "--out", str(out)).code == 0
    return {r["metadata"]["thread_id"]: r for r in records(out) if r["kind"] == "document"}


def test_ingest_finds_the_chats_under_home(tmp_path: Path, chinvex_home: Path,
                                           monkeypatch: pytest.MonkeyPatch):
    home = tmp_path / "home"
    shutil.copytree(PROJECT / "chats", home / ".qwen" / "projects" / PROJECT.name / "chats")
    monkeypatch.setenv("HOME", str(home))
    for var in ("QWEN_RUNTIME_DIR", "QWEN_HOME"):
        monkeypatch.delenv(var, raising=False)
    detected = run_cli_in_process("sessions", "detect", "--json")
    assert detected.code == 0 and "qwen" in detected.json["agents"], detected
    assert run_cli_in_process("context", "create", "X", "--sessions", "auto").code == 0
    result = run_cli_in_process("ingest", "--context", "X", "--json")
    assert_no_traceback(result)
    assert result.code == 0 and result.json["errors"] == [] and result.json["sources"]["indexed"] == 2, result
    docs = _exported(tmp_path, "X")
    assert sorted(docs) == sorted([FACADE_ID, DECORATOR_ID])
    facade = docs[FACADE_ID]
    assert facade["metadata"]["source"] == "qwen" and facade["metadata"]["cwd"] == CWD
    assert {"user", "assistant", "tool"} <= {t["role"] for t in facade["turns"]}
    assert all(t["ts"] for t in facade["turns"])
    again = run_cli_in_process("ingest", "--context", "X", "--json")
    assert again.code == 0 and again.json["sources"]["unchanged"] == 2


def test_a_qwen_chat_among_claude_code_transcripts_is_read_as_qwen(tmp_path: Path, chinvex_home: Path):
    projects = tmp_path / "claude" / "projects"
    folder = projects / "-Users-example"
    folder.mkdir(parents=True)
    shutil.copy(FACADE, folder / FACADE.name)
    claude = (FIXTURES / "claude-code" / "codemie-code" / "projects" / "-tmp-private"
              / "4c2ddfdc-b619-4525-8d03-1950fb1b0257.jsonl")
    shutil.copy(claude, folder / claude.name)
    assert run_cli_in_process("context", "create", "Y", "--claude-sessions", str(projects)).code == 0
    result = run_cli_in_process("ingest", "--context", "Y", "--json")
    assert_no_traceback(result)
    assert result.code == 0 and result.json["errors"] == [], result
    docs = _exported(tmp_path, "Y")
    assert docs[FACADE_ID]["metadata"]["source"] == "qwen"
    assert docs["4c2ddfdc-b619-4525-8d03-1950fb1b0257"]["metadata"]["source"] == "claude_code"
    turns = docs[FACADE_ID]["turns"]
    assert any(t["role"] == "user" and t["text"].startswith("d:\\AWA2\\dfd.cpp") for t in turns)
    assert any(t["role"] == "assistant" and t["text"].startswith("Вижу код паттерна") for t in turns)
