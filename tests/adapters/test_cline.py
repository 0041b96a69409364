"""The cline adapter (Cline, Roo Code, Kilo Code) on the real samples in
tests/fixtures/samples/cline (see its PROVENANCE.md): a Cline SDK session and two Roo Code
task folders; plus a Cline 3.x task folder written here in the shape the notes describe (no
permissively licensed real one exists), and damaged copies."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from chinvex.models.sources import AdapterOptions, ParseReport, SkippedSource, SourceCandidate, UnrecognisedSource
from chinvex_adapters.cline.adapter import ClineAdapter
from chinvex_adapters.kit.registry import Where
from helpers import FIXTURES, assert_no_traceback, parse_file, run_cli, run_cli_in_process, tool_turns

SAMPLES = FIXTURES / "cline"
SDK_DIR = SAMPLES / "cline-sdk-cline-repo" / "data" / "sessions" / "1784094124598_rruoq"
SDK = SDK_DIR / "1784094124598_rruoq.messages.json"
LEAF_ID = "b423bff7-6fec-40fe-a00e-bb2a0ebb52f4"
LEAF = SAMPLES / "roo-jsboige-test-leaf-a1" / "tasks" / LEAF_ID
ORCH_ID = "ac8aa7b4-319c-4925-a139-4f4adca81921"
ORCH = SAMPLES / "roo-jsboige-orchestrator" / "tasks" / ORCH_ID
ADAPTER = ClineAdapter()


def parse(path: Path) -> tuple[list, ParseReport]:
    return parse_file(ADAPTER, path)


def one(path: Path):
    docs, report = parse(path)
    assert len(docs) == 1, report
    return docs[0], report


def texts(doc, role: str) -> list[str]:
    return [t.text for t in doc.turns if t.role == role and not t.meta.get("thinking")]


# -- the Cline SDK session ---------------------------------------------------------------------

def test_sdk_session_keeps_words_calls_results_and_edits():
    doc, report = one(SDK)
    assert doc.source == "cline" and doc.thread_id == "1784094124598_rruoq"
    assert doc.title.startswith("can you update @apps/examples/desktop-app/webview/components/agent-")
    assert doc.metadata["cwd"] == "/Users/example/dev/cline"
    assert doc.metadata["model"] == "anthropic/claude-opus-4.8-fast"
    assert doc.metadata["configured_model"] == "mistralai/mixtral-8x22b-instruct"
    assert doc.metadata["fork"]["forkedFromSessionId"] == "1784094053271_p8pzo"
    assert doc.metadata["usage"]["outputTokens"] > 0 and doc.metadata["usage"]["cost"] > 2
    first = doc.turns[0]
    assert first.role == "user" and first.text.startswith("can you update @apps/examples")
    # The @-mentioned file is a reference, its 20 KB of text is not in the turn.
    assert first.attachments[0].path.endswith("components/agent-sidebar.tsx")
    assert "useSidebar" not in first.text
    assert "can you make the filter icon smaller?" in texts(doc, "user")
    assert any(t.startswith("Done. I changed the `Filter` icon") for t in texts(doc, "assistant"))
    assert doc.created_at.isoformat() == "2026-07-06T22:27:48.634000+00:00"
    assert all(t.ts is not None for t in doc.turns)
    editors = tool_turns(doc, "editor")
    assert len(editors) == 4 and report.counts["file_edits"] == 4
    smaller = next(t for t in editors if 'size-3 stroke-2' in t.text)
    edit = smaller.meta["edits"][0]
    assert edit["abs_path"] == f"{doc.metadata['cwd']}/apps/examples/desktop-app/webview/components/agent-sidebar.tsx"
    assert edit["old_text"] == '\t\t\t\t\t<Filter className="size-4 stroke-2" />'
    assert edit["new_text"] == '\t\t\t\t\t<Filter className="size-3 stroke-2" />'
    assert "Result:\nedit:/Users/example/dev/cline" in smaller.text and "+217:" in smaller.text
    grep = tool_turns(doc, "run_commands")[0]
    assert grep.meta["tool_use_id"] == "toolu_01Q5oZiGR8e2vcnEKBEUpCoh" and "button.tsx:10:" in grep.text
    assert "Result:" in tool_turns(doc, "read_files")[0].text
    assert report.counts["system_prompts_left_out"] == 1 and "tool_results_unmatched" not in report.counts


# -- Roo Code task folders ---------------------------------------------------------------------

def test_roo_task_with_xml_tool_calls_and_a_new_file():
    doc, report = one(LEAF / "api_conversation_history.json")
    assert doc.source == "roo" and doc.thread_id == LEAF_ID
    assert doc.metadata["cwd"] == "d:/dev/2025-Epita-Intelligence-Symbolique"
    assert doc.metadata["model"] == "anthropic/claude-sonnet-4" and doc.metadata["modes"] == ["code"]
    assert doc.metadata["usage"]["cost"] == pytest.approx(0.098169)
    assert doc.metadata["files_edited_by_agent"] == ["mcp-debugging/test-data/test-a1.py"]
    users = texts(doc, "user")
    assert users == ["TEST-LEAF-A1: Crée le fichier mcp-debugging/test-data/test-a1.py contenant une "
                     "fonction validate_email() qui vérifie si un email est valide. La fonction doit "
                     "retourner True/False et inclure des tests basiques. Termine avec attempt_completion "
                     "en rapportant le chemin du fichier créé."]
    assert not any("environment_details" in t.text or "VSCode Open Tabs" in t.text for t in doc.turns)
    assert doc.created_at.isoformat() == "2025-09-25T15:15:55.825000+00:00"
    assert doc.updated_at.isoformat() == "2025-09-25T15:17:09.666000+00:00"
    write = tool_turns(doc, "write_to_file")[0]
    edit = write.meta["edits"][0]
    assert edit["path"] == "mcp-debugging/test-data/test-a1.py" and edit["op"] == "write"
    assert edit["abs_path"] == r"d:\dev\2025-Epita-Intelligence-Symbolique\mcp-debugging\test-data\test-a1.py"
    assert edit["new_text"].startswith('"""\nModule de validation d\'email - TEST-LEAF-A1')
    assert "def validate_email(email):" in edit["new_text"]
    assert "<operation>created</operation>" in write.text
    run = tool_turns(doc, "execute_command")[0]
    assert "command: python mcp-debugging/test-data/test-a1.py" in run.text
    assert "Tous les tests de validation d'email sont passés!" in run.text
    assert "scripts/debug_hierarchy_analysis.ps1" in tool_turns(doc, "list_files")[0].text
    # attempt_completion's result is the model's answer; the interruption notice is not words.
    answers = texts(doc, "assistant")
    assert any(a.startswith("Le fichier `mcp-debugging/test-data/test-a1.py` a été créé") for a in answers)
    assert not any("Response interrupted" in a for a in answers)
    assert report.counts["responses_interrupted"] == 1
    # XML-era Roo keeps reasoning only in ui_messages: it comes in, before the reply it led to.
    thoughts = [t for t in doc.turns if t.meta.get("thinking")]
    assert len(thoughts) == 4 and thoughts[0].text.startswith("L'utilisateur demande de créer le fichier")
    assert doc.turns.index(thoughts[0]) < doc.turns.index(tool_turns(doc, "list_files")[0])
    assert "tool_results_unmatched" not in report.counts


