"""Adapters of the other agents on real files of shapes their own tests had not met (provenance:
the PROVENANCE.md in each sample's folder under tests/fixtures/samples/<agent>/<source>/).

Cursor before 0.43 (November 2024): a real per-workspace `state.vscdb`
(`%APPDATA%/Cursor/User/workspaceStorage/<hash>/state.vscdb`) that slevin48/cursor-history
(MIT) committed. Its chats live in the `ItemTable` only (`workbench.panel.aichat.view.aichat.
chatdata` tabs and `composer.composerData` composers with inline bubbles); there is no
`cursorDiskKV` table, which the reader used to require, so the whole file was refused.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections import Counter
from pathlib import Path

from chinvex.models.sources import AdapterOptions, SkippedSource, SourceCandidate
from chinvex_adapters.cursor.adapter import CursorAdapter
from helpers import FIXTURES, parse_file

CURSOR_WS_HASH = "6ae6eb0531606929850a78b0a04649f1"
CURSOR_WS_DB = (FIXTURES / "cursor" / "slevin48-cursor-history" / "User" / "workspaceStorage" / CURSOR_WS_HASH
                / "state.vscdb")
CHAT_KEY = "workbench.panel.aichat.view.aichat.chatdata"
COMPOSERS_KEY = "composer.composerData"


def _item(db: Path, key: str) -> dict:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return json.loads(conn.execute("SELECT value FROM ItemTable WHERE key=?", (key,)).fetchone()[0])
    finally:
        conn.close()


def _lf(text: str) -> str:
    return text.replace("\r\n", "\n").strip()


def _user_texts(doc) -> list[str]:
    return [t.text for t in doc.turns if t.role == "user"]


def test_cursor_workspace_db_before_0_43_gives_its_chat_tabs_and_composers():
    docs, report = parse_file(CursorAdapter(), CURSOR_WS_DB)
    kinds = Counter(d.metadata.get("legacy_kind", "composer") for d in docs)
    # 5 Chat panel tabs and 26 composers that hold bubbles (of 26 listed).
    assert kinds == {"chat_tab": 5, "composer": 26}
    assert report.counts["legacy_workspace_conversations"] == 31
    assert all(d.metadata["store"] == "ide_workspace_db" for d in docs)
    by_id = {d.thread_id: d for d in docs}

    tab = by_id["2aa483d1-573c-4039-ae4e-7415e28d2605"]
    assert tab.title == "Ionic App Sidebar Customization Guide"
    users = _user_texts(tab)
    assert len(users) == 16
    assert users[0].startswith("We are building an ionic app for android\nadd the following elements to the sidebar:")
    assert users[4].startswith("remove the green line appearing in the command window when entering a command.")
    assistants = [t for t in tab.turns if t.role == "assistant"]
    assert len(assistants) == 16 and all(t.meta.get("model") == "claude-3.5-sonnet" for t in assistants)
    assert assistants[0].text.startswith("I'll help you modify the sidebar to match your requirements.")
    # Chat bubbles carry no time: the tab's lastSendTime (1731818231743 ms) stands for them.
    assert tab.turns[0].ts.isoformat() == "2024-11-17T04:37:11.743000+00:00"

    composer = by_id["a76419da-5045-4dcb-a1d4-307eab526a30"]
    assert composer.title == "create settings page that enables to enter OpenAI API key,"
    assert [t.role for t in composer.turns] == ["user", "assistant"] * 7
    assert _user_texts(composer)[4] == "change menu name parameters to settings"
    assert composer.turns[0].ts.isoformat() == "2024-11-17T03:55:37.024000+00:00"  # createdAt

    # Every prompt the database holds comes through, in a conversation of its own tab or composer
    # (pasted Windows terminal output has CRLF line ends, which the text cleaning makes LF).
    stored = [_lf(b["text"]) for t in _item(CURSOR_WS_DB, CHAT_KEY)["tabs"] for b in t["bubbles"]
              if b.get("type") == "user" and b.get("text", "").strip()]
    stored += [_lf(b["text"]) for c in _item(CURSOR_WS_DB, COMPOSERS_KEY)["allComposers"]
               for b in c["conversation"] if b.get("type") == 1 and b.get("text", "").strip()]
    got = [t.text.strip() for d in docs for t in d.turns if t.role == "user"]
    assert len(stored) == 63 and sorted(got) == sorted(stored)


def _modern_workspace(folder: Path) -> None:
    """A workspace database of a later Cursor: composers listed by id only (their bubbles are in
    globalStorage), in the shape of the real file's own key."""
    folder.mkdir(parents=True)
    conn = sqlite3.connect(folder / "state.vscdb")
    conn.execute("CREATE TABLE ItemTable (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB)")
    conn.execute("INSERT INTO ItemTable VALUES (?, ?)", (COMPOSERS_KEY, json.dumps(
        {"allComposers": [{"composerId": "0b5e9d52-93a4-4b61-9a0e-6f1c1f3c1a77", "name": "later"}],
         "selectedComposerId": "0b5e9d52-93a4-4b61-9a0e-6f1c1f3c1a77"})))
    conn.commit()
    conn.close()


