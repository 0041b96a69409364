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
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from chinvex.ingest import fingerprints as fps
from chinvex.models.sources import AdapterOptions, ParseReport, SkippedSource, SourceCandidate, SourceError, UnrecognisedSource
from chinvex_adapters.cursor import STORES
from chinvex_adapters.kit import sqlite as kit_sqlite
from chinvex_adapters.cursor.adapter import CursorAdapter
from chinvex_adapters.cursor.txt import split_blocks
from chinvex_adapters.cursor.usertext import parse_human_time, parse_user_text
from chinvex_adapters.kit.registry import Where
from helpers import FIXTURES, assert_no_traceback, parse_file, run_cli, run_cli_in_process

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


# -- the plain-text transcript (real fixtures) -------------------------------------------------

def test_readme_session_turns_thinking_and_tool_calls():
    doc, report = one(README_LOG)
    assert doc.source == "cursor" and doc.thread_id == "02-readme-and-deployment"
    assert doc.title.startswith("Make a flashy readme file to replace @README.md")
    roles = Counter(t.role for t in doc.turns)
    assert roles["user"] == 6 and roles["tool"] == 19 and roles["assistant"] == 21
    users = [t.text for t in doc.turns if t.role == "user"]
    assert users[0] == ("Make a flashy readme file to replace @README.md and make sure this page can be "
                        "hosted as either a github page or a netlify page")
    assert users[-1] == "great please do a test push i change that"
    thoughts = [t for t in doc.turns if t.meta.get("thinking")]
    assert len(thoughts) == 6 and all(t.role == "assistant" for t in thoughts)
    assert thoughts[0].text == ("Let me explore the project structure to understand it better before "
                                "writing the README.")
    # The reply that follows a thought on the next line is its own assistant turn.
    after = doc.turns[doc.turns.index(thoughts[0]) + 1]
    assert after.text == "Let me explore the project more to understand its full scope." and not after.meta
    assert thoughts[1].text.endswith("Starting with the README now.")
    assert Counter(t.tool.name for t in doc.turns if t.role == "tool") == {
        "Read": 5, "Shell": 5, "Write": 4, "StrReplace": 4, "Task": 1}
    assert all(t.meta["status"] == "completed" for t in doc.turns if t.role == "tool")
    task = tools(doc, "Task")[0]
    assert task.tool.input["subagent_type"] == "explore" and task.tool.input["model"] == "fast"
    assert "Return a comprehensive summary including:" in task.text
    assert doc.metadata["subagents"] == [{"subagent_type": "explore", "model": "fast",
                                          "description": "Explore microgptJS project structure"}]
    commit = tools(doc, "Shell")[-1]
    assert "git commit -m \"$(cat <<'EOF'" in commit.text and "git push origin main" in commit.text
    assert commit.tool.input["description"] == "Commit all changes and push to main"
    assert report.counts["tool_calls"] == 19 and report.counts["file_edits"] == 8


def test_readme_session_edits_keep_path_and_exact_new_text():
    doc, _ = one(README_LOG)
    fix = tools(doc, "StrReplace")[0].meta["edits"]
    assert fix == [{"path": "/Users/user/microgptJS/vite.config.js", "op": "edit",
                    "abs_path": "/Users/user/microgptJS/vite.config.js",
                    "old_text": "    base: '/microgptjs/',  ", "new_text": "    base: '/microgptJS/',"}]
    writes = {e["path"]: e for t in tools(doc, "Write") for e in t.meta["edits"]}
    assert writes["/Users/user/microgptJS/public/_redirects"]["new_text"] == "/*    /index.html   200\n"
    toml = writes["/Users/user/microgptJS/netlify.toml"]
    assert toml["op"] == "write" and toml["new_text"].startswith('[build]\n  command = "npm run build"\n')
    assert toml["new_text"].endswith('Cache-Control = "public, max-age=31536000, immutable"\n')
    # Lines of a file that look like arguments (`  contents: read`) stay in the file's text.
    workflow = writes["/Users/user/microgptJS/.github/workflows/deploy.yml"]["new_text"]
    assert workflow.startswith("name: Deploy to GitHub Pages\n") and "\n  contents: read\n  pages: write\n" in workflow
    assert workflow.endswith("uses: actions/deploy-pages@v4\n")
    readme = writes["/Users/user/microgptJS/README.md"]["new_text"]
    assert readme.startswith('<div align="center">\n\n# microGPT.js\n') and readme.endswith("</div>\n")
    assert doc.metadata["files_edited"][:2] == ["/Users/user/microgptJS/README.md",
                                                "/Users/user/microgptJS/netlify.toml"]


