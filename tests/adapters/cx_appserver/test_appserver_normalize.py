"""App-server threads → documents: every transcript, details, clipping, tool turns."""

from __future__ import annotations

import copy
from collections import Counter
import pytest
from chinvex.ids import thread_doc_id
from chinvex.models.sources import ParseReport
from chinvex_adapters.cx_appserver import schemas as s
from chinvex_adapters.cx_appserver.item_text import NormalizeOptions, clip
from chinvex_adapters.cx_appserver.normalize import thread_to_conversation
from chinvex_adapters.cx_appserver.threads import ThreadReadError, resolve_rollout_path
from replay_support import (
    EXPECTED,
    FakeAppServer,
    LARGE_0106,
    LOCALPUSH_SHORT,
    PAGINATED,
    add_history_routes,
    recorded,
    result_of,
    role_counts,
    source_over,
)


@pytest.mark.parametrize(("run", "thread_id"), list(EXPECTED))
def test_every_transcript_thread_normalises(run, thread_id):
    fake = FakeAppServer(runs=(run,))
    add_history_routes(fake)
    with source_over(fake) as source:
        report = ParseReport()
        doc = source.read_thread(thread_id, report)
    assert fake.unmatched == []
    assert doc is not None
    assert role_counts(doc) == EXPECTED[(run, thread_id)]
    assert doc.source == "cx_appserver" and doc.source_type == "codex_session"
    assert doc.thread_id == thread_id
    assert doc.doc_id == thread_doc_id("codex_session", thread_id)
    assert doc.source_uri == f"codex://thread/{thread_id}"
    assert len({t.turn_id for t in doc.turns}) == len(doc.turns)
    assert all(t.text.strip() for t in doc.turns)
    assert all("base64," not in t.text for t in doc.turns)
    assert doc.title and doc.created_at and doc.updated_at
    assert doc.links.repo_paths and doc.metadata["history_mode"] in ("legacy", "paginated")
    assert report.counts["items_total"] == sum(EXPECTED[(run, thread_id)].values())


def test_paginated_thread_details():
    fake = FakeAppServer(runs=("run1",))
    add_history_routes(fake)
    with source_over(fake) as source:
        doc = source.read_thread(PAGINATED)
    assert doc.title == "Mock research thread"  # thread name beats preview
    tool = next(t for t in doc.turns if t.role == "tool")
    assert tool.tool.name == "exec_command"
    assert tool.tool.input["command"] == "/bin/bash -lc 'echo hi from mock tool'"
    assert tool.text == (
        "Tool: exec_command\n$ /bin/bash -lc 'echo hi from mock tool'\n(in /home/dev/run1/work)\n"
        "Output (exit code 0):\nhi from mock tool"
    )  # the rollout-file adapter's layout
    assert tool.turn_id == "01a20116-372c-7180-bb9b-e5e1dbe2f914:call_2"
    assert tool.meta["exit_code"] == 0
    image_turn = next(t for t in doc.turns if t.attachments)
    assert image_turn.role == "user"
    assert image_turn.attachments[0].kind == "image"
    assert image_turn.attachments[0].path == "/home/dev/run1/work/red.png"
    assert image_turn.text.startswith("What is in this image?")
    marker = next(t for t in doc.turns if t.role == "system")
    assert marker.text == "Context compacted." and marker.meta["kind"] == "compaction"
    assert marker.meta["item_type"] == "contextCompaction"
    reasoning = [t for t in doc.turns if t.meta["kind"] == "reasoning"]
    assert len(reasoning) == 4 and reasoning[0].role == "assistant"
    assert doc.turns[0].ts is not None and doc.turns[0].ts.year == 2026
    assert doc.metadata["model"] == "mock-model" and doc.metadata["model_provider"] == "mock_provider"
    assert doc.metadata["cli_version"] == "0.169.0" and doc.metadata["source_kind"] == "vscode"


def test_legacy_thread_metadata_and_git():
    fake = FakeAppServer(runs=("run3",))
    add_history_routes(fake)
    with source_over(fake) as source:
        doc = source.read_thread(LOCALPUSH_SHORT)
    assert doc.metadata["git"] == {"sha": "86b4a8d9581d63089e53845daf7dd787129a9972",
                                   "branch": "main", "origin_url": "redacted://url/d18f1190d0"}
    assert doc.links.repo_paths == ["/redacted/path/da0ba47443"]
    assert doc.links.model_extra["git_origin_url"] == "redacted://url/d18f1190d0"
    assert all(t.meta.get("turn_status") == "interrupted" for t in doc.turns)
    assert doc.metadata["originator"] == "Codex Desktop"
    # legacy items carry no timestamps; created/updated come from the thread
    assert doc.created_at.year == 2026 and doc.created_at.month == 2


def test_validation_failure_is_a_per_thread_error():
    fake = FakeAppServer(runs=("run3",))
    add_history_routes(fake)
    bad = copy.deepcopy(recorded("run3", "thread/read", threadId=LARGE_0106).response)
    bad["result"]["thread"]["turns"][0]["items"] = "not a list"
    fake.routes.insert(0, ("thread/read", lambda p: p["threadId"] == LARGE_0106 and p.get("includeTurns"),
                           lambda p: [bad]))
    with source_over(fake) as source:
        with pytest.raises(ThreadReadError, match="invalid response") as info:
            source.read_thread(LARGE_0106)
        assert info.value.outcome.reason == "invalid_response"
        assert source.read_thread(LOCALPUSH_SHORT) is not None