def test_cursor_workspace_storage_is_listed_and_read_with_its_folder(tmp_path: Path):
    storage = tmp_path / "Cursor" / "User" / "workspaceStorage"
    old = storage / CURSOR_WS_HASH
    old.mkdir(parents=True)
    shutil.copy(CURSOR_WS_DB, old / "state.vscdb")
    # workspace.json was not committed upstream; this one names the folder the database's own
    # paths point at (c:\Users\user\Documents\mobilechat).
    (old / "workspace.json").write_text(json.dumps({"folder": "file:///c%3A/Users/user/Documents/mobilechat"}))
    (old / "anysphere.cursor-retrieval").mkdir()
    (old / "anysphere.cursor-retrieval" / "embeddings.jsonl").write_text('{"role": "user"}\n')
    _modern_workspace(storage / "f00d")

    adapter = CursorAdapter()
    items = list(adapter.enumerate(storage, AdapterOptions(context_name="t")))
    cands = [i for i in items if isinstance(i, SourceCandidate)]
    skipped = {Path(i.source_uri).parent.name: i for i in items if isinstance(i, SkippedSource)
               if Path(i.source_uri).name == "state.vscdb"}
    assert [c.path for c in cands] == [old / "state.vscdb"]
    assert skipped["f00d"].reason == "ignored" and "without chats" in skipped["f00d"].detail
    assert not any("anysphere.cursor-retrieval" in i.source_uri for i in items)  # an extension's folder

    assert adapter.recognises(old / "state.vscdb") and not adapter.recognises(storage / "f00d" / "state.vscdb")
    from chinvex.models.sources import ParseReport

    docs = list(adapter.parse(cands[0], ParseReport(), None))
    assert len(docs) == 31 and {d.metadata["cwd"] for d in docs} == {"c:/Users/user/Documents/mobilechat"}