def test_readme_session_selections_and_time():
    doc, _ = one(README_LOG)
    second = [t for t in doc.turns if t.role == "user"][1]
    assert second.text.startswith("ok i used the github method, i think it worked")
    assert "npm run build --workspace" not in second.text  # the pasted terminal text is a reference
    terminal = next(a for a in second.attachments if a.kind == "terminal")
    assert terminal.path == "/Users/user/.cursor/projects/Users-user-microgptJS/terminals/4.txt"
    assert terminal.model_extra["lines"] == "164-209"
    mtime = README_LOG.stat().st_mtime
    assert all(t.ts is not None and abs(t.ts.timestamp() - mtime) < 1 for t in doc.turns)
    assert doc.metadata["time_source"].startswith("file mtime")


def test_tweets_session_images_todos_and_a_cut_last_turn():
    doc, report = one(TWEETS_LOG)
    assert Counter(t.role for t in doc.turns)["user"] == 9 and report.counts["tool_calls"] == 65
    assert report.counts["file_edits"] == 20  # Write 11, StrReplace 9
    tweet = next(t for t in doc.turns if t.role == "user" and t.text.startswith("Can you draft a set of catchy tweets"))
    images = [a for a in tweet.attachments if a.kind == "image"]
    assert len(images) == 6 and all(a.mime_type == "image/png" for a in images)
    assert images[0].path == ("/Users/user/.cursor/projects/Users-user-microgptJS/assets/"
                              "Screenshot_2026-02-12_at_6.37.47_PM-b79abb05-0052-472a-bdf5-6f46c0a2ca06.png")
    assert doc.metadata["pasted_images"] == 6
    todo = tools(doc, "TodoWrite")[0].tool.input
    assert todo["merge"] is False and todo["todos"].startswith('[{"id": "1", "content": "Create packages/')
    assert tools(doc, "TodoWrite")[1].tool.input["merge"] is True
    assert tools(doc, "Shell")[2].tool.input["block_until_ms"] == 60000
    image = tools(doc, "GenerateImage")[0]
    assert image.tool.input["filename"] == "microgptjs-hero-banner.png"
    assert "reference_image_paths" in image.text and "Screenshot_2026-02-12_at_7.01.39_PM" in image.text
    summary = next(t for t in doc.turns if t.meta.get("thinking") and "confirm their understanding" in t.text)
    assert summary.text.endswith("pulling from `microgptjs` through npm workspaces.")
    reply = doc.turns[doc.turns.index(summary) + 1]
    assert reply.role == "assistant" and reply.text.startswith("Almost — one small clarification.")
    last = doc.turns[-1]
    assert last.tool.name == "Shell" and "head -5" in last.text and last.meta["status"] == "completed"
    writes = {e["path"]: e["new_text"] for t in tools(doc, "Write") for e in t.meta["edits"]}
    assert writes["/Users/user/microgptJS/packages/microgptjs/.gitignore"] == "dist/\nnode_modules/\n"


def test_in_its_store_the_session_id_is_the_file_name_and_the_slug_finds_the_project(tmp_path: Path):
    doc, _ = one(in_project(tmp_path, README_LOG))
    assert doc.thread_id == SESSION_ID and doc.source_uri.endswith(f"{SESSION_ID}.txt")
    assert doc.metadata["cwd"] == "/Users/user/microgptJS" and doc.links.repo_paths == ["/Users/user/microgptJS"]
    assert doc.metadata["project_slug"] == SLUG and doc.metadata["layout"] == "flat"


def test_a_transcript_cut_anywhere_keeps_what_is_complete(tmp_path: Path):
    data = TWEETS_LOG.read_bytes()
    for fraction in (0.07, 0.33, 0.5, 0.81):
        cut = tmp_path / f"cut-{fraction}.txt"
        cut.write_bytes(data[: int(len(data) * fraction)])
        doc, _ = one(cut)
        assert doc.turns and doc.turns[0].text.startswith("Can I please now separate out the js toolbox")
    only_prompt = tmp_path / "prompt.txt"
    only_prompt.write_text("user:\n<user_query>\nhello there\n</user_query>")
    doc, _ = one(only_prompt)
    assert [(t.role, t.text) for t in doc.turns] == [("user", "hello there")]


