"""The Cline and Kimi adapters on real task and session files (provenance: the PROVENANCE.md of
each kind's folder under tests/fixtures/samples).

Cline 3.14/3.15 task folders (`saoudrizwan.claude-dev/tasks/<ms id>/`), copied by a user out of
VS Code's globalStorage into jasonleonardvolk/Tori (MIT): XML tool calls in the API history,
API messages without times (the times come from ui_messages.json), plan/act mode switches,
`write_to_file`, commands, an MCP call, `attempt_completion`, resumed tasks.

A Kimi CLI (Python, 0.42 dev build) session in the earliest layout,
`~/.kimi/sessions/<md5(work dir)>/<uuid>.jsonl`, from an SWE-bench run the Kimi CLI developers
committed to a pull request of MoonshotAI/kimi-cli (Apache-2.0): a real model's tool calls with
JSON-string arguments, `_checkpoint` / `_usage` bookkeeping lines, file edits.
"""

from __future__ import annotations

import json
from pathlib import Path

from chinvex_adapters.cline.adapter import ClineAdapter
from chinvex_adapters.kimi.adapter import KimiAdapter
from helpers import FIXTURES, parse_file, tool_turns

TORI = FIXTURES / "cline" / "cline-jasonleonardvolk-tori" / "saoudrizwan.claude-dev" / "tasks"
ESLINT = TORI / "1746979936610"
MCP = TORI / "1746818422143"
KIMI_ID = "531d195b-6436-426e-b010-4bf723a992de"
KIMI_LEGACY = (FIXTURES / "kimi" / "kimi-cli-pr127" / "sessions" / "00d5060aaec3fda180930ea52304b87b"
               / f"{KIMI_ID}.jsonl")
ADAPTER = ClineAdapter()


def one(path: Path, adapter=ADAPTER):
    docs, report = parse_file(adapter, path)
    assert len(docs) == 1, report
    return docs[0], report


def words(doc, role: str) -> list[str]:
    return [t.text for t in doc.turns if t.role == role and not t.meta.get("thinking")]


def ms(turn) -> int:
    return round(turn.ts.timestamp() * 1000)


def ui_records(task: Path) -> list[dict]:
    return json.loads((task / "ui_messages.json").read_text(encoding="utf-8"))