def test_cursor_deleted_composer_rows_are_skipped_not_unreadable(tmp_path: Path):
    """A real global state.vscdb of Cursor 1.x (AdamEps/urpg_app, no licence: read locally,
    not copied) has 33 `composerData:<id>` rows of which 16 hold SQL NULL, composers the user
    deleted. Each became a candidate that failed as 'not a readable Cursor composer'. This
    database is written here in that shape: one live composer, one NULL row."""
    db = tmp_path / "globalStorage" / "state.vscdb"
    db.parent.mkdir()
    live, gone = "21bcf92c-5808-47db-8faa-d847cfad6512", "c1d511c9-7afb-4287-a713-58e89c272a99"
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE ItemTable (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB)")
    conn.execute("CREATE TABLE cursorDiskKV (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB)")
    headers = [{"bubbleId": "u1", "type": 1}, {"bubbleId": "a1", "type": 2}]
    conn.executemany("INSERT INTO cursorDiskKV VALUES (?, ?)", [
        (f"composerData:{live}", json.dumps({"_v": 3, "composerId": live, "name": "Issues with loading past chats",
                                             "fullConversationHeadersOnly": headers, "createdAt": 1757725421401,
                                             "lastUpdatedAt": 1757725521401})),
        (f"composerData:{gone}", None),
        (f"bubbleId:{live}:u1", json.dumps({"_v": 2, "type": 1, "bubbleId": "u1",
                                            "text": "Past chats IN CURSOR aren't working."})),
        (f"bubbleId:{live}:a1", json.dumps({"_v": 2, "type": 2, "bubbleId": "a1",
                                            "text": "Cursor's chat history is not loading."})),
    ])
    conn.commit()
    conn.close()
    adapter = CursorAdapter()
    items = list(adapter.enumerate(db.parent, AdapterOptions(context_name="t")))
    cands = [i for i in items if isinstance(i, SourceCandidate)]
    skipped = [i for i in items if isinstance(i, SkippedSource)]
    assert [c.thread_id for c in cands] == [live]
    assert [(s.source_uri, s.reason) for s in skipped] == [(f"{db}#{gone}", "ignored")]
    assert "deleted" in skipped[0].detail
    docs, report = parse_file(adapter, db)
    assert [d.thread_id for d in docs] == [live] and [t.text for t in docs[0].turns][0].startswith("Past chats")
    assert report.counts["composers_deleted"] == 1 and report.counts["composers_unreadable"] == 0


def _cline_ui_only_task(root: Path, records: list[dict]) -> Path:
    task = root / "saoudrizwan.claude-dev" / "tasks" / "1760534080239"
    task.mkdir(parents=True)
    path = task / "ui_messages.json"
    path.write_text(json.dumps(records), encoding="utf-8")
    return path


def test_cline_ui_only_task_streamed_command_output_is_one_result(tmp_path: Path):
    """Cline streams a command's output as several `ask: command_output` records. In a real task
    folder of which only ui_messages.json was committed (Jeehunter/mcp-vscode-server, no
    licence: read locally, not copied), 62 chunks for 28 commands gave 17 tool results that found
    no call. Written here in that shape: one command, output in three chunks (the first empty,
    as in the real file) around a request record."""
    from chinvex_adapters.cline.adapter import ClineAdapter

    ts = 1760534182682
    path = _cline_ui_only_task(tmp_path, [
        {"ts": ts - 9000, "type": "say", "say": "text", "text": "create the MCP server project"},
        {"ts": ts, "type": "say", "say": "command", "text": "npx @modelcontextprotocol/create-server vscode"},
        {"ts": ts + 615, "type": "ask", "ask": "command_output", "text": ""},
        {"ts": ts + 2452, "type": "ask", "ask": "command_output", "text": "Need to install the following packages"},
        {"ts": ts + 3000, "type": "say", "say": "api_req_started", "text": "{}"},
        {"ts": ts + 9880, "type": "ask", "ask": "command_output", "text": "? What is the name of your server?"},
        {"ts": ts + 20000, "type": "say", "say": "text", "text": "The project was created."},
    ])
    docs, report = parse_file(ClineAdapter(), path)
    tools = [t for t in docs[0].turns if t.role == "tool"]
    assert len(tools) == 1 and tools[0].tool.name == "execute_command"
    assert "Need to install the following packages\n? What is the name of your server?" in tools[0].text
    assert report.counts["tool_results_unmatched"] == 0
    assert [t.text for t in docs[0].turns if t.role == "assistant"] == ["The project was created."]