@pytest.mark.parametrize("content, why", [
    (b"", "empty file"),
    (b"hello\nworld\n", "does not start with 'user:'"),
    (b"\x00\x01binary", "does not start with 'user:'"),
])
def test_not_a_transcript_is_one_line(tmp_path: Path, content: bytes, why: str):
    path = tmp_path / "x.txt"
    path.write_bytes(content)
    with pytest.raises(UnrecognisedSource) as info:
        parse(path)
    message = str(info.value)
    assert message.startswith(str(path)) and "\n" not in message and why in message


def test_arguments_are_told_from_file_lines_by_the_tools_own_names():
    text = ("user:\n<user_query>\nwrite it\n</user_query>\n\nassistant:\n[Tool call] Write\n"
            "  path: /p/a.yml\n  contents: path: not an argument\n  path: /still/content\n\n"
            "  description: content too\n[Tool call] Mystery\n  alpha: 1\n  beta: [1, 2]\n\n"
            "[Tool result] Write\n\n[Tool result] Mystery\nsome output\n")
    blocks, _ = split_blocks(text)
    calls = [e.call for e in blocks[1].events if e.kind == "call"]
    assert calls[0].args == {"path": "/p/a.yml",
                             "contents": "path: not an argument\n  path: /still/content\n\n  description: content too"}
    assert calls[1].args == {"alpha": 1, "beta": [1, 2]}
    results = [e for e in blocks[1].events if e.kind == "result"]
    assert [r.call.name for r in results] == ["Write", "Mystery"] and results[1].text == "some output"


# -- user text ---------------------------------------------------------------------------------

def test_user_text_unwraps_the_query_and_reads_the_time():
    found = parse_user_text("<timestamp>Friday, Jul 31, 2026, 5:10 PM (UTC-5)</timestamp>\n"
                            "<user_info>\nOS: linux\nWorkspace Path: /home/u/proj\n</user_info>\n"
                            "<user_query>\nfix the table\n</user_query>")
    assert found.text == "fix the table" and found.workspace == "/home/u/proj"
    assert found.ts.isoformat() == "2026-07-31T22:10:00+00:00"
    assert parse_human_time("Mon, Jan 5, 2026, 12:03 AM (UTC+5:30)").isoformat() == "2026-01-04T18:33:00+00:00"
    assert parse_user_text("plain words").text == "plain words"


# -- JSONL transcripts (documented shape, made here) --------------------------------------------

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


def test_jsonl_transcript_nested_with_a_subagent(tmp_path: Path):
    main = _jsonl(tmp_path / ".cursor/projects/home-u-my-proj/agent-transcripts" / SESSION_ID
                  / f"{SESSION_ID}.jsonl", JSONL_SESSION)
    child_id = "0c5d1e2f-aaaa-4bbb-8ccc-123456789abc"
    child = _jsonl(main.parent / "subagents" / f"{child_id}.jsonl",
                   [_user("<user_query>\nfind the table code\n</user_query>"),
                    _assistant({"type": "text", "text": "It is in a.go."})])
    doc, report = one(main)
    assert doc.thread_id == SESSION_ID and doc.metadata["layout"] == "nested"
    assert doc.metadata["cwd"] == "/home/u/my_proj"  # the slug `home-u-my-proj` names it
    assert [(t.role, t.text) for t in doc.turns if t.role != "tool"] == [
        ("user", "fix the table"), ("assistant", "Reading the handler."), ("assistant", "Done."),
        ("user", "thanks")]
    assert doc.turns[0].ts.isoformat() == "2026-07-31T22:10:00+00:00"
    assert doc.turns[-1].ts.isoformat() == "2026-07-31T22:20:00+00:00"
    edits = [e for t in doc.turns for e in t.meta.get("edits", ())]
    assert edits == [
        {"path": "/home/u/my_proj/a.go", "op": "edit", "abs_path": "/home/u/my_proj/a.go",
         "old_text": "x := 1", "new_text": "x := 2"},
        {"path": "b.go", "op": "write", "abs_path": "/home/u/my_proj/b.go", "new_text": "package b\n"},
        {"path": "/home/u/my_proj/old.go", "op": "delete", "abs_path": "/home/u/my_proj/old.go"}]
    assert doc.metadata["turns_ended"] == {"success": 1, "aborted": 1}
    assert report.counts["redacted_blocks"] == 1
    sub, _ = one(child)
    assert sub.thread_id == child_id and sub.metadata["parent_thread_id"] == SESSION_ID
    assert sub.metadata["layout"] == "subagent" and sub.metadata["time_source"].startswith("file mtime")