def test_roo_orchestrator_condensed_stretch_comes_from_the_ui():
    doc, report = one(ORCH / "api_conversation_history.json")
    assert doc.source == "roo" and doc.thread_id == ORCH_ID
    assert doc.metadata["cwd"] == "d:/dev/roo-extensions"
    assert set(doc.metadata["models"]) == {"google/gemini-2.5-pro", "claude-sonnet-4-20250514"}
    assert doc.metadata["modes"] == ["orchestrator", "code"] and doc.metadata["condense_summaries"] == 1
    assert doc.created_at.isoformat().startswith("2025-08-19T20:28:52")
    assert doc.updated_at.isoformat().startswith("2025-09-13T06:19")
    users = texts(doc, "user")
    assert users[0].startswith("Bonjour, je suis en train de réinstaller cette machine")
    # Gone from the API history (destructive condense), kept by the UI: words of both sides.
    assert any(u.startswith("Bon alors je me permets de t'intercepter") for u in users)
    assert any("RAPPORT FINAL D'ORCHESTRATION" in a for a in texts(doc, "assistant"))
    # The user's feedback is in the UI and again in the API history: once.
    feedback = [u for u in users if u.startswith("Je te passe en mode Code")]
    assert len(feedback) == 1 and report.counts["user_repeats_dropped"] == 1
    # After the last API message: a message the user typed, from the UI.
    assert users[-1].startswith("Je rajoute mon grin de sel")
    summary = next(t for t in doc.turns if t.meta.get("condense_summary"))
    assert summary.role == "assistant" and summary.text.startswith("### 1. Previous Conversation:")
    mcp = tool_turns(doc, "use_mcp_tool")
    assert [m for m in mcp if "tool_name: view_task_details" in m.text and "Messages: 2587" in m.text]
    read = tool_turns(doc, "read_file")[0]
    assert '"path": "mcps/internal/servers/roo-state-manager/src/index.ts"' in read.text
    sub = tool_turns(doc, "newTask")[0]
    assert "Rapport Technique : Analyse de l'invisibilité des tâches Roo restaurées" in sub.text
    assert "Je suis embété que tu ne trouves pas les choses." in "\n".join(users)
    assert not any("[Response interrupted by user]" in t.text for t in doc.turns)