def test_cline_plan_act_task_with_a_new_file():
    doc, report = one(ESLINT / "api_conversation_history.json")
    assert doc.source == "cline" and doc.thread_id == "1746979936610"
    assert doc.metadata["extension_id"] == "saoudrizwan.claude-dev"
    assert doc.metadata["store_format"] == "task_folder"
    assert doc.metadata["api_messages"] == 28 and doc.metadata["ui_records"] == 71
    # From <environment_details> "# Current Working Directory (c:/Users/user/Desktop/tori/kha) Files".
    assert doc.metadata["cwd"] == "c:/Users/user/Desktop/tori/kha"
    # task_metadata.json: model_usage switches plan -> act -> plan -> act, one model.
    assert doc.metadata["modes"] == ["plan", "act"]
    assert doc.metadata["models_used"] == ["claude-3-7-sonnet-20250219"]
    assert doc.metadata["files_in_context"] == [".eslintrc.js", "package.json", ".babelrc", ".eslintrc.json",
                                                "client/src/components/AgentPanel/MemoryAgent.jsx"]
    assert doc.metadata["files_edited_by_agent"] == [".eslintrc.json"]
    # The sum of the 14 api_req_started records.
    usage = doc.metadata["usage"]
    counts = (usage["tokensIn"], usage["tokensOut"], usage["cacheWrites"], usage["cacheReads"])
    assert counts == (140, 2820, 24263, 239914)

    users = words(doc, "user")
    # The task the user pasted (a previous tool's failure), without <task> and the environment.
    assert len(users) == 2
    assert users[0].startswith('"path": "C:\\\\Users\\\\user\\\\Desktop\\\\tori\\\\kha\\\\.eslintrc.json",')
    assert "failure in mcp tool execution: server process has ended" in users[0]
    assert users[1].startswith("do i do this? Import and mount ZoningInspector anywhere")
    assert not any("<task>" in t.text or "environment_details" in t.text or "# VSCode Open Tabs" in t.text
                   for t in doc.turns if t.role != "tool")

    # API messages carry no time: every turn takes one from ui_messages.json.
    assert all(t.ts is not None for t in doc.turns)
    ui = ui_records(ESLINT)
    first_request = next(r["ts"] for r in ui if r.get("say") == "api_req_started")
    assert ms(doc.turns[0]) == first_request == 1746979936769
    assert doc.created_at.isoformat() == "2025-05-11T16:12:16.769000+00:00"
    feedback = next(r for r in ui if r.get("say") == "user_feedback")
    asked = next(t for t in doc.turns if t.role == "user" and t.text.startswith("do i do this?"))
    assert ms(asked) >= feedback["ts"] and ms(asked) - feedback["ts"] < 2000
    stamps = [ms(t) for t in doc.turns]
    assert stamps == sorted(stamps)

    # Reasoning kept only in the UI comes in as thinking, ahead of the reply it led to.
    thoughts = [t for t in doc.turns if t.meta.get("thinking")]
    assert len(thoughts) == 14 == sum(1 for r in ui if r.get("say") == "reasoning")
    assert thoughts[0].text.startswith("Let me analyze the user's task. It appears they're having an issue with ESLint")

    # The plan_mode_respond <response> is the model's answer; the mode switch is its result.
    answers = words(doc, "assistant")
    assert any(a.startswith("Based on my analysis of your project files, I can see that you need to create")
               for a in answers)
    switches = tool_turns(doc, "plan_mode_respond")
    assert len(switches) == 2
    assert all(s.text.endswith("[The user has switched to ACT MODE, so you may now proceed with the task.]")
               for s in switches)

    write = tool_turns(doc, "write_to_file")
    assert len(write) == 1 and report.counts["file_edits"] == 1
    assert write[0].meta["edits"] == [{"path": ".eslintrc.json", "op": "write",
                                       "abs_path": "c:\\Users\\user\\Desktop\\tori\\kha\\.eslintrc.json",
                                       "new_text": '{\n  "parser": "@babel/eslint-parser"\n}'}]
    assert "Result:\nThe content was successfully saved to .eslintrc.json." in write[0].text

    assert [t.text.split("\n")[1] for t in tool_turns(doc, "read_file")] == [
        "path: .eslintrc.js", "path: package.json", "path: .babelrc",
        "path: client/src/components/AgentPanel/MemoryAgent.jsx"]
    assert [t.text.split("\n")[1] for t in tool_turns(doc, "list_files")] == [
        "path: client/src", "path: client/src/zoning", "path: client/src/components",
        "path: client/src/components/AgentPanel"]
    find = tool_turns(doc, "execute_command")[0]
    assert 'command: find src client -type f -name "*.jsx"' in find.text
    assert "saoudrizwan.claude-dev-3.15.0" in find.text  # the extension's own error, Cline 3.15.0

    # attempt_completion's <result> is words; the API error that ends the history is not.
    assert any(a.startswith("I've created the `.eslintrc.json` file in your project root") for a in answers)
    assert len(tool_turns(doc, "attempt_completion")) == 1
    assert not any("[Response interrupted by API Error]" in t.text for t in doc.turns)
    assert report.counts["responses_interrupted"] == 3
    assert "tool_results_unmatched" not in report.counts
    # The last turn is the UI's reasoning after the last API message (the task was then interrupted).
    assert doc.turns[-1].meta.get("thinking")
    assert doc.turns[-1].text.startswith("Now I need to look at the ZoningInspector component")