def test_jsonl_half_written_last_line_and_a_bad_middle_line(tmp_path: Path):
    path = tmp_path / "agent-transcripts" / f"{SESSION_ID}.jsonl"
    _jsonl(path, JSONL_SESSION[:2], tail='not json\n')
    with path.open("a") as handle:
        handle.write(json.dumps(JSONL_SESSION[4]) + "\n" + '{"role": "user", "message": {"cont')
    doc, report = one(path)
    assert report.counts["lines_invalid_json"] == 1 and report.counts["partial_last_line"] == 1
    assert [t.text for t in doc.turns if t.role == "assistant"] == ["Reading the handler.", "Done."]
    assert any("incomplete" in w for w in report.warnings)


@pytest.mark.parametrize("body", ["", "[1, 2]\n", '{"role": "user", "message": {"content": "hi"}, "uuid": "x"}\n',
                                  '{"role": "user", "message": {"cont'])
def test_jsonl_of_another_shape_is_one_line(tmp_path: Path, body: str):
    path = tmp_path / "agent-transcripts" / "x.jsonl"
    path.parent.mkdir()
    path.write_text(body)
    with pytest.raises(UnrecognisedSource) as info:
        parse(path)
    assert str(info.value).startswith(str(path)) and "\n" not in str(info.value)


# -- recognising ---------------------------------------------------------------------------------

def test_recognises_cursor_files_and_no_other_agents(tmp_path: Path):
    assert ADAPTER.recognises(README_LOG) and ADAPTER.recognises(TWEETS_LOG)
    assert ADAPTER.recognises(_jsonl(tmp_path / "s.jsonl", JSONL_SESSION))
    assert ADAPTER.recognises(_cli_store(tmp_path / "chats" / "h" / "a" / "store.db"))
    assert ADAPTER.recognises(_ide_db(tmp_path / "User" / "globalStorage" / "state.vscdb"))
    kinds = sorted(p.name for p in FIXTURES.iterdir() if p.is_dir() and p.name != "cursor")
    assert {"claude-code", "codex-rollout", "aider", "specstory", "chatgpt-export"} <= set(kinds)
    others = [p for kind in kinds for p in sorted((FIXTURES / kind).rglob("*")) if p.is_file()]
    assert len(others) > 20
    assert [p for p in others if ADAPTER.recognises(p)] == []


# -- the CLI's store.db (documented shape, made here) --------------------------------------------

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


def test_cli_store_follows_the_latest_root(tmp_path: Path):
    cwd = "/home/u/cli_proj"
    path = _cli_store(tmp_path / "chats" / hashlib.md5(cwd.encode()).hexdigest() / "agent" / "store.db")
    doc, report = one(path)
    assert doc.thread_id == "9b2c7f10-1111-4222-8333-444455556666" and doc.title == "Rename helper"
    assert doc.metadata["model"] == "claude-4-sonnet" and doc.metadata["store"] == "cli_store"
    assert doc.metadata["cwd"] == cwd and doc.metadata["cwd_verified"] is True
    assert doc.created_at.isoformat().startswith("2026-06-12")
    texts = [(t.role, t.text, bool(t.meta.get("thinking"))) for t in doc.turns if t.role != "tool"]
    assert texts == [("user", "rename the helper", False), ("assistant", "The helper lives in util.py.", True),
                     ("assistant", "Renaming it.", False), ("assistant", "Renamed; tests pass.", False)]
    shell = tools(doc, "Shell")[0]
    assert shell.text.endswith("Result:\n3 passed") and shell.meta["tool_use_id"] == "call_2"
    edit = tools(doc, "StrReplace")[0].meta["edits"][0]
    assert edit["abs_path"] == "/home/u/cli_proj/util.py" and edit["new_text"] == "def assist"
    assert "an abandoned branch" not in " ".join(t.text for t in doc.turns)
    assert report.counts["system_messages_skipped"] == 1 and report.counts["context_messages"] == 1
    assert report.state is not None  # never compared by a hash of the main file: its log changes