def test_ui_messages_alone_make_the_conversation(tmp_path: Path):
    task = tmp_path / "rooveterinaryinc.roo-cline" / "tasks" / LEAF_ID
    task.mkdir(parents=True)
    shutil.copy(LEAF / "ui_messages.json", task)
    doc, _ = one(task / "ui_messages.json")
    assert doc.source == "roo" and doc.thread_id == LEAF_ID
    assert texts(doc, "user")[0].startswith("TEST-LEAF-A1: Crée le fichier")
    created = tool_turns(doc, "newFileCreated")[0]
    assert created.meta["edits"][0]["path"] == "mcp-debugging/test-data/test-a1.py"
    assert "def validate_email(email):" in created.meta["edits"][0]["new_text"]
    assert "Tous les tests de validation" in tool_turns(doc, "execute_command")[0].text
    assert doc.created_at.isoformat().startswith("2025-09-25T15:15:54")


def test_source_follows_the_extension_folder(tmp_path: Path):
    task = tmp_path / "User" / "globalStorage" / "kilocode.kilo-code" / "tasks" / LEAF_ID
    shutil.copytree(LEAF, task)
    doc, _ = one(task / "api_conversation_history.json")
    assert doc.source == "kilo" and doc.metadata["extension_id"] == "kilocode.kilo-code"


# -- a Cline 3.x task folder (the shape of the notes: no time on API messages, native calls) -----

T0 = 1769064454592
ENV = ("<environment_details>\n# Visual Studio Code Visible Files\nmain.py\n\n"
       "# Current Working Directory (/home/dev/proj) Files\nmain.py\n\n# Current Mode\nACT MODE\n"
       "</environment_details>")
INFO = {"modelId": "claude-sonnet-4-5", "providerId": "anthropic", "mode": "act"}
DIFF = "------- SEARCH\nprint('hi')\n=======\ndef greet():\n    print('hi')\n+++++++ REPLACE"
FEEDBACK = "The user provided the following feedback:\n<feedback>\nalso add a docstring\n</feedback>"
COMPLETION = "<attempt_completion>\n<result>\nAdded greet() with a docstring.\n</result>\n</attempt_completion>"


def _text(text: str) -> dict:
    return {"type": "text", "text": text}


def _use(call_id: str, name: str, **args: str) -> dict:
    return {"type": "tool_use", "id": call_id, "name": name, "input": args}


def _ui(delta: int, say: str, text: str = "", **extra) -> dict:
    return {"ts": T0 + delta, "type": "say", "say": say, "text": text, **extra}