def test_cline_task_setting_up_an_mcp_server():
    doc, report = one(MCP / "api_conversation_history.json")
    assert doc.source == "cline" and doc.thread_id == "1746818422143"
    assert doc.metadata["modes"] == ["act"] and doc.metadata["cwd"] == "c:/Users/user/Desktop/tori/kha"
    assert doc.metadata["api_messages"] == 24 and doc.metadata["ui_records"] == 70
    assert doc.metadata["usage"]["cost"] > 0.28
    assert "task_metadata.json" not in doc.metadata.get("transcripts", [])
    users = words(doc, "user")
    # The task as typed (the UI's first record), trailing blank lines dropped.
    assert users == [next(r["text"] for r in ui_records(MCP) if r.get("say") == "text").rstrip()]
    assert users[0].startswith("Set up the MCP server from "
                               "https://github.com/modelcontextprotocol/servers/tree/main/src/filesystem")
    assert doc.title.startswith("Set up the MCP server from https://github.com/modelcontextprotocol")
    assert doc.created_at.isoformat() == "2025-05-09T19:20:22.227000+00:00"
    assert doc.updated_at.isoformat() == "2025-05-09T19:23:02.136000+00:00"

    docs_tool = tool_turns(doc, "load_mcp_documentation")
    assert len(docs_tool) == 1 and "## Creating an MCP Server" in docs_tool[0].text

    commands = [t.text.split("\n")[1] for t in tool_turns(doc, "execute_command")]
    assert len(commands) == 7  # 7 <execute_command> in the API history, 7 ask:"command" in the UI
    assert commands[0].startswith('command: dir "c:\\Users\\user\\AppData\\Roaming\\Code\\User\\globalStorage'
                                  '\\saoudrizwan.claude-dev')
    assert commands[-1] == "command: npx -y @modelcontextprotocol/server-filesystem"
    npx = tool_turns(doc, "execute_command")[-1]
    assert "Usage: mcp-server-filesystem <allowed-directory> [additional-directories...]" in npx.text

    write = tool_turns(doc, "write_to_file")
    assert len(write) == 1 and report.counts["file_edits"] == 1
    edit = write[0].meta["edits"][0]
    settings = ("c:\\Users\\user\\AppData\\Roaming\\Code\\User\\globalStorage\\saoudrizwan.claude-dev"
                "\\settings\\cline_mcp_settings.json")
    assert edit["op"] == "write" and edit["path"] == edit["abs_path"] == settings
    config = json.loads(edit["new_text"])
    server = config["mcpServers"]["github.com/modelcontextprotocol/servers/tree/main/src/filesystem"]
    assert server["command"] == "npx" and server["args"][:2] == ["-y", "@modelcontextprotocol/server-filesystem"]

    mcp = tool_turns(doc, "use_mcp_tool")
    assert len(mcp) == 1
    assert "server_name: github.com/modelcontextprotocol/servers/tree/main/src/filesystem" in mcp[0].text
    assert "tool_name: list_allowed_directories" in mcp[0].text
    assert '"message":"Not connected"' in mcp[0].text and "saoudrizwan.claude-dev-3.14.1" in mcp[0].text

    answers = words(doc, "assistant")
    assert answers[-1].startswith("I've successfully set up the Filesystem MCP server according to the requirements:")
    assert answers[-1].rstrip().endswith("only operate within the directories you've allowed.")
    assert report.counts["tool_calls"] == 12
    assert "tool_results_unmatched" not in report.counts


def test_ui_messages_alone_rebuild_the_cline_task(tmp_path: Path):
    """Without the API history (it is the file Cline writes last), the UI records still give the
    words, the file the agent created and the command, with their own times."""
    task = tmp_path / "saoudrizwan.claude-dev" / "tasks" / ESLINT.name
    task.mkdir(parents=True)
    (task / "ui_messages.json").write_bytes((ESLINT / "ui_messages.json").read_bytes())
    doc, _ = one(task / "ui_messages.json")
    assert doc.source == "cline" and doc.thread_id == ESLINT.name
    users = words(doc, "user")
    assert users[0].startswith('"path": "C:\\\\Users\\\\user\\\\Desktop\\\\tori\\\\kha\\\\.eslintrc.json",')
    assert any(u.startswith("do i do this? Import and mount ZoningInspector") for u in users)
    created = tool_turns(doc, "newFileCreated")
    assert len(created) == 1 and created[0].meta["edits"][0]["path"] == ".eslintrc.json"
    assert '"parser": "@babel/eslint-parser"' in created[0].meta["edits"][0]["new_text"]
    assert doc.created_at.isoformat().startswith("2025-05-11T16:12:16")
    assert any(a.startswith("I've created the `.eslintrc.json` file") for a in words(doc, "assistant"))


# -- Kimi CLI (Python), legacy <uuid>.jsonl session ------------------------------------------------

def _kimi_lines() -> list[dict]:
    return [json.loads(line) for line in KIMI_LEGACY.read_text(encoding="utf-8").splitlines()]


