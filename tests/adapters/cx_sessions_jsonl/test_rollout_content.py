"""What the turns hold: clipped tool output, no inline data, images, injected context, tool pairing."""

from __future__ import annotations

import json
import re
from pathlib import Path
import pytest
import zstandard
from chinvex_adapters.cx_sessions_jsonl.content import TOOL_OUTPUT_LIMIT
from rollout_support import (
    CODEMIE,
    EXPECTED,
    LEGACY,
    ROLLOUT_NAME,
    _BASE64_RUN,
    ev,
    meta_line,
    parse,
    ri,
    user_msg,
    write,
)


def test_tool_output_is_searchable_and_clipped() -> None:
    doc, report = parse(CODEMIE)
    tools = [t for t in doc.turns if t.role == "tool"]
    assert all(t.tool is not None and t.tool.output is None for t in tools)
    skill = tools[0]
    assert skill.tool.name == "exec_command"
    assert "$ sed -n '1,220p' /Users/Sample_User/.codex/plugins/cache/openai-curated/superpowers" in skill.text
    assert "name: using-superpowers" in skill.text  # from the function_call_output
    assert skill.meta["exit_code"] == 0 and skill.meta["call_id"] == "call_AvUkcEDS8tiUyr1JW8hw2z43"
    clipped = [t for t in tools if "bytes truncated ...]" in t.text]
    assert len(clipped) == report.counts["tool_outputs_truncated"] > 0
    assert all(len(t.text) < TOOL_OUTPUT_LIMIT + 2000 for t in tools)
    mcp = next(t for t in tools if t.tool.name == "mcp__node_repl__js")
    assert "Connect browser session" in mcp.text and mcp.tool.input["title"] == "Connect browser session"

    legacy, _ = parse(LEGACY)
    echo = next(t for t in legacy.turns if t.role == "tool")
    assert "$ echo hi from mock tool" in echo.text and "hi from mock tool\n" in echo.text + "\n"
    assert echo.tool.input == {"cmd": "echo hi from mock tool", "yield_time_ms": 1000}


@pytest.mark.parametrize("path", [e[0] for e in EXPECTED], ids=[e[0].name[:40] for e in EXPECTED])
def test_no_inline_data_or_encrypted_content_in_text(path: Path) -> None:
    doc, _ = parse(path)
    raw = path.read_bytes() if path.suffix != ".zst" else zstandard.ZstdDecompressor().stream_reader(
        path.open("rb")).read()
    secrets = set()
    for raw_line in raw.splitlines():
        for match in re.finditer(rb'"encrypted_content":\s*"([^"]{24,})"', raw_line):
            secrets.add(match.group(1)[:40].decode("utf-8", "replace"))
    blobs = [doc.title or ""] + [t.text for t in doc.turns]
    blobs += [json.dumps(t.tool.input) for t in doc.turns if t.tool] + [json.dumps(doc.metadata)]
    for blob in blobs:
        assert "data:image" not in blob
        assert not _BASE64_RUN.search(blob)
        assert "REDACTED_ENCRYPTED" not in blob
        for secret in secrets:
            assert secret not in blob
    for turn in doc.turns:
        for att in turn.attachments:
            assert not (att.uri or "").startswith("data:")