def test_cline_ui_only_task_keeps_a_prompt_said_twice(tmp_path: Path):
    """Without API history there is no second copy of the user's words to drop. A real
    ui_messages.json (haram-333/fineye, no licence: read locally, not copied) has "yo", an API
    failure and a resume, then "yo" again three minutes later; the second was dropped as a
    repeat. Written here in that shape."""
    from chinvex_adapters.cline.adapter import ClineAdapter

    ts = 1767647682018
    path = _cline_ui_only_task(tmp_path, [
        {"ts": ts - 60000, "type": "say", "say": "text", "text": "look at this project"},
        {"ts": ts - 50000, "type": "say", "say": "completion_result", "text": "It is an OCR app."},
        {"ts": ts - 7000, "type": "ask", "ask": "resume_task", "text": ""},
        {"ts": ts, "type": "say", "say": "user_feedback", "text": "yo"},
        {"ts": ts + 43000, "type": "ask", "ask": "api_req_failed", "text": "{\"message\":\"Failed to create stream\"}"},
        {"ts": ts + 183000, "type": "ask", "ask": "resume_task", "text": ""},
        {"ts": ts + 190391, "type": "say", "say": "user_feedback", "text": "yo"},
    ])
    docs, report = parse_file(ClineAdapter(), path)
    users = [t for t in docs[0].turns if t.role == "user"]
    assert [t.text for t in users] == ["look at this project", "yo", "yo"]
    assert users[2].ts.isoformat() == "2026-01-05T21:17:52.409000+00:00"
    assert report.counts["user_repeats_dropped"] == 0


OPENCODE_DB = FIXTURES / "opencode" / "jwp23-dotfiles" / "sqlite-migrated-by-1.3.2" / "opencode.db"


def test_kilo_code_database_is_located_and_read_as_kilo(tmp_path: Path):
    """Kilo Code (the VS Code extension since it became an OpenCode fork, and the `kilo` CLI)
    keeps its sessions in `~/.local/share/kilo/kilo.db` with OpenCode's schema (its docs:
    `kilo db path`; `KILO_DB` overrides). No store listed that folder, so none of its
    sessions was found. No real kilo.db with a licence was found: this test puts the real
    OpenCode 1.3.2 database of the opencode samples where Kilo keeps its own."""
    from chinvex_adapters.kit.registry import Where
    from chinvex_adapters.opencode import STORES
    from chinvex_adapters.opencode.adapter import OpenCodeAdapter

    home = tmp_path / "home"
    kilo_dir = home / ".local" / "share" / "kilo"
    kilo_dir.mkdir(parents=True)
    shutil.copy(OPENCODE_DB, kilo_dir / "kilo.db")
    (kilo_dir / "auth.json").write_text('{"kilo": {"type": "oauth", "access": "x"}}')
    stores = {s.label: s for s in STORES}
    kilo = stores["Kilo Code (kilo.db)"]
    assert kilo.agent == "kilo" and kilo.reader == "opencode"
    assert kilo.locate(Where(home, {})) == [kilo_dir]
    assert kilo.locate(Where(home, {"KILO_DB": "kilo-dev.db"}))[-1] == kilo_dir / "kilo-dev.db"

    adapter = OpenCodeAdapter()
    items = list(adapter.enumerate(kilo_dir, AdapterOptions(context_name="t")))
    cands = [i for i in items if isinstance(i, SourceCandidate)]
    assert len(cands) == 2 and not any("auth.json" in i.source_uri for i in cands)
    from chinvex.models.sources import ParseReport

    docs = [d for c in cands for d in adapter.parse(c, ParseReport(), None)]
    assert {d.source for d in docs} == {"kilo"} and {d.metadata["format"] for d in docs} == {"kilo"}
    assert {d.title for d in docs} == {"Adding /story command to README"}
    assert sum(1 for d in docs for t in d.turns if t.role == "user") == 5

    # The same database in OpenCode's own folder stays OpenCode's.
    docs, _ = parse_file(adapter, OPENCODE_DB)
    assert {d.source for d in docs} == {"opencode"}