def test_kimi_cli_legacy_session_from_a_real_run():
    adapter = KimiAdapter()
    assert adapter.recognises(KIMI_LEGACY)
    doc, report = one(KIMI_LEGACY, adapter)
    lines = _kimi_lines()
    assert doc.source == "kimi" and doc.thread_id == KIMI_ID
    assert doc.metadata["layout"] == "kimi_cli_legacy"
    # Bookkeeping: 29 `_checkpoint` lines (ids 0-28), the last `_usage` is 20384; none is a turn.
    assert doc.metadata["checkpoints"] == 29 == sum(1 for d in lines if d["role"] == "_checkpoint")
    assert doc.metadata["context_tokens"] == 20384
    assert not any("token_count" in t.text or "_checkpoint" in t.text for t in doc.turns)

    users = words(doc, "user")
    assert users == [lines[1]["content"]]
    assert users[0].startswith("You will be provided with a partial code base and an issue statement")
    assert "`ColumnTransformer.set_output` ignores the `remainder` if it's an estimator" in users[0]

    # No wire.jsonl beside the earliest layout: every turn takes the file's mtime.
    assert doc.metadata["times_from"] == "file mtime (no wire.jsonl)"
    mtime = KIMI_LEGACY.stat().st_mtime
    assert {t.ts for t in doc.turns} == {doc.created_at} and abs(doc.created_at.timestamp() - mtime) < 1e-5

    calls = [c for d in lines if d["role"] == "assistant" for c in d.get("tool_calls") or []]
    assert report.counts["tool_calls"] == len(calls) == 27
    names = [t.tool.name for t in doc.turns if t.role == "tool"]
    assert names == [c["function"]["name"] for c in calls]
    assert {n: names.count(n) for n in set(names)} == {"Bash": 17, "WriteFile": 4, "StrReplaceFile": 2,
                                                        "Think": 2, "ReadContext": 2}
    # Every call has its result (27 `tool` lines), joined by tool_call_id.
    results = {d["tool_call_id"]: d for d in lines if d["role"] == "tool"}
    assert len(results) == 27
    tools = [t for t in doc.turns if t.role == "tool"]
    assert [t.meta["tool_use_id"] for t in tools] == [c["id"] for c in calls]
    assert all("\n\nResult:\n" in t.text for t in tools)
    assert "tool_results_unmatched" not in report.counts
    first_run = next(t for t in tools if t.tool.name == "Bash")
    assert "command: cd /testbed && python reproduce_issue.py" in first_run.text
    assert "With remainder=VarianceThreshold (current broken behavior):" in first_run.text
    read = tools[names.index("ReadContext")]
    assert "# ColumnTransformer Implementation Analysis Report" in read.text

    # Edits: WriteFile (path + content) and StrReplaceFile (edit.old / edit.new), from the
    # JSON-string arguments.
    assert report.counts["file_edits"] == 6
    assert doc.metadata["files_edited"] == [
        "/testbed/reproduce_issue.py", "/testbed/sklearn/compose/_column_transformer.py", "/testbed/test_fix.py",
        "/testbed/test_remainder_set_output_fix.py", "/testbed/test_edge_cases.py"]
    replaces = [json.loads(c["function"]["arguments"]) for c in calls if c["function"]["name"] == "StrReplaceFile"]
    edits = [t.meta["edits"][0] for t in tools if t.tool.name == "StrReplaceFile"]
    assert [(e["path"], e["op"], e["old_text"], e["new_text"]) for e in edits] == [
        (r["path"], "edit", r["edit"]["old"], r["edit"]["new"]) for r in replaces]
    assert "Handle remainder transformer if it's an estimator" in edits[0]["new_text"]
    write = next(t for t in tools if t.tool.name == "WriteFile")
    written = json.loads(calls[names.index("WriteFile")]["function"]["arguments"])
    assert write.meta["edits"] == [{"path": "/testbed/reproduce_issue.py", "op": "write",
                                    "abs_path": "/testbed/reproduce_issue.py", "new_text": written["content"]}]

    answers = words(doc, "assistant")
    assert answers[0].startswith("I'll help you resolve this issue with `ColumnTransformer.set_output`")
    assert answers[-1].startswith("Perfect! The fix is working correctly. Let me summarize what was done:")