def _cline_task(root: Path) -> Path:
    """A Cline 3.51-style task: API messages without `ts`, native calls, a result in text form."""
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo" * 300}}
    saved = "[replace_in_file for 'main.py'] Result:\nThe content was successfully saved to main.py."
    api = [
        {"role": "user", "content": [_text("<task>\nAdd a greet function\n</task>"), _text(ENV)]},
        {"role": "assistant", "modelInfo": INFO, "content": [
            {"type": "thinking", "thinking": "Read main.py first.", "signature": "c2ln"},
            _text("Reading the file."), _use("toolu_1", "read_file", absolutePath="/home/dev/proj/main.py")]},
        {"role": "user", "content": [_text("[read_file for 'main.py'] Result:\nprint('hi')"), _text(ENV)]},
        {"role": "assistant", "modelInfo": INFO, "content": [
            _use("toolu_2", "replace_in_file", absolutePath="/home/dev/proj/main.py", diff=DIFF)]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_2", "content": saved},
                                     _text(FEEDBACK), image, _text(ENV)]},
        {"role": "assistant", "modelInfo": INFO, "content": [_text(COMPLETION)]},
    ]
    ui = [_ui(0, "text", "Add a greet function"),
          _ui(100, "api_req_started", json.dumps({"request": "<task>", "tokensIn": 10, "cost": 0.01})),
          _ui(900, "reasoning", "Read main.py first.", modelInfo=INFO),
          _ui(1000, "text", "Reading the file.", modelInfo=INFO),
          _ui(2000, "api_req_started", json.dumps({"request": "[read_file]", "cost": 0.02})),
          _ui(2500, "tool", json.dumps({"tool": "editedExistingFile", "path": "main.py"})),
          _ui(2600, "user_feedback", "also add a docstring"),
          _ui(3000, "api_req_started", json.dumps({"request": "[replace_in_file]"})),
          _ui(3500, "completion_result", "Added greet() with a docstring.")]
    meta = {"files_in_context": [{"path": "main.py", "record_state": "active", "record_source": "cline_edited",
                                  "cline_read_date": T0 + 1500, "cline_edit_date": T0 + 2500}],
            "environment_history": [{"ts": T0, "os_name": "linux", "os_version": "6.8", "os_arch": "x64",
                                     "host_name": "Visual Studio Code", "host_version": "1.108.1",
                                     "cline_version": "3.51.0"}]}
    task = root / "globalStorage" / "saoudrizwan.claude-dev" / "tasks" / str(T0)
    task.mkdir(parents=True)
    for name, data in (("api_conversation_history.json", api), ("ui_messages.json", ui),
                       ("task_metadata.json", meta)):
        (task / name).write_text(json.dumps(data, separators=(",", ":")), encoding="utf-8")
    return task


def test_cline_task_takes_times_from_the_ui_and_pairs_native_calls(tmp_path: Path):
    task = _cline_task(tmp_path / "User")
    doc, report = one(task / "api_conversation_history.json")
    assert doc.source == "cline" and doc.thread_id == str(T0)
    assert doc.metadata["version"] == "3.51.0" and doc.metadata["host"] == "Visual Studio Code 1.108.1"
    assert doc.metadata["model"] == "claude-sonnet-4-5" and doc.metadata["modes"] == ["act"]
    assert doc.metadata["cwd"] == "/home/dev/proj" and doc.metadata["usage"]["cost"] == pytest.approx(0.03)
    assert texts(doc, "user") == ["Add a greet function", "also add a docstring"]
    feedback = next(t for t in doc.turns if t.text == "also add a docstring")
    assert [(a.kind, a.mime_type) for a in feedback.attachments] == [("image", "image/png")]
    assert not any("iVBORw0KGgo" in t.text for t in doc.turns)
    # The API history has the thinking: the UI's copy is not added again.
    assert [t.text for t in doc.turns if t.meta.get("thinking")] == ["Read main.py first."]
    by_text = {t.text: t for t in doc.turns if t.role != "tool"}
    stamp = lambda turn: int(turn.ts.timestamp() * 1000)  # noqa: E731
    assert stamp(by_text["Add a greet function"]) == T0 + 100  # sent by the first request
    assert stamp(by_text["Reading the file."]) == T0 + 900  # the reply began with its reasoning
    assert stamp(by_text["also add a docstring"]) == T0 + 3000
    read = tool_turns(doc, "read_file")[0]
    assert read.text.endswith("Result:\nprint('hi')")
    replace = tool_turns(doc, "replace_in_file")[0]
    assert replace.meta["edits"] == [{"path": "/home/dev/proj/main.py", "op": "edit",
                                      "abs_path": "/home/dev/proj/main.py", "old_text": "print('hi')",
                                      "new_text": "def greet():\n    print('hi')"}]
    assert "Result:\nThe content was successfully saved to main.py." in replace.text
    assert "Added greet() with a docstring." in texts(doc, "assistant")
    assert "tool_results_unmatched" not in report.counts


# -- enumeration -----------------------------------------------------------------------------

def _enumerate(root: Path) -> list:
    return list(ADAPTER.enumerate(root, AdapterOptions(context_name="t")))


