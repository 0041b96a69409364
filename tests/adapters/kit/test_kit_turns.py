"""kit.turns and kit.jsonl / kit.sniff: the one way turns are built and files are read."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from chinvex_adapters.kit.jsonl import read_jsonl
from chinvex_adapters.kit.sniff import first_objects, json_shape
from chinvex_adapters.kit.turns import ConversationBuilder, render_output, role_of


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



def test_web_search_hits_keep_title_and_address_and_images_are_named():
    # Item shapes of claude.ai `tool_result` content (web_search, and an image a tool returned)
    # as seen in real exports, which cannot be copied here; the values are made up.
    hit = {"type": "knowledge", "title": "PostgreSQL: Routine Vacuuming",
           "url": "https://www.postgresql.org/docs/current/routine-vacuuming.html",
           "text": "Autovacuum is triggered by autovacuum_vacuum_scale_factor.",
           "metadata": {"type": "webpage_metadata", "site_domain": "postgresql.org",
                        "favicon_url": "https://www.google.com/s2/favicons?sz=64&domain=postgresql.org",
                        "site_name": "PostgreSQL"},
           "is_missing": False}
    assert render_output(hit) == ("PostgreSQL: Routine Vacuuming "
                                  "(https://www.postgresql.org/docs/current/routine-vacuuming.html)\n"
                                  "Autovacuum is triggered by autovacuum_vacuum_scale_factor.")
    assert render_output({"type": "knowledge", "url": "https://e.x/a", "text": ""}) == "https://e.x/a"
    assert render_output({"type": "knowledge", "title": "T", "text": "body"}) == "T\nbody"
    image = {"type": "image", "file_uuid": "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"}
    assert render_output([hit, image]).endswith("\n[image: 0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d]")
    assert render_output({**image, "file_name": "plot.png"}) == "[image: plot.png]"
    # Other shapes are read as before: text blocks by their text, an image of another shape
    # (no file named) as JSON, a knowledge item with nothing to show as JSON.
    assert render_output({"type": "text", "text": "File created"}) == "File created"
    other = {"type": "image", "source": {"type": "base64", "data": "AAAA"}}
    assert render_output(other) == '{"type": "image", "source": {"type": "base64", "data": "AAAA"}}'
    assert render_output({"type": "knowledge", "metadata": {}}) == '{"type": "knowledge", "metadata": {}}'

    b = ConversationBuilder(Counter())
    b.tool_call("web_search", {"query": "autovacuum scale factor"}, call_id="t1")
    b.tool_result([hit, image], call_id="t1")
    (turn,) = b.finish()
    assert "postgresql.org/docs/current/routine-vacuuming.html" in turn.text
    assert "Routine Vacuuming" in turn.text and "favicon" not in turn.text and "[image: 0a1b2c3d" in turn.text

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
