"""kit.turns and kit.jsonl / kit.sniff: the one way turns are built and files are read."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from chinvex_adapters.kit.jsonl import read_jsonl
from chinvex_adapters.kit.sniff import first_objects, json_shape
from chinvex_adapters.kit.turns import ConversationBuilder, role_of


def test_calls_pair_with_results_by_id_else_by_name():
    counts: Counter[str] = Counter()
    b = ConversationBuilder(counts, cwd="/w")
    b.message("human", "fix it", ts="2026-01-01T00:00:00Z", turn_id="u1")
    b.tool_call("Bash", {"command": "ls"}, call_id="c1", ts=1767225601000)
    b.tool_call("Write", {"file_path": "a.py", "content": "x"}, ts=1767225602)
    b.tool_result("a.py  b.py", call_id="c1")
    b.tool_result({"stdout": "written"}, name="Write")
    b.tool_result("orphan", call_id="zz", name="Grep")
    b.message("model", "", turn_id="empty")
    turns = b.finish()
    assert [t.role for t in turns] == ["user", "tool", "tool", "tool"]
    assert "Result:\na.py  b.py" in turns[1].text and "Result:\nwritten" in turns[2].text
    assert turns[2].meta["edits"][0]["abs_path"] == "/w/a.py"
    assert turns[3].meta["unmatched_result"] and counts["tool_results_unmatched"] == 1
    assert counts["messages_empty"] == 1 and turns[1].ts.isoformat() == "2026-01-01T00:00:01+00:00"
    assert b.edited_paths() == ["/w/a.py"]


def test_thinking_can_be_left_out_and_roles_are_mapped():
    b = ConversationBuilder(Counter(), include_thinking=False)
    assert b.thinking("hmm") is None
    assert role_of("gemini") == "assistant" and role_of("Human") == "user" and role_of("robot") is None


def test_jsonl_keeps_complete_lines_and_counts_bad_ones(tmp_path: Path):
    path = tmp_path / "s.jsonl"
    path.write_bytes(b'{"a": 1}\nnot json\n[1]\n{"b": 2}\n{"c": ')
    counts: Counter[str] = Counter()
    read = read_jsonl(path, counts)
    assert [l.data for l in read.lines] == [{"a": 1}, {"b": 2}]
    assert read.partial_tail and read.invalid == 1 and read.not_objects == 1
    assert first_objects(path) == [{"a": 1}, {"b": 2}]


def test_json_shape_of_a_cut_prefix():
    shape = json_shape(b'{"sessionId": "s", "messages": [{"type": "user", "content": "hel')
    assert shape.kind == "object" and shape.keys == ["sessionId", "messages"] and shape.scalars == {"sessionId": "s"}
    assert json_shape(b'[{"uuid": "u", "chat_messages": []}, {"x"').keys == ["uuid", "chat_messages"]
    assert json_shape(b"nope").kind is None