def test_ingest_reads_the_chats_of_a_cursor_workspace_database(tmp_path: Path, chinvex_home: Path,
                                                             monkeypatch):
    """End to end: `sessions auto` finds workspaceStorage, the real 2024 database is one source
    of 31 conversations, and `chinvex get` finds a Chat panel tab by its id."""
    from helpers import assert_no_traceback, run_cli, run_cli_in_process

    home = tmp_path / "home"
    workspace = home / ".config" / "Cursor" / "User" / "workspaceStorage" / CURSOR_WS_HASH
    workspace.mkdir(parents=True)
    shutil.copy(CURSOR_WS_DB, workspace / "state.vscdb")
    (workspace / "workspace.json").write_text(json.dumps({"folder": "file:///c%3A/Users/user/Documents/mobilechat"}))
    _modern_workspace(workspace.parent / "f00d")
    monkeypatch.setenv("HOME", str(home))
    for var in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "APPDATA", "CURSOR_CONFIG_DIR"):
        monkeypatch.delenv(var, raising=False)
    assert run_cli_in_process("context", "create", "X", "--sessions", "auto").code == 0
    result = run_cli_in_process("ingest", "--context", "X", "--json")
    assert_no_traceback(result)
    assert result.code == 0 and result.json["errors"] == [] and result.json["sources"]["indexed"] == 1, result
    tab = run_cli("get", "2aa483d1-573c-4039-ae4e-7415e28d2605", "--context", "X", "--json", env={"HOME": str(home)})
    assert tab.code == 0 and tab.json["title"] == "Ionic App Sidebar Customization Guide", tab
    assert tab.json["turns"][0]["text"].startswith("We are building an ionic app for android")
    assert sum(1 for t in tab.json["turns"] if t["role"] == "user") == 16


def test_cline_subagents_result_finds_its_use_subagents_call(tmp_path: Path):
    """Cline (April 2026, native tool calls) answers a `use_subagents` tool_use with a user text
    `[subagents] Result:` whose name is not the call's. In a real task (mike4567/MRA04242026,
    no licence: read locally, not copied) the result became a tool turn of its own and the call
    kept no result. Written here in that shape."""
    from chinvex_adapters.cline.adapter import ClineAdapter

    task = tmp_path / "saoudrizwan.claude-dev" / "tasks" / "1777073160794"
    task.mkdir(parents=True)
    ts = 1777073160794
    history = [
        {"role": "user", "ts": ts, "content": [{"type": "text", "text": "<task>\nReview the GCP setup of this app\n</task>"}]},
        {"role": "assistant", "ts": ts + 12700, "content": [{
            "type": "tool_use", "id": "tooluse_QaAk", "call_id": "tooluse_QaAk", "name": "use_subagents",
            "input": {"prompt_1": "Analyze the terraform files", "prompt_2": "List the GCP resources"}}]},
        {"role": "user", "ts": ts + 99343, "content": [
            {"type": "text", "text": "[subagents] Result:\nSubagent results:\nTotal: 2\nSucceeded: 2\n\n[1] COMPLETED - "
                                     "terraform declares a Cloud SQL instance"},
            {"type": "text", "text": "<environment_details>\n# Current Time\n4/24/2026\n</environment_details>"}]},
        {"role": "assistant", "ts": ts + 105000, "content": [{"type": "text", "text": "The app runs on Cloud SQL."}]},
    ]
    (task / "api_conversation_history.json").write_text(json.dumps(history), encoding="utf-8")
    docs, report = parse_file(ClineAdapter(), task / "api_conversation_history.json")
    tools = [t for t in docs[0].turns if t.role == "tool"]
    assert [t.tool.name for t in tools] == ["use_subagents"]
    assert "terraform declares a Cloud SQL instance" in tools[0].text and "Analyze the terraform files" in tools[0].text
    assert report.counts["tool_results_unmatched"] == 0
