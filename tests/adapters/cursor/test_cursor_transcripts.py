"""Cursor agent transcripts (txt and jsonl): turns, edits, selections, cut files."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
import pytest
from chinvex.models.sources import UnrecognisedSource
from chinvex_adapters.cursor.txt import split_blocks
from chinvex_adapters.cursor.usertext import parse_human_time, parse_user_text
from cursor_support import (
    JSONL_SESSION,
    README_LOG,
    SESSION_ID,
    SLUG,
    TWEETS_LOG,
    _assistant,
    _jsonl,
    _user,
    in_project,
    one,
    parse,
    tools,
)


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


def test_user_text_unwraps_the_query_and_reads_the_time():
    found = parse_user_text("<timestamp>Friday, Jul 31, 2026, 5:10 PM (UTC-5)</timestamp>\n"
                            "<user_info>\nOS: linux\nWorkspace Path: /home/u/proj\n</user_info>\n"
                            "<user_query>\nfix the table\n</user_query>")
    assert found.text == "fix the table" and found.workspace == "/home/u/proj"
    assert found.ts.isoformat() == "2026-07-31T22:10:00+00:00"
    assert parse_human_time("Mon, Jan 5, 2026, 12:03 AM (UTC+5:30)").isoformat() == "2026-01-04T18:33:00+00:00"
    assert parse_user_text("plain words").text == "plain words"


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