def test_cli_store_without_a_readable_root_reads_blobs_as_written(tmp_path: Path):
    doc, report = one(_cli_store(tmp_path / "store.db", root=False))
    assert doc.metadata["message_order"] == "written" and report.counts["cli_root_missing"] == 1
    assert [t.text for t in doc.turns if t.role == "user"][:2] == ["an abandoned branch", "rename the helper"]


@pytest.mark.parametrize("meta", ["zz-not-hex", "7b2261", json.dumps([1, 2]).encode().hex()])
def test_cli_store_with_bad_meta_is_one_line(tmp_path: Path, meta: str):
    path = _cli_store(tmp_path / "store.db", meta=meta)
    with pytest.raises(UnrecognisedSource, match=r"store\.db: not a cursor-agent store\.db \(meta") as info:
        parse(path)
    assert "\n" not in str(info.value)


def test_broken_databases_are_one_line(tmp_path: Path):
    good = _cli_store(tmp_path / "good" / "store.db")
    cut = tmp_path / "cut" / "store.db"
    cut.parent.mkdir()
    cut.write_bytes(good.read_bytes()[:1500])
    text = tmp_path / "text" / "store.db"
    text.parent.mkdir()
    text.write_text("not a database")
    other = tmp_path / "other" / "store.db"
    other.parent.mkdir()
    sqlite3.connect(other).execute("CREATE TABLE t(x)").connection.commit()
    for path in (cut, text, other):
        with pytest.raises(SourceError) as info:
            parse(path)
        assert str(info.value).startswith(str(path)) and "\n" not in str(info.value)


def test_a_database_held_open_by_a_writer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    path = _cli_store(tmp_path / "store.db")
    writer = sqlite3.connect(path, isolation_level=None)
    writer.execute("PRAGMA journal_mode=WAL")
    writer.execute("BEGIN IMMEDIATE")
    writer.execute("INSERT INTO blobs VALUES('x', 'y')")
    try:
        doc, _ = one(path)  # a reader is not blocked by a write in progress
        assert doc.title == "Rename helper"
    finally:
        writer.execute("COMMIT")
    writer.execute("PRAGMA locking_mode=EXCLUSIVE")
    writer.execute("BEGIN EXCLUSIVE")
    monkeypatch.setattr(kit_sqlite, "BUSY_TIMEOUT_S", 0.05)
    try:
        with pytest.raises(SourceError, match="locked") as info:
            parse(path)
        assert "\n" not in str(info.value) and not isinstance(info.value, UnrecognisedSource)
    finally:
        writer.execute("COMMIT")
        writer.close()


# -- the IDE's state.vscdb (documented shape, made here) ------------------------------------------

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


def test_ide_composers_are_candidates_skipped_while_unchanged(tmp_path: Path):
    storage = tmp_path / "User" / "globalStorage"
    db = _ide_db(storage / "state.vscdb")
    (storage / "saoudrizwan.claude-dev" / "tasks").mkdir(parents=True)  # another extension's
    cands, skipped = _candidates(storage)
    assert {c.thread_id for c in cands} == {CID, OLD_CID, BAD_CID}
    assert [s.detail for s in skipped if s.source_uri.endswith(DRAFT_CID)] == ["an empty composer (a draft)"]
    new = next(c for c in cands if c.thread_id == CID)
    assert new.source_uri == f"{db}#{CID}" and new.path is None
    assert new.thread_updated_at == "2026-06-01T10:00:10.000Z" and new.last_turn_id == "8:gone"
    fp = fps.Fingerprint(source_uri=new.source_uri, context_name="t", source_type="agent_session", doc_id="d",
                         size_bytes=1, mtime_unix=1, content_sha256=None, thread_updated_at=new.thread_updated_at,
                         last_turn_id=new.last_turn_id, parser_version=ADAPTER.parser_version, chunker_version="c",
                         embedded_model="m", last_ingested_at_unix=1, last_status="ok", last_error=None,
                         source_root=str(storage), adapter="cursor", state=None)
    versions = fps.Versions(ADAPTER.parser_version, "c", "m")
    assert fps.decide(fp, new, versions, full=False).reason == fps.UNCHANGED
    _ide_db(db, last_updated=1780308099000)
    moved = next(c for c in _candidates(storage)[0] if c.thread_id == CID)
    assert fps.decide(fp, moved, versions, full=False).reason == fps.THREAD_UPDATED