def test_one_candidate_per_task_with_the_size_and_time_of_all_its_files(tmp_path: Path):
    items = _enumerate(SAMPLES)
    found = {Path(c.source_uri).parent.name: c for c in items if isinstance(c, SourceCandidate)}
    assert set(found) == {LEAF_ID, ORCH_ID, "1784094124598_rruoq", "1746979936610", "1746818422143"}
    assert found[LEAF_ID].size_bytes == sum(p.stat().st_size for p in LEAF.iterdir())
    assert found["1784094124598_rruoq"].source_uri == str(SDK)
    assert found["1784094124598_rruoq"].size_bytes == sum(p.stat().st_size for p in SDK_DIR.iterdir())
    skipped = {Path(s.source_uri).name: s.detail for s in items if isinstance(s, SkippedSource)}
    assert skipped["ui_messages.json"] == "read with api_conversation_history.json"
    assert skipped["1784094124598_rruoq.json"] == "read with 1784094124598_rruoq.messages.json"

    store = tmp_path / "saoudrizwan.claude-dev"
    task = _cline_task(tmp_path / "User").parent.parent
    shutil.copytree(task, store)
    tasks = store / "tasks" / str(T0)
    (tasks / "api_conversation_history.json.tmp.1769064454999.ab12.json").write_text("[")
    (tasks / "focus_chain_taskid_1769064454592.md").write_text("- [ ] greet")
    (store / "checkpoints" / "1234" / ".git" / "objects").mkdir(parents=True)
    (store / "checkpoints" / "1234" / "HEAD").write_text("ref: refs/heads/main")
    (store / "state").mkdir()
    index = [{"id": str(T0), "task": "Add a greet function (as the index says)", "totalCost": 0.03,
              "cwdOnTaskInitialization": "/home/dev/proj-root"}]
    (store / "state" / "taskHistory.json").write_text(json.dumps(index))
    (store / "secrets.json").write_text('{"apiKey": "sk-never-read"}')
    items = _enumerate(store)
    candidates = [c for c in items if isinstance(c, SourceCandidate)]
    assert [Path(c.source_uri).name for c in candidates] == ["api_conversation_history.json"]
    reasons = {Path(s.source_uri).name: s.detail for s in items if isinstance(s, SkippedSource)}
    assert reasons["checkpoints"].startswith("checkpoints (a shadow git repository)")
    assert reasons["secrets.json"] == "credentials: never read"
    assert reasons["api_conversation_history.json.tmp.1769064454999.ab12.json"].startswith("a temporary file")
    assert "todo list" in reasons["focus_chain_taskid_1769064454592.md"]
    assert "task index" in reasons["taskHistory.json"]
    # A change to the UI messages alone changes the task's candidate.
    before = candidates[0]
    ui = tasks / "ui_messages.json"
    os.utime(ui, ns=(before.mtime_ns + 10**9, before.mtime_ns + 10**9))
    after = next(c for c in _enumerate(store) if isinstance(c, SourceCandidate))
    assert after.source_uri == before.source_uri and after.mtime_ns == before.mtime_ns + 10**9
    doc, _ = one(Path(after.source_uri))
    assert doc.title == "Add a greet function (as the index says)"
    assert doc.metadata["cwd"] == "/home/dev/proj-root" and doc.metadata["totalCost"] == 0.03


def test_stores_are_found_in_every_editor_and_in_cline_home(tmp_path: Path):
    from chinvex_adapters.cline import STORES

    by_agent = {s.agent: s for s in STORES}
    assert {s.reader for s in STORES} == {"cline"}
    where = Where(home=tmp_path, env={"CLINE_DIR": str(tmp_path / "cd"), "APPDATA": str(tmp_path / "AD")})
    cline = [str(p) for p in by_agent["cline"].locate(where)]
    assert str(tmp_path / ".config/Code/User/globalStorage/saoudrizwan.claude-dev/tasks") in cline
    assert str(tmp_path / "AD/Cursor/User/globalStorage/saoudrizwan.claude-dev/tasks") in cline
    assert str(tmp_path / ".vscode-server/data/User/globalStorage/saoudrizwan.claude-dev/tasks") in cline
    assert str(tmp_path / "cd/data/sessions") in cline and str(tmp_path / "cd/data/tasks") in cline
    custom = Where(home=tmp_path, env={"CLINE_DATA_DIR": "/d", "CLINE_SESSION_DATA_DIR": "/s"})
    assert "/s" in [str(p) for p in by_agent["cline"].locate(custom)]
    assert "/d/tasks" in [str(p) for p in by_agent["cline"].locate(custom)]
    roo = [str(p) for p in by_agent["roo"].locate(where)]
    mac = "Library/Application Support/Code/User/globalStorage/rooveterinaryinc.roo-cline/tasks"
    assert str(tmp_path / mac) in roo
    assert any(p.endswith("kilocode.kilo-code/tasks") for p in map(str, by_agent["kilo"].locate(where)))


