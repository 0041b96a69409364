"""ChatGPT and claude.ai JSON exports → documents: counts, branches, content types, odd entries."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from chinvex.ids import thread_doc_id
from chat_export_support import (
    CHATGPT,
    CHATLORE,
    GRAPH,
    candidates,
    conversation,
    msg,
    node,
    parse_path,
    roles,
    text,
    write_json,
)


def test_enumerate_shared_fixtures_finds_both_exports():
    cands, skipped = candidates(CHATGPT)
    assert sorted(c.source_uri for c in cands) == [str(GRAPH), str(CHATLORE)]
    assert not skipped
    for cand in cands:
        st_ = Path(cand.source_uri).stat()
        assert (cand.size_bytes, cand.mtime_ns) == (st_.st_size, st_.st_mtime_ns)
        assert cand.source_type == "chat" and cand.adapter == "chat_export"


def test_chatgpt2graph_counts():
    # Counted by hand from the file: current_node walks all 45 nodes (no branch). Node 1 is the
    # null-message root; 2 system messages are hidden (weight 0 / is_visually_hidden). Of the 42
    # others: 8 user messages, 12 assistant text messages, 11 assistant `code` messages with
    # recipient "python" each followed by one `tool` execution_output → 11 tool turns.
    docs, report = parse_path(GRAPH)
    assert len(docs) == 1
    doc = docs[0]
    assert roles(doc) == Counter(user=8, assistant=12, tool=11)
    assert len(doc.turns) == 31
    assert report.counts["messages_hidden"] == 2
    assert doc.thread_id == "966da5c4-5bb7-4e4d-ab6d-a7316b96266e"
    assert doc.doc_id == thread_doc_id("chat", doc.thread_id)
    assert doc.source == "chatgpt_export" and doc.source_type == "chat"
    assert doc.source_uri == f"{GRAPH}#{doc.thread_id}"
    assert doc.title == "Average Distance in U(0,1)"
    assert doc.metadata["model"] == "gpt-4-code-interpreter"
    assert doc.metadata["branch_points"] == 0
    # 7 execution outputs displayed a figure (<<ImageDisplayed>>): images become attachments.
    images = [a for t in doc.turns for a in t.attachments if a.kind == "image"]
    assert len(images) == 7 and all(a.uri.startswith("file-service://") for a in images)
    tools = [t for t in doc.turns if t.role == "tool"]
    assert all(t.tool and t.tool.name == "python" for t in tools)
    assert any("Result:\n1/3" in t.text for t in tools)  # the sympy result is searchable
    assert [t.ts for t in doc.turns] == sorted(t.ts for t in doc.turns)
    assert len({t.turn_id for t in doc.turns}) == 31


def test_chatlore_counts_branch_and_edge_records():
    # By hand: 4 entries. #1 "Postgres indexing": path a3→x1→c1→t1→u2→a2→u1→sys→root; sys is
    # hidden; u1 has two children (a1 regenerated, a2 kept). Turns: u1, a2, u2 (image+text),
    # t1 (thoughts → its summary), c1+x1 (code run by python → one tool turn), a3.
    # #2 "Trip ideas": b1 user, b2 assistant. #3 has no mapping. #4 has no id and only a root.
    docs, report = parse_path(CHATLORE)
    assert [d.title for d in docs] == ["Postgres indexing", "Trip ideas"]
    pg, trip = docs
    assert [t.turn_id for t in pg.turns] == ["u1", "a2", "u2", "t1", "c1", "a3"]
    assert roles(pg) == Counter(user=2, assistant=3, tool=1)
    assert roles(trip) == Counter(user=1, assistant=1)
    assert trip.thread_id == "22222222-aaaa-4bbb-8ccc-000000000002"  # from `id`
    assert report.counts["entries_without_mapping"] == 1
    assert report.counts["conversations_without_turns"] == 1
    assert report.counts["messages_hidden"] == 1


def test_chatlore_visible_branch_only():
    docs, _ = parse_path(CHATLORE)
    pg = docs[0]
    texts = "\n".join(t.text for t in pg.turns)
    assert "You are missing an index on customer_id" in texts
    assert "First answer that was regenerated." not in texts
    assert pg.metadata["branches"] == [{"node_id": "u1", "chosen": "a2", "alternatives": ["a1"]}]
    assert pg.metadata["alternative_branches"] == 1 and pg.metadata["off_branch_messages"] == 1
    thoughts = pg.turns[3]
    assert thoughts.text == "x" and thoughts.meta["thoughts_summary"]  # summary, not content "y"
    tool = pg.turns[4]
    assert tool.tool.name == "python" and "CREATE INDEX idx_orders_customer" in tool.text
    assert tool.text.endswith("Result:\nCREATE INDEX")
    assert [a.uri for a in pg.turns[2].attachments] == ["file-service://file-2"]
    assert pg.turns[0].attachments[0].name == "explain.txt"


def test_null_message_and_null_times_fall_back(tmp_path):
    conv = conversation(
        "c-times",
        msg("m1", "user", text("first, time unknown"), None),
        msg("m2", "assistant", text("answer at 1700000100"), 1700000100.0),
        msg("m3", "user", text("follow-up, time unknown"), None),
        create_time=1699999000.0,
    )
    conv["mapping"]["dangling"] = node("dangling", "root", [], None)  # null message off-branch
    docs, _ = parse_path(write_json(tmp_path / "conversations.json", [conv]))
    (doc,) = docs
    stamps = [t.ts.timestamp() for t in doc.turns]
    assert stamps == [1700000100.0, 1700000100.0, 1700000100.0]  # next, itself, previous
    assert doc.created_at.timestamp() == 1699999000.0

    only_nulls = conversation("c-null", msg("n1", "user", text("no time anywhere"), None),
                              create_time=None, update_time=None)
    docs, _ = parse_path(write_json(tmp_path / "conversations.json", [only_nulls]))
    assert docs[0].turns[0].ts is None and docs[0].created_at is None


def test_entry_without_mapping_or_id(tmp_path):
    no_id = conversation("x", msg("m1", "user", text("hello without id")))
    del no_id["conversation_id"]
    data = [{"title": "only a title", "conversation_id": "c-nomap"}, no_id, 42]
    path = write_json(tmp_path / "conversations.json", data)
    docs, report = parse_path(path)
    assert len(docs) == 1
    assert docs[0].thread_id.startswith("synthetic-") and docs[0].metadata["thread_id_synthetic"]
    assert report.counts["entries_without_mapping"] == 1
    assert report.counts["entries_not_object"] == 1
    again, _ = parse_path(path)
    assert again[0].thread_id == docs[0].thread_id  # stable while the file is


def test_content_types_and_tool_pairing(tmp_path):
    conv = conversation(
        "c-types",
        msg("u1", "user", {"content_type": "multimodal_text", "parts": [
            {"content_type": "image_asset_pointer", "asset_pointer": "sediment://file_abc", "size_bytes": 2048,
             "width": 64, "height": 32},
            "what is in this picture?", "",
            {"content_type": "audio_transcription", "text": "spoken words here"},
            {"content_type": "real_time_user_audio_video_asset_pointer",
             "audio_asset_pointer": {"content_type": "audio_asset_pointer",
                                     "asset_pointer": "sediment://audio_1"}},
        ]}, 1.0),
        msg("a1", "assistant", {"content_type": "code", "language": "unknown", "text": "search('pgvector hnsw')"},
            2.0, recipient="browser"),
        msg("t1", "tool", {"content_type": "tether_browsing_display",
                           "result": "HNSW index build is slow on 1M rows",
                           "summary": "pgvector docs"}, 3.0, name="browser"),
        msg("q1", "tool", {"content_type": "tether_quote", "url": "https://example.org/hnsw",
                           "domain": "example.org",
                           "title": "HNSW tuning", "text": "raise maintenance_work_mem"}, 3.5, name="browser"),
        msg("a2", "assistant", text("Use ef_construction=64."), 4.0),
        msg("a3", "assistant", {"content_type": "text", "parts": ['{"prompt": "a cat"}']}, 5.0,
            recipient="dalle.text2im"),
        msg("t2", "tool", {"content_type": "multimodal_text", "parts": [
            {"content_type": "image_asset_pointer", "asset_pointer": "file-service://file-gen",
             "metadata": {"dalle": {"prompt": "a watercolor cat"}}}]}, 6.0, name="dalle.text2im"),
        msg("r1", "assistant", {"content_type": "reasoning_recap", "content": "Thought for 12s"}, 7.0),
        msg("s1", "user", {"content_type": "user_editable_context", "user_profile": "I am a DBA",
                           "user_instructions": "Answer briefly"}, 8.0),
        msg("s2", "assistant", {"content_type": "model_editable_context",
                                "model_set_context": "User runs Postgres 16"}, 9.0),
        msg("e1", "tool", {"content_type": "system_error", "name": "ToolError", "text": "timeout"}, 10.0,
            name="python"),
        msg("k1", "assistant", {"content_type": "brand_new_widget", "text": "widget text survives"}, 11.0),
        msg("k2", "assistant", {"content_type": "opaque_thing", "blob": [1, 2]}, 12.0),
        msg("h1", "assistant", text("hidden by weight"), 13.0, weight=0.0),
        msg("h2", "user", text("hidden by flag"), 14.0, metadata={"is_visually_hidden_from_conversation": True}),
        msg("z1", "user", text("", ""), 15.0),
    )
    docs, report = parse_path(write_json(tmp_path / "conversations.json", [conv]))
    (doc,) = docs
    by_id = {t.turn_id: t for t in doc.turns}
    u1 = by_id["u1"]
    assert u1.text == "what is in this picture?\n\nspoken words here"
    assert [(a.kind, a.uri) for a in u1.attachments] == [("image", "sediment://file_abc"),
                                                          ("audio", "sediment://audio_1")]
    browse = by_id["a1"]
    assert browse.role == "tool" and browse.tool.name == "browser"
    assert "search('pgvector hnsw')" in browse.text and "HNSW index build is slow" in browse.text
    assert "raise maintenance_work_mem" in browse.text and browse.meta["result_message_ids"] == ["t1", "q1"]
    dalle = by_id["a3"]
    assert dalle.role == "tool" and "[generated image] a watercolor cat" in dalle.text
    assert dalle.attachments[0].uri == "file-service://file-gen"
    assert "r1" not in by_id and report.counts["reasoning_recaps_skipped"] == 1
    assert by_id["s1"].role == "user" and "Answer briefly" in by_id["s1"].text
    assert "User runs Postgres 16" in by_id["s2"].text
    assert by_id["e1"].role == "tool" and "ToolError: timeout" in by_id["e1"].text
    assert by_id["k1"].text == "widget text survives"
    assert "k2" not in by_id and report.counts["content_unknown:opaque_thing"] == 1
    assert "h1" not in by_id and "h2" not in by_id and report.counts["messages_hidden"] == 2
    assert "z1" not in by_id and report.counts["messages_empty"] >= 1


def test_missing_current_node_uses_newest_leaf(tmp_path):
    conv = conversation("c-leaf", msg("m1", "user", text("q"), 1.0), msg("m2", "assistant", text("old"), 2.0))
    conv["mapping"]["m1"]["children"].append("m3")
    conv["mapping"]["m3"] = node("m3", "m1", [], msg("m3", "assistant", text("newer regeneration"), 3.0))
    del conv["current_node"]
    docs, report = parse_path(write_json(tmp_path / "conversations.json", [conv]))
    assert [t.text for t in docs[0].turns] == ["q", "newer regeneration"]
    assert report.counts["current_node_missing"] == 1