def test_images_become_attachments_without_bytes(tmp_path: Path) -> None:
    png = "data:image/png;base64," + "iVBORw0KGgo" * 3000
    path = write(tmp_path / ROLLOUT_NAME, [
        meta_line(),
        ev("task_started", turn_id="t1"),
        ri("message", role="user", content=[{"type": "input_text", "text": "look"},
                                            {"type": "input_image", "image_url": png}]),
        ev("user_message", message="look", images=[png], local_images=["/tmp/shot.png"]),
        ri("function_call", name="view_image", arguments='{"path": "/tmp/b.png"}', call_id="v1"),
        ri("function_call_output", call_id="v1",
           output=[{"type": "input_text", "text": "attached"}, {"type": "input_image", "image_url": png}]),
        ri("image_generation_call", id="ig1", status="completed", revised_prompt="a red cat", result="A" * 50000),
        ri("message", role="assistant", content=[{"type": "output_text", "text": f"inline {png} end"}]),
        ev("task_complete", turn_id="t1"),
    ])
    doc, report = parse(path)
    user = doc.turns[0]
    assert [a.kind for a in user.attachments] == ["image", "image"]
    assert user.attachments[0].mime_type == "image/png" and user.attachments[0].size_bytes > 20000
    assert user.attachments[0].uri is None and user.attachments[1].path == "/tmp/shot.png"
    view = doc.turns[1]
    assert view.role == "tool" and view.attachments[0].mime_type == "image/png"
    gen = doc.turns[2]
    assert gen.tool.name == "image_generation" and "a red cat" in gen.text
    assert gen.attachments[0].size_bytes == 50000 * 3 // 4
    answer = doc.turns[3]
    assert answer.text.startswith("inline [inline image/png,") and answer.text.endswith("end")
    for turn in doc.turns:
        assert "base64" not in turn.text and "AAAAAAAAAA" not in turn.text
    assert report.counts["inline_data_removed"] == 1


def test_injected_context_is_never_a_user_turn(tmp_path: Path) -> None:
    injected = ["<environment_context>\n  <cwd>/w</cwd>\n</environment_context>",
                "# AGENTS.md instructions for /w\n\n<INSTRUCTIONS>\nbe nice\n</INSTRUCTIONS>",
                "<user_instructions>x</user_instructions>", "<permissions instructions>y",
                "<skill>\n<name>tdd</name>", "<subagent_notification>{}</subagent_notification>"]
    path = write(tmp_path / "plain.jsonl", [  # no tasks, no events: response messages are all there is
        meta_line(),
        *[ri("message", role="user", content=[{"type": "input_text", "text": t}]) for t in injected],
        ri("message", role="developer", content=[{"type": "input_text", "text": "<collaboration_mode>z"}]),
        ri("message", role="user", content=[
            {"type": "input_text", "text": "real question"},
            {"type": "input_text", "text": '<image name=[Image #1] path="/w/shot.png">'},
            {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo="},
            {"type": "input_text", "text": "</image>"}]),
        ri("message", role="assistant", content=[{"type": "output_text", "text": "real answer"}]),
    ])
    doc, report = parse(path)
    assert [(t.role, t.text) for t in doc.turns] == [
        ("user", "real question\n[image: /w/shot.png]"), ("assistant", "real answer")]
    assert doc.turns[0].attachments[0].path == "/w/shot.png"
    assert report.counts["injected_context_skipped"] == len(injected)
    assert report.counts["context_messages_skipped"] == 1


def test_tool_pairing_any_order_and_missing_output(tmp_path: Path) -> None:
    path = write(tmp_path / ROLLOUT_NAME, [
        meta_line(),
        ev("task_started", turn_id="t1"),
        *user_msg("run things"),
        ri("function_call_output", call_id="late", output="output came first"),
        ri("function_call", name="shell", arguments='{"command": ["ls", "-la"]}', call_id="late"),
        ev("exec_command_end", call_id="late", command=["ls", "-la"], exit_code=2,
           aggregated_output="event copy of the output"),
        ri("custom_tool_call", name="apply_patch", call_id="p1",
           input="*** Begin Patch\n*** Add File: a.py\n+print(1)\n*** End Patch"),
        ri("function_call", name="shell", arguments='{"command": "sleep 100"}', call_id="lost"),
        ev("turn_aborted", reason="interrupted"),
    ])
    doc, report = parse(path)
    tools = [t for t in doc.turns if t.role == "tool"]
    assert len(tools) == 3
    first = tools[0]
    assert first.tool.name == "shell" and "$ ls -la" in first.text
    assert "output came first" in first.text and "event copy" not in first.text
    assert first.meta["exit_code"] == 2
    assert "+print(1)" in tools[1].text and tools[1].meta["output_missing"] is True
    assert tools[2].meta["output_missing"] is True and "$ sleep 100" in tools[2].text
    assert report.counts["tool_outputs_missing"] == 2
