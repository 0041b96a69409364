"""The opencode adapter on the real samples in tests/fixtures/samples/opencode (see its
PROVENANCE.md): one user's history of two sessions as the JSON store OpenCode 1.0.107 wrote,
and the same history as the opencode.db OpenCode 1.3.2's own migration made of it. What no real
sample holds (write, apply_patch and multiedit calls, reasoning, files, sub-agents, failed and
unfinished calls, the 1.18 schema) is written here in the shapes the format notes document, on
copies of the real store.

What the OpenCode tests share: fixture paths, database and session builders.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path
from chinvex.models.sources import AdapterOptions, ParseReport, SkippedSource, SourceCandidate
from chinvex_adapters.opencode.adapter import OpenCodeAdapter
from helpers import FIXTURES

SAMPLES = FIXTURES / "opencode" / "jwp23-dotfiles"


STORAGE = SAMPLES / "storage-1.0.107" / "storage"


DB = SAMPLES / "sqlite-migrated-by-1.3.2" / "opencode.db"


PROJECT = "98f0326ae5594d769602840258229a7888e46ff5"


EDIT_ID = "ses_53993b312ffeefelTsBlbUVXV8"  # the session that edited README.md


PLAN_ID = "ses_539950424ffev4SAECXTZKSubM"  # plan mode: an API error, two reads, no edit


CWD = "/Users/user/workspace/mordant-software/claude-instructions"


PROMPT = ("Update README.md with a section called Comamnds. In that section put an explanation of "
          "`/story` develop user stories for a prd.md document")


ADAPTER = OpenCodeAdapter()


def session_file(storage: Path, session_id: str) -> Path:
    return storage / "session" / PROJECT / f"{session_id}.json"


def candidates(root: Path) -> tuple[list[SourceCandidate], list[SkippedSource]]:
    items = list(ADAPTER.enumerate(root, AdapterOptions(context_name="t")))
    return ([i for i in items if isinstance(i, SourceCandidate)],
            [i for i in items if isinstance(i, SkippedSource)])


def parse(cand: SourceCandidate) -> tuple[list, ParseReport]:
    report = ParseReport()
    return list(ADAPTER.parse(cand, report, None)), report


def by_thread(root: Path) -> dict[tuple[str, str], tuple]:
    """(store, thread id) -> (doc, report, candidate) for every session under `root`."""
    out = {}
    for cand in candidates(root)[0]:
        docs, report = parse(cand)
        assert len(docs) == 1, report
        out[(cand.extra["store"], cand.thread_id)] = (docs[0], report, cand)
    return out


def texts(doc, role: str, thinking: bool = False) -> list[str]:
    return [t.text for t in doc.turns if t.role == role and bool(t.meta.get("thinking")) == thinking]


def _part(pid: str, mid: str, **data) -> dict:
    return {"id": pid, "sessionID": "ses_x", "messageID": mid, **data}


MORE_TOOLS = [
    ({"id": "msg_b1", "role": "user", "time": {"created": 1770000000000}, "agent": "build",
      "model": {"providerID": "openai", "modelID": "gpt-5"}},
     [_part("prt_b1a", "msg_b1", type="text", text="Refactor util and add notes"),
      _part("prt_b1b", "msg_b1", type="text", synthetic=True,
            text="Called the Read tool with the following input: {\"filePath\": \"util.py\"}"),
      _part("prt_b1c", "msg_b1", type="file", mime="image/png", filename="shot.png",
            url="data:image/png;base64," + "iVBORw0KGgo" * 400),
      _part("prt_b1d", "msg_b1", type="file", mime="text/plain", filename="util.py",
            url="file:///repo/util.py",
            source={"type": "file", "path": "/repo/util.py", "text": {"value": "SECRET_BODY", "start": 0, "end": 4}})]),
    ({"id": "msg_b2", "role": "assistant", "time": {"created": 1770000001000, "completed": 1770000009000},
      "parentID": "msg_b1", "modelID": "gpt-5", "providerID": "openai", "mode": "build", "agent": "build",
      "path": {"cwd": "/repo", "root": "/repo"}, "cost": 0.25,
      "tokens": {"input": 100, "output": 50, "reasoning": 10, "cache": {"read": 5, "write": 0}}},
     [_part("prt_b2a", "msg_b2", type="step-start", snapshot="abc"),
      _part("prt_b2b", "msg_b2", type="reasoning", text="Plan: patch util, write notes.",
            time={"start": 1770000002000, "end": 1770000002500}),
      _part("prt_b2c", "msg_b2", type="tool", callID="call_1", tool="apply_patch", state={
          "status": "completed", "input": {"patchText": "*** Begin Patch\n*** Update File: src/util.py\n@@\n"
                                                        "-def old():\n+def new():\n*** End Patch"},
          "output": "Success. Updated the following files:\nM src/util.py", "title": "src/util.py",
          "metadata": {}, "time": {"start": 1770000003000, "end": 1770000003100}}),
      _part("prt_b2d", "msg_b2", type="tool", callID="call_2", tool="write", state={
          "status": "completed", "input": {"filePath": "notes.md", "content": "# Notes\nhello\n"},
          "output": "", "title": "notes.md", "metadata": {"exists": False},
          "time": {"start": 1770000004000, "end": 1770000004100}}),
      _part("prt_b2e", "msg_b2", type="tool", callID="call_3", tool="multiedit", state={
          "status": "completed", "input": {"filePath": "/repo/a.py", "edits": [
              {"oldString": "x = 1", "newString": "x = 2"}, {"oldString": "y = 1", "newString": "y = 3"}]},
          "output": "", "title": "a.py", "metadata": {}, "time": {"start": 1770000005000, "end": 1770000005100}}),
      _part("prt_b2f", "msg_b2", type="tool", callID="call_4", tool="bash", state={
          "status": "error", "input": {"command": "pytest -q", "description": "Run tests"},
          "error": "Error: command exited with 1", "time": {"start": 1770000006000, "end": 1770000006100}}),
      _part("prt_b2g", "msg_b2", type="tool", callID="call_5", tool="task", state={
          "status": "completed", "input": {"description": "Explore", "prompt": "Find callers of new()",
                                           "subagent_type": "general"},
          "output": "Found 3 callers.", "title": "Explore", "metadata": {"sessionId": "ses_child1"},
          "time": {"start": 1770000007000, "end": 1770000008000}}),
      _part("prt_b2h", "msg_b2", type="tool", callID="call_6", tool="read",
            state={"status": "running", "input": {"filePath": "/repo/b.py"}, "time": {"start": 1770000008500}}),
      _part("prt_b2i", "msg_b2", type="text", text="Patched util, wrote notes.",
            time={"start": 1770000008800, "end": 1770000008900}),
      _part("prt_b2j", "msg_b2", type="step-finish", reason="stop", cost=0.25, tokens={}),
      _part("prt_b2k", "msg_b2", type="mystery")]),
    ({"id": "msg_b3", "role": "user", "time": {"created": 1770000010000}, "agent": "build"},
     [_part("prt_b3a", "msg_b3", type="subtask", agent="general", description="Review the patch",
            prompt="Check src/util.py for callers"),
      _part("prt_b3b", "msg_b3", type="text", text="@general review it"),
      _part("prt_b3c", "msg_b3", type="agent", name="general")]),
    ({"id": "msg_b4", "role": "assistant", "time": {"created": 1770000011000}, "summary": True,
      "modelID": "gpt-5", "providerID": "openai", "agent": "compaction", "error": {
          "name": "MessageAbortedError", "data": {"message": "The operation was aborted."}}},
     [_part("prt_b4a", "msg_b4", type="text", text="Summary: util patched, notes written.")]),
]


def _copy_store(tmp_path: Path) -> Path:
    data = tmp_path / "opencode"
    shutil.copytree(STORAGE, data / "storage")
    shutil.copy(DB, data / "opencode.db")
    return data


def _add_child_session(conn: sqlite3.Connection) -> None:
    """A sub-agent session as OpenCode >= 1.2 writes it: a row with parent_id, its messages
    and parts with their ids, times in `data`."""
    conn.execute("INSERT INTO session(id, project_id, parent_id, slug, directory, title, version, "
                 "time_created, time_updated) VALUES(?,?,?,?,?,?,?,?,?)",
                 ("ses_child1", PROJECT, EDIT_ID, "brave-owl", CWD, "Explore callers (@general subagent)",
                  "1.3.2", 1770000007000, 1770000008000))
    for mid, message, parts in (
            ("msg_c1", {"role": "user", "time": {"created": 1770000007001}, "agent": "general",
                        "model": {"providerID": "anthropic", "modelID": "claude-haiku-4-5"}},
             [("prt_c1a", {"type": "text", "text": "Find callers of new()"})]),
            ("msg_c2", {"role": "assistant", "time": {"created": 1770000007002, "completed": 1770000007900},
                        "parentID": "msg_c1", "modelID": "claude-haiku-4-5", "providerID": "anthropic",
                        "mode": "general", "agent": "general", "path": {"cwd": CWD, "root": CWD},
                        "cost": 0, "tokens": {"input": 1, "output": 2, "reasoning": 0, "cache": {"read": 0, "write": 0}}},
             [("prt_c2a", {"type": "text", "text": "Found 3 callers.", "time": {"start": 1770000007800}})])):
        conn.execute("INSERT INTO message VALUES(?,?,?,?,?)",
                     (mid, "ses_child1", message["time"]["created"], 1795887244415, json.dumps(message)))
        for pid, part in parts:
            conn.execute("INSERT INTO part VALUES(?,?,?,?,?,?)",
                         (pid, mid, "ses_child1", 1795887244415, 1795887244415, json.dumps(part)))