def test_composers_are_listed_alike_without_sqlites_json_functions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    from chinvex_adapters.cursor import ide

    db = _ide_db(tmp_path / "state.vscdb")
    with sqlite3.connect(db) as conn:
        def rows() -> list[tuple[Any, ...]]:
            return sorted((r.composer_id, r.valid, r.messages, r.updated_at, r.last_turn) for r in ide.list_composers(conn))
        in_sql = rows()
        monkeypatch.setattr(ide, "_LIST", "SELECT no_such_function(1)")
        assert rows() == in_sql and (CID, True, 8, "2026-06-01T10:00:10.000Z", "8:gone") in in_sql


def test_ide_composer_bubbles_become_turns(tmp_path: Path):
    db = _ide_db(tmp_path / "globalStorage" / "state.vscdb")
    cand = next(c for c in _candidates(db)[0] if c.thread_id == CID)
    docs, report = _parse_candidate(cand)
    doc = docs[0]
    assert doc.thread_id == CID and doc.title == "Fix the crash" and doc.source_uri == f"{db}#{CID}"
    assert doc.metadata["cwd"] == "/work/app" and doc.metadata["model"] == "gpt-5"
    assert doc.metadata["store"] == "ide_db" and doc.metadata["usage"] == {"input_tokens": 100, "output_tokens": 20}
    user = doc.turns[0]
    assert (user.role, user.text, user.ts.isoformat()) == ("user", "Fix the crash in app.py", "2026-06-01T10:00:00+00:00")
    assert [(a.kind, a.path) for a in user.attachments] == [("file", "/work/app/app.py"), ("image", "/tmp/shot.png")]
    assert doc.turns[1].meta["thinking"] and doc.turns[1].text == "The crash is an off-by-one."
    replace = tools(doc, "search_replace")[0]
    assert replace.meta["edits"] == [{"path": "app.py", "op": "edit", "abs_path": "/work/app/app.py",
                                      "old_text": "i <= n", "new_text": "i < n"}]
    assert replace.text.endswith("Result:\n-i <= n\n+i < n") and replace.meta["tool_use_id"] == "tc-search_replace"
    v2 = tools(doc, "edit_file_v2")[0].meta["edits"][0]
    assert (v2["abs_path"], v2["old_text"], v2["new_text"]) == ("/work/app/app.py", "before\n", AFTER)
    assert tools(doc, "run_terminal_command_v2")[0].text.endswith("Result:\nok\n(exit code 0)")
    failed = tools(doc, "read_file")[0]
    assert failed.meta["is_error"] and "File not found" in failed.text and failed.meta["status"] == "error"
    assert [t.text for t in doc.turns if t.role != "tool"][-2:] == ["Fixed.", "thanks!"]
    assert "old branch" not in " ".join(t.text for t in doc.turns)
    assert report.counts["bubbles_missing"] == 1 and report.counts["bubbles_invalid"] == 1
    assert report.counts["bubbles_off_conversation"] == 1 and report.counts["bubbles_after_headers"] == 1
    assert "iVBORw0KGgo" not in doc.model_dump_json()


def _workspace(storage: Path, name: str, folder_uri: str, key: str, value: Any) -> None:
    folder = storage / name
    folder.mkdir(parents=True)
    (folder / "workspace.json").write_text(json.dumps({"folder": folder_uri}))
    conn = sqlite3.connect(folder / "state.vscdb")
    conn.execute("CREATE TABLE ItemTable (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB)")
    conn.execute("INSERT INTO ItemTable VALUES(?, ?)", (key, json.dumps(value)))
    conn.commit()
    conn.close()