def test_unknown_items_are_kept_as_text_or_counted():
    raw = result_of(recorded("run1", "thread/read", includeTurns=True))
    items = raw["thread"]["turns"][0]["items"]
    items.append({"type": "holoDeck", "id": "h1", "text": "a future item with words"})
    items.append({"type": "pulse", "id": "p1", "intensity": 3})
    thread = s.ThreadReadResponse.model_validate(raw).thread
    assert isinstance(thread.turns[0].items[-1], s.UnknownItem)
    assert thread.turns[0].items[-1].raw["intensity"] == 3
    doc, counts = thread_to_conversation(thread)
    kept = [t for t in doc.turns if t.meta.get("unknown_item")]
    assert [t.text for t in kept] == ["a future item with words"]
    assert counts["unknown_items_kept"] == 1 and counts["unknown_items_dropped"] == 1


def test_tool_output_is_clipped_head_and_tail_and_base64_never_indexed():
    raw = result_of(recorded("run1", "thread/read", includeTurns=True))
    turn = raw["thread"]["turns"][1]
    command = next(i for i in turn["items"] if i["type"] == "commandExecution")
    command["aggregatedOutput"] = ("HEAD-LINE\n" + "".join(f"log line {i}: ok\n" for i in range(1500))
                                   + "TAIL-ERROR: boom")
    turn["items"][0]["content"].append({"type": "image", "url": "data:image/png;base64," + "A" * 5000})
    turn["items"][0]["content"][0]["text"] += " see data:image/png;base64," + "B" * 400
    turn["items"][-1]["text"] += "\nraw: " + "QUJD" * 200  # a bare base64 run in assistant text
    thread = s.ThreadReadResponse.model_validate(raw).thread
    doc, counts = thread_to_conversation(thread, options=NormalizeOptions(max_tool_output_chars=1000))
    tool = next(t for t in doc.turns if t.role == "tool")
    assert "HEAD-LINE" in tool.text and "TAIL-ERROR: boom" in tool.text
    assert "characters omitted" in tool.text and len(tool.text) < 1200
    assert tool.meta["output_chars"] > 20_000
    assert counts["tool_outputs_truncated"] == 1
    user = next(t for t in doc.turns if t.role == "user" and t.attachments)
    assert "base64" not in user.text and "[image/png data omitted]" in user.text
    assert user.attachments[0].mime_type == "image/png" and user.attachments[0].uri is None
    assert counts["data_urls_removed"] == 1
    answer = next(t for t in doc.turns if t.turn_id.endswith(":msg_3"))
    assert "QUJDQUJD" not in answer.text and "[base64 data, 800 chars omitted]" in answer.text
    assert counts["base64_runs_removed"] == 1


def test_clip_keeps_short_text_and_marks_long_text():
    counts: Counter[str] = Counter()
    assert clip("short", 100, counts, "c") == "short" and not counts
    clipped = clip("a" * 50 + "b" * 50, 20, counts, "c")
    assert clipped.startswith("a" * 15) and clipped.endswith("b" * 5) and "80 characters omitted" in clipped
    assert counts["c"] == 1


def test_tool_like_items_become_tool_turns():
    raw = result_of(recorded("run1", "thread/read", includeTurns=True))
    extra = [
        {"type": "fileChange", "id": "fc1", "status": "completed",
         "changes": [{"path": "/w/a.py", "kind": {"type": "update", "move_path": None},
                      "diff": "@@ -1 +1 @@\n-old\n+new\n"}]},
        {"type": "mcpToolCall", "id": "m1", "server": "docs", "tool": "search", "status": "completed",
         "arguments": {"q": "pydantic"}, "error": None,
         "result": {"content": [{"type": "text", "text": "found 3 pages"},
                                {"type": "image", "data": "QUJD", "mimeType": "image/png"}]}},
        {"type": "webSearch", "id": "w1", "query": "codex app-server",
         "action": {"type": "search", "query": "codex app-server", "queries": ["codex rpc"]}},
        {"type": "plan", "id": "pl1", "text": "1. read\n2. write"},
        {"type": "sleep", "id": "z1", "durationMs": 10},
    ]
    raw["thread"]["turns"][0]["items"].extend(extra)
    doc, counts = thread_to_conversation(s.ThreadReadResponse.model_validate(raw).thread)
    by_type = {t.meta["item_type"]: t for t in doc.turns}
    assert by_type["fileChange"].role == "tool" and "update /w/a.py" in by_type["fileChange"].text
    assert by_type["fileChange"].tool.input == {"files": ["/w/a.py"]}
    assert "+new" in by_type["fileChange"].text and by_type["fileChange"].tool.name == "apply_patch"
    mcp = by_type["mcpToolCall"]
    assert mcp.tool.name == "docs.search" and "found 3 pages" in mcp.text and "QUJD" not in mcp.text
    assert mcp.text.startswith('Tool: docs.search\n{"q": "pydantic"}\nOutput:')
    assert mcp.meta["media_omitted"] == 1
    assert by_type["webSearch"].text == "Tool: web_search\ncodex app-server\ncodex rpc"
    assert by_type["plan"].role == "assistant" and by_type["plan"].meta["kind"] == "plan"
    assert "sleep" not in by_type and counts["items_dropped_sleep"] == 1


def test_rollout_path_resolution_accepts_zst(tmp_path):
    plain = tmp_path / "rollout-x.jsonl"
    assert resolve_rollout_path(str(plain)) is None
    (tmp_path / "rollout-x.jsonl.zst").write_bytes(b"\x28\xb5\x2f\xfd")
    assert resolve_rollout_path(str(plain)) == str(plain) + ".zst"
    plain.write_text("{}\n")
    assert resolve_rollout_path(str(plain)) == str(plain)
    assert resolve_rollout_path(None) is None