# -- damaged files and other agents' files ------------------------------------------------------

def test_damaged_or_foreign_files_are_one_line_each(tmp_path: Path):
    task = tmp_path / "tasks" / LEAF_ID
    task.mkdir(parents=True)
    data = (LEAF / "api_conversation_history.json").read_bytes()
    api = task / "api_conversation_history.json"
    api.write_bytes(data[: len(data) // 2])
    with pytest.raises(UnrecognisedSource) as cut:
        parse(api)
    assert str(cut.value).startswith(f"{api}: ") and "\n" not in str(cut.value)
    # Its UI messages still there: the task is read from them, with a warning.
    shutil.copy(LEAF / "ui_messages.json", task)
    doc, report = one(api)
    assert texts(doc, "user") and report.counts["api_history_unreadable"] == 1 and report.warnings
    for content, words in ((b"", "empty file"), (b'{"role": "user"}', "not a Cline"),
                           (b'[{"role": "user", "parts": [{"text": "hi"}]}]', "not a Cline")):
        api.write_bytes(content)
        (task / "ui_messages.json").unlink(missing_ok=True)
        with pytest.raises(UnrecognisedSource) as bad:
            parse(api)
        assert str(bad.value).startswith(str(api)) and words in str(bad.value) and "\n" not in str(bad.value)
    sdk = tmp_path / "s" / "1_x" / "1_x.messages.json"
    sdk.parent.mkdir(parents=True)
    raw = SDK.read_bytes()
    sdk.write_bytes(raw[: len(raw) // 3])
    with pytest.raises(UnrecognisedSource) as cut_sdk:
        parse(sdk)
    assert str(cut_sdk.value).startswith(str(sdk)) and "\n" not in str(cut_sdk.value)


def test_recognises_its_files_and_no_other_agents():
    for path in (SDK, LEAF / "api_conversation_history.json", LEAF / "ui_messages.json",
                 ORCH / "api_conversation_history.json"):
        assert ADAPTER.recognises(path), path
    assert not ADAPTER.recognises(LEAF / "task_metadata.json")
    assert not ADAPTER.recognises(SDK_DIR / "1784094124598_rruoq.json")
    kinds = {p.name for p in FIXTURES.iterdir() if p.is_dir() and p.name != "cline"}
    assert {"claude-code", "codex-rollout", "chatgpt-export", "specstory", "aider"} <= kinds
    others = [p for kind in sorted(kinds) for p in sorted((FIXTURES / kind).rglob("*")) if p.is_file()]
    assert len(others) > 20
    assert [p for p in others if ADAPTER.recognises(p)] == []


# -- end to end --------------------------------------------------------------------------------

def test_ingest_finds_roo_tasks_and_cline_sessions_under_home(tmp_path: Path, chinvex_home: Path,
                                                              monkeypatch: pytest.MonkeyPatch):
    home = tmp_path / "home"
    roo = home / ".config" / "Code" / "User" / "globalStorage" / "rooveterinaryinc.roo-cline" / "tasks"
    shutil.copytree(LEAF, roo / LEAF_ID)
    shutil.copytree(SDK_DIR, home / ".cline" / "data" / "sessions" / SDK_DIR.name)
    monkeypatch.setenv("HOME", str(home))
    for var in ("XDG_CONFIG_HOME", "APPDATA", "CLINE_DIR", "CLINE_DATA_DIR", "CLINE_SESSION_DATA_DIR"):
        monkeypatch.delenv(var, raising=False)
    detected = run_cli_in_process("sessions", "detect", "--json")
    assert detected.code == 0 and {"cline", "roo"} <= set(detected.json["agents"]), detected
    assert run_cli_in_process("context", "create", "X", "--sessions", "auto").code == 0
    result = run_cli_in_process("ingest", "--context", "X", "--json")
    assert_no_traceback(result)
    assert result.code == 0 and result.json["errors"] == [] and result.json["sources"]["indexed"] == 2, result
    got = run_cli("get", LEAF_ID, "--context", "X", "--json", env={"HOME": str(home)})
    assert got.code == 0 and got.json["thread_id"] == LEAF_ID, got
    turns = got.json["turns"]
    assert {"user", "assistant", "tool"} <= {t["role"] for t in turns} and all(t["ts"] for t in turns)
    again = run_cli_in_process("ingest", "--context", "X", "--json")
    assert again.code == 0 and again.json["sources"]["unchanged"] == 2