def test_ide_old_inline_composer_its_workspace_and_a_broken_one(tmp_path: Path):
    db = _ide_db(tmp_path / "User" / "globalStorage" / "state.vscdb")
    storage = tmp_path / "User" / "workspaceStorage"
    _workspace(storage, "a1", "file:///home/u/old%20proj", "composer.composerData",
               {"allComposers": [{"composerId": OLD_CID, "name": ""}], "selectedComposerId": OLD_CID})
    _workspace(storage, "b2", "file:///elsewhere", "workbench.panel.composerChatViewPane.5e1f",
               {f"workbench.panel.aichat.view.{CID}": {"collapsed": False}})
    cands = {c.thread_id: c for c in _candidates(db)[0]}
    assert cands[CID].extra["cwd"] == "/elsewhere"
    assert one_doc(cands[CID]).metadata["cwd"] == "/work/app"  # the composer's own workspace wins
    doc = one_doc(cands[OLD_CID])
    assert doc.metadata["cwd"] == "/home/u/old proj"
    assert [(t.role, t.text) for t in doc.turns] == [("user", "what does this regex do?"),
                                                     ("assistant", "re.compile(r'x+')")]
    assert doc.turns[0].ts.isoformat().startswith("2024-05-29T16:26:40") and doc.title == "what does this regex do?"
    assert doc.turns[1].ts.isoformat().startswith("2024-05-29T16:26:41")
    with pytest.raises(UnrecognisedSource) as info:
        _parse_candidate(cands[BAD_CID])
    assert str(info.value).startswith(f"{db}#{BAD_CID}: ") and "\n" not in str(info.value)


def test_odd_rows_and_blobs_are_counted_and_passed_over(tmp_path: Path):
    db = _ide_db(tmp_path / "state.vscdb")
    conn = sqlite3.connect(db)
    conn.executemany("INSERT INTO cursorDiskKV VALUES(?, ?)", [
        (f"bubbleId:{CID}:odd1", json.dumps([1, 2])),
        (f"bubbleId:{CID}:odd2", json.dumps({"type": [2], "createdAt": "2026-06-01T11:00:00Z"})),
        (f"bubbleId:{CID}:odd3", json.dumps({"type": 2, "createdAt": "2026-06-01T11:00:01Z", "text": 5,
                                             "toolFormerData": {"name": ["x"], "rawArgs": 7, "result": [1]}})),
        (f"bubbleId:{CID}:odd4", json.dumps({"type": 1, "createdAt": "2026-06-01T11:00:02Z", "text": "still here",
                                             "context": {"fileSelections": "x", "selectedImages": 5},
                                             "images": {"a": 1}}))])
    conn.commit()
    conn.close()
    report = ParseReport()
    docs = list(ADAPTER.parse_file(db, report, None, None))  # a whole database handed over by content
    assert {d.thread_id for d in docs} == {CID, OLD_CID} and docs[0].source_uri.startswith(f"{db}#")
    doc = next(d for d in docs if d.thread_id == CID)
    assert doc.turns[-1].text == "still here" and doc.turns[-2].tool.name == "tool"
    assert report.counts["bubbles_invalid"] == 2 and report.counts["bubbles_unknown_type"] == 1
    assert report.counts["composers_unreadable"] == 1
    odd = [{"role": ["x"], "content": 5}, {"role": "assistant", "content": [{"type": {"a": 1}}, 7,
                                                                            {"type": "tool-call", "toolName": 5, "args": [1]}]}]
    doc, report = one(_cli_store(tmp_path / "c" / "store.db", CLI_MESSAGES + odd))
    assert doc.turns[-1].tool.name == "5" and report.counts["messages_unknown_role"] == 1
    jsonl = _jsonl(tmp_path / "j.jsonl", [_user("<user_query>\nhi\n</user_query>"),
                                          {"role": "assistant", "message": {"content": [{"type": ["x"]}, {"text": 5}]}},
                                          _assistant({"type": "text", "text": "hello"})])
    doc, _ = one(jsonl)
    assert [t.text for t in doc.turns] == ["hi", "hello"]


def test_editor_databases_without_cursor_chats_and_unreadable_ones(tmp_path: Path):
    plain = tmp_path / "Code" / "User" / "globalStorage" / "state.vscdb"
    plain.parent.mkdir(parents=True)
    sqlite3.connect(plain).execute("CREATE TABLE ItemTable (key TEXT, value BLOB)").connection.commit()
    cands, skipped = _candidates(plain)
    assert cands == [] and skipped[0].reason == "not_supported"
    junk = tmp_path / "junk" / "state.vscdb"
    junk.parent.mkdir()
    junk.write_bytes(b"SQLite format 3\x00" + b"\xff" * 200)
    cands, skipped = _candidates(junk)
    assert cands == [] and len(skipped) == 1 and "\n" not in skipped[0].detail


