"""The cursor adapter.

Real data: the two legacy plain-text agent transcripts in tests/fixtures/samples/cursor
(kylemath/microgptJS, MIT; see PROVENANCE.md there) are parsed and checked against what can
be seen in them.

No licensed real sample exists of the other stores: the JSONL transcripts, the cursor-agent
CLI's `store.db` and the IDE's `state.vscdb`. Their tests build small files and SQLite
databases in tmp_path, in the shapes documented in the format notes (tables, keys, hex meta,
protobuf root node, bubble JSON). They are NOT fixtures: they are made by this module at test
time and never committed. They check the reader against the documented shape, not against
Cursor itself.

What the Cursor tests share: fixture paths, store builders, parsing helpers.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any
from chinvex.models.sources import AdapterOptions, ParseReport, SkippedSource, SourceCandidate
from chinvex_adapters.cursor.adapter import CursorAdapter
from helpers import FIXTURES, parse_file

CURSOR = FIXTURES / "cursor" / "microgptjs" / "chat-logs"


README_LOG = CURSOR / "02-readme-and-deployment.txt"


TWEETS_LOG = CURSOR / "03-npm-package-and-tweets.txt"


ADAPTER = CursorAdapter()


SESSION_ID = "5ff63b94-f0a9-4fab-bec6-5c27bc7b39b7"


SLUG = "Users-user-microgptJS"


def parse(path: Path) -> tuple[list[Any], ParseReport]:
    return parse_file(ADAPTER, path)


def one(path: Path) -> tuple[Any, ParseReport]:
    docs, report = parse(path)
    assert len(docs) == 1
    return docs[0], report


def tools(doc: Any, name: str) -> list[Any]:
    return [t for t in doc.turns if t.role == "tool" and t.tool.name == name]


def in_project(tmp_path: Path, source: Path, *inner: str, name: str = SESSION_ID + ".txt") -> Path:
    folder = tmp_path / ".cursor" / "projects" / SLUG / "agent-transcripts"
    target = folder.joinpath(*inner, name)
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(source, target)
    return target


def _jsonl(path: Path, records: list[Any], tail: str = "") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records) + tail)
    return path


def _user(text: str) -> dict[str, Any]:
    return {"role": "user", "message": {"content": [{"type": "text", "text": text}]}}


def _assistant(*blocks: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "message": {"content": list(blocks)}}


JSONL_SESSION = [
    _user("<timestamp>Friday, Jul 31, 2026, 5:10 PM (UTC-5)</timestamp>\n<user_query>\nfix the table\n</user_query>"),
    _assistant({"type": "text", "text": "Reading the handler.\n\n[REDACTED]"},
               {"type": "tool_use", "name": "Read", "input": {"path": "/home/u/my_proj/a.go"}},
               {"type": "tool_use", "name": "StrReplace",
                "input": {"path": "/home/u/my_proj/a.go", "old_string": "x := 1", "new_string": "x := 2"}}),
    _assistant({"type": "text", "text": "[REDACTED]"}),
    _assistant({"type": "tool_use", "name": "Write", "input": {"path": "b.go", "contents": "package b\n"}},
               {"type": "tool_use", "name": "Delete", "input": {"path": "/home/u/my_proj/old.go"}}),
    _assistant({"type": "text", "text": "Done."}),
    {"type": "turn_ended", "status": "success"},
    _user("<timestamp>Friday, Jul 31, 2026, 5:20 PM (UTC-5)</timestamp>\n<user_query>\nthanks\n</user_query>"),
    {"type": "turn_ended", "status": "aborted"},
]


def _put(conn: sqlite3.Connection, data: bytes) -> bytes:
    digest = hashlib.sha256(data).digest()
    conn.execute("INSERT OR REPLACE INTO blobs(id, data) VALUES(?, ?)", (digest.hex(), data))
    return digest


CLI_MESSAGES = [
    {"role": "system", "content": "You are a coding agent."},
    {"role": "user", "content": [{"type": "text", "text": "<user_info>\nOS: linux\nWorkspace Path: /home/u/cli_proj\n</user_info>"}]},
    {"role": "user", "content": [{"type": "text", "text": "<user_query>\nrename the helper\n</user_query>"}]},
    {"id": "1", "role": "assistant", "content": [
        {"type": "reasoning", "text": "The helper lives in util.py."},
        {"type": "text", "text": "Renaming it."},
        {"type": "tool-call", "toolCallId": "call_1", "toolName": "StrReplace",
         "args": {"file_path": "util.py", "old_string": "def helper", "new_string": "def assist"}},
        {"type": "tool-call", "toolCallId": "call_2", "toolName": "Shell", "args": {"command": "pytest -q"}}]},
    {"role": "tool", "content": [
        {"type": "tool-result", "toolCallId": "call_2", "toolName": "Shell", "result": "3 passed"},
        {"type": "tool-result", "toolCallId": "call_1", "toolName": "StrReplace", "result": "ok"}]},
    {"id": "2", "role": "assistant", "content": [{"type": "text", "text": "Renamed; tests pass."}]},
]


def _cli_store(path: Path, messages: list[dict[str, Any]] = CLI_MESSAGES, *, root: bool = True,
               meta: Any = None, agent_id: str = "9b2c7f10-1111-4222-8333-444455556666") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE blobs (id TEXT PRIMARY KEY, data BLOB)")
    conn.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)")
    _put(conn, json.dumps({"role": "user", "content": "an abandoned branch"}).encode())
    refs = [_put(conn, json.dumps(m).encode()) for m in messages]
    node = b"".join(b"\x0a\x20" + ref for ref in refs) + b"\x12\x04\x0a\x02hi"
    root_id = _put(conn, node).hex() if root else "ab" * 32
    if meta is None:
        meta = json.dumps({"agentId": agent_id, "latestRootBlobId": root_id, "name": "Rename helper",
                           "mode": "default", "createdAt": 1781256145540,
                           "lastUsedModel": "claude-4-sonnet"}).encode().hex()
    conn.execute("INSERT INTO meta VALUES('0', ?)", (meta,))
    conn.commit()
    conn.close()
    return path


CID = "3f0e4c2a-7d1b-4e5f-9a8b-0c1d2e3f4a5b"


OLD_CID = "11111111-2222-4333-8444-555555555555"


BAD_CID = "bad00000-0000-4000-8000-000000000000"


DRAFT_CID = "d0000000-0000-4000-8000-000000000000"


AFTER = "after content of app.py\n"


def _bubble(bid: str, kind: int, created: str, **fields: Any) -> dict[str, Any]:
    return {"_v": 3, "type": kind, "bubbleId": bid, "createdAt": created, "text": "", **fields}


def _tool(name: str, status: str = "completed", **fields: Any) -> dict[str, Any]:
    return {"tool": 7, "name": name, "status": status, "toolCallId": f"tc-{name}", **fields}


def _ide_bubbles() -> list[dict[str, Any]]:
    return [
        _bubble("b1", 1, "2026-06-01T10:00:00.000Z", text="Fix the crash in app.py",
                context={"fileSelections": [{"uri": {"fsPath": "/work/app/app.py"}}],
                         "selectedImages": [{"path": "/tmp/shot.png", "data": "iVBORw0KGgo" * 50}]}),
        _bubble("b2", 2, "2026-06-01T10:00:05.000Z", text="Looking at the traceback.",
                thinking={"text": "The crash is an off-by-one."}, modelInfo={"modelName": "gpt-5"},
                tokenCount={"inputTokens": 100, "outputTokens": 20}),
        _bubble("b3", 2, "2026-06-01T10:00:06.000Z", capabilityType=15, toolFormerData=_tool(
            "search_replace", rawArgs="", params=json.dumps({"file_path": "app.py", "old_string": "i <= n",
                                                             "new_string": "i < n"}),
            result=json.dumps({"diff": {"chunks": [{"diffString": "-i <= n\n+i < n"}]}}))),
        _bubble("b4", 2, "2026-06-01T10:00:07.000Z", toolFormerData=_tool(
            "edit_file_v2", params=json.dumps({"relativeWorkspacePath": "app.py"}),
            result=json.dumps({"beforeContentId": "composer.content." + "0" * 64,
                               "afterContentId": "composer.content." + "1" * 64}))),
        _bubble("b5", 2, "2026-06-01T10:00:08.000Z", toolFormerData=_tool(
            "run_terminal_command_v2", rawArgs=json.dumps({"command": "python app.py"}),
            result=json.dumps({"output": "ok", "exitCode": 0}))),
        _bubble("b6", 2, "2026-06-01T10:00:09.000Z", toolFormerData=_tool(
            "read_file", status="error", rawArgs=json.dumps({"target_file": "missing.py"}),
            error=json.dumps({"clientVisibleErrorMessage": "File not found"}))),
        _bubble("b7", 2, "2026-06-01T10:00:10.000Z", text="Fixed.", modelInfo={"modelName": "gpt-5"}),
    ]


def _ide_db(path: Path, *, last_updated: int = 1780308010000, extra_bubble: bool = True) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE IF NOT EXISTS ItemTable (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB)")
    conn.execute("CREATE TABLE IF NOT EXISTS cursorDiskKV (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB)")
    bubbles = _ide_bubbles()
    headers = [{"bubbleId": b["bubbleId"], "type": b["type"]} for b in bubbles] + [{"bubbleId": "gone", "type": 2}]
    composer = {"_v": 16, "composerId": CID, "name": "Fix the crash", "createdAt": 1780308000000,
                "lastUpdatedAt": last_updated, "unifiedMode": "agent", "isAgentic": True,
                "agentBackend": "cursor-agent", "modelConfig": {"modelName": "default", "maxMode": False},
                "workspaceIdentifier": {"id": "ws1", "uri": {"fsPath": "/work/app", "scheme": "file"}},
                "fullConversationHeadersOnly": headers}
    rows = [(f"composerData:{CID}", json.dumps(composer).encode())]  # BLOB, as Cursor stores it
    rows += [(f"bubbleId:{CID}:{b['bubbleId']}", json.dumps(b)) for b in bubbles]
    rows += [(f"bubbleId:{CID}:stale", json.dumps(_bubble("stale", 2, "2026-05-01T00:00:00Z", text="old branch"))),
             (f"bubbleId:{CID}:broken", "{not json"),
             ("composer.content." + "1" * 64, json.dumps(AFTER)),
             ("composer.content." + "0" * 64, json.dumps("before\n")),
             (f"messageRequestContext:{CID}:b1", json.dumps({"gitStatus": "clean"}))]
    if extra_bubble:  # written after the headers were last flushed
        rows.append((f"bubbleId:{CID}:b8", json.dumps(_bubble("b8", 1, "2026-06-01T10:01:00.000Z", text="thanks!"))))
    old = {"_v": 1, "composerId": OLD_CID, "name": "", "createdAt": 1717000000000, "lastUpdatedAt": 1717000100000,
           "conversation": [
               {"type": 1, "bubbleId": "o1", "text": "what does this regex do?",
                "timingInfo": {"clientStartTime": 1717000000500.5}},
               {"type": 2, "bubbleId": "o2", "text": "", "codeBlocks": [{"content": "re.compile(r'x+')"}],
                "timingInfo": {"clientStartTime": 1234.5, "clientRpcSendTime": 1717000001000}}]}
    rows += [(f"composerData:{OLD_CID}", json.dumps(old)), (f"composerData:{BAD_CID}", "{truncated"),
             (f"composerData:{DRAFT_CID}", json.dumps({"composerId": DRAFT_CID, "fullConversationHeadersOnly": []}))]
    conn.executemany("INSERT INTO cursorDiskKV VALUES(?, ?)", rows)
    conn.execute("INSERT INTO ItemTable VALUES('composer.composerHeaders', '{}')")
    conn.commit()
    conn.close()
    return path


def _candidates(root: Path) -> tuple[list[SourceCandidate], list[SkippedSource]]:
    items = list(ADAPTER.enumerate(root, AdapterOptions(context_name="t")))
    return ([i for i in items if isinstance(i, SourceCandidate)],
            [i for i in items if isinstance(i, SkippedSource)])


def _parse_candidate(cand: SourceCandidate) -> tuple[list[Any], ParseReport]:
    report = ParseReport()
    return list(ADAPTER.parse(cand, report, None)), report


def one_doc(cand: SourceCandidate) -> Any:
    docs, _ = _parse_candidate(cand)
    assert len(docs) == 1
    return docs[0]


def _workspace(storage: Path, name: str, folder_uri: str, key: str, value: Any) -> None:
    folder = storage / name
    folder.mkdir(parents=True)
    (folder / "workspace.json").write_text(json.dumps({"folder": folder_uri}))
    conn = sqlite3.connect(folder / "state.vscdb")
    conn.execute("CREATE TABLE ItemTable (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB)")
    conn.execute("INSERT INTO ItemTable VALUES(?, ?)", (key, json.dumps(value)))
    conn.commit()
    conn.close()