# -- stores and the whole pipeline ------------------------------------------------------------

def test_stores_follow_the_overrides(tmp_path: Path):
    env = {"CURSOR_CONFIG_DIR": str(tmp_path / "cfg"), "XDG_CONFIG_HOME": str(tmp_path / "xdg"),
           "APPDATA": str(tmp_path / "roaming")}
    located = {store.label: store.locate(Where(home=tmp_path / "h", env=env)) for store in STORES}
    assert located["Cursor agent transcripts"][:3] == [tmp_path / "cfg/projects", tmp_path / "xdg/cursor/projects",
                                                       tmp_path / "h/.config/cursor/projects"]
    assert located["Cursor CLI chats"][-1] == tmp_path / "h/.cursor/chats"
    ide = located["Cursor IDE chats"]
    for want in ("xdg/Cursor/User/globalStorage", "h/.config/Cursor/User/globalStorage",
                 "h/Library/Application Support/Cursor/User/globalStorage",
                 "roaming/Cursor/User/globalStorage", "h/.cursor-server/data/User/globalStorage"):
        assert tmp_path / want in ide
    assert not any(".vscode-server" in str(p) for p in ide)


def test_ingest_reads_every_cursor_store_under_home(tmp_path: Path, chinvex_home: Path,
                                                    monkeypatch: pytest.MonkeyPatch):
    home = tmp_path / "home"
    in_project(home, README_LOG)
    (home / ".cursor/projects" / SLUG / "terminals").mkdir()
    (home / ".cursor/projects" / SLUG / "terminals" / "4.txt").write_text("$ npm run deploy\n")
    (home / ".cursor" / "cli-config.json").write_text('{"authToken": "secret"}')
    cli_cwd = "/home/u/cli_proj"
    _cli_store(home / ".cursor/chats" / hashlib.md5(cli_cwd.encode()).hexdigest() / "agent" / "store.db")
    _ide_db(home / ".config/Cursor/User/globalStorage/state.vscdb")
    # The IDE chat's JSONL transcript too (same id, fewer details): one document, the IDE's copy.
    _jsonl(home / ".cursor/projects/work-app/agent-transcripts" / CID / f"{CID}.jsonl",
           [_user("<user_query>\nFix the crash in app.py\n</user_query>"), _assistant({"type": "text", "text": "Fixed."}),
            _user("<user_query>\nthanks!\n</user_query>")])
    monkeypatch.setenv("HOME", str(home))
    for var in ("XDG_CONFIG_HOME", "APPDATA", "CURSOR_CONFIG_DIR"):
        monkeypatch.delenv(var, raising=False)
    detected = run_cli_in_process("sessions", "detect", "--json")
    assert detected.code == 0 and "cursor" in detected.json["agents"], detected
    assert run_cli_in_process("context", "create", "X", "--sessions", "auto").code == 0
    result = run_cli_in_process("ingest", "--context", "X", "--json")
    assert_no_traceback(result)
    assert result.code == 0 and result.json["sources"]["indexed"] == 5, result  # 2 + 1 + 2 composers
    assert result.json["errors"] == [] and result.json["sources"]["skipped_unrecognised"] == 1, result
    got = run_cli("get", SESSION_ID, "--context", "X", "--json", env={"HOME": str(home)})
    assert got.code == 0 and got.json["thread_id"] == SESSION_ID, got
    turns = got.json["turns"]
    assert {"user", "assistant", "tool"} <= {t["role"] for t in turns} and all(t["ts"] for t in turns)
    ide = run_cli("get", CID, "--context", "X", "--json", env={"HOME": str(home)})
    assert ide.code == 0 and ide.json["turns"][0]["text"] == "Fix the crash in app.py", ide
    assert ide.json["source_uri"].endswith(f"state.vscdb#{CID}") and ide.json["title"] == "Fix the crash"
    again = run_cli_in_process("ingest", "--context", "X", "--json")
    assert again.code == 0 and again.json["sources"]["unchanged"] == 5, again
