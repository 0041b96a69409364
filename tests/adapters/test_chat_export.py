"""The chat_export adapter on real ChatGPT exports (tests/fixtures/samples), markdown chat exports
(tests/fixtures/chat_export) and generated damage: truncation, corruption, huge files."""

from __future__ import annotations

import copy
import io
import json
import os
import subprocess
import sys
import zipfile
from collections import Counter
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chinvex.ids import thread_doc_id
from chinvex.models import ConversationDoc, Document
from chinvex.models.sources import (
    AdapterOptions,
    ParseReport,
    SkippedSource,
    SourceCandidate,
    SourceError,
    UnrecognisedSource,
)
from chinvex_adapters.chat_export import ChatExportAdapter, precedence_key
from chinvex_adapters.chat_export.adapter import parse_conversations
from helpers import FIXTURES, TEST_FIXTURES, dicts_in

CHATGPT = FIXTURES / "chatgpt-export"
GRAPH = CHATGPT / "chatgpt2graph" / "conversations.json"
CHATLORE = CHATGPT / "chatlore" / "conversations.json"
MD = TEST_FIXTURES / "chat_export"

ADAPTER = ChatExportAdapter()


def options(**kw) -> AdapterOptions:
    return AdapterOptions(context_name="test", **kw)


def candidates(root: Path, **kw) -> tuple[list[SourceCandidate], list[SkippedSource]]:
    found = list(ADAPTER.enumerate(root, options(**kw)))
    return ([c for c in found if isinstance(c, SourceCandidate)],
            [s for s in found if isinstance(s, SkippedSource)])


def parse_path(path: Path) -> tuple[list, ParseReport]:
    cands, _ = candidates(path)
    assert len(cands) == 1, cands
    report = ParseReport()
    return list(ADAPTER.parse(cands[0], report, None)), report


def roles(doc: ConversationDoc) -> Counter:
    return Counter(t.role for t in doc.turns)


def write_json(path: Path, data) -> Path:
    path.write_bytes(orjson.dumps(data))
    return path


# ---------------------------------------------------------------------------------------------
# The shared fixtures, counted by hand.
# ---------------------------------------------------------------------------------------------

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


# ---------------------------------------------------------------------------------------------
# Synthetic conversations for the rules the fixtures do not exercise.
# ---------------------------------------------------------------------------------------------

def node(nid, parent, children, message=None):
    return {"id": nid, "parent": parent, "children": children, "message": message}


def msg(mid, role, content, t=None, **extra):
    m = {"id": mid, "author": {"role": role, "name": extra.pop("name", None)}, "create_time": t,
         "content": content, "metadata": extra.pop("metadata", {}), "recipient": extra.pop("recipient", "all")}
    m.update(extra)
    return m


def text(*parts):
    return {"content_type": "text", "parts": list(parts)}


def chain(*messages):
    """A linear mapping root → m1 → m2 … with current_node on the last message."""
    ids = ["root"] + [m["id"] for m in messages]
    mapping = {}
    for i, nid in enumerate(ids):
        mapping[nid] = node(nid, ids[i - 1] if i else None, [ids[i + 1]] if i + 1 < len(ids) else [],
                            messages[i - 1] if i else None)
    return mapping, ids[-1]


def conversation(cid, *messages, **extra):
    mapping, current = chain(*messages)
    conv = {"title": extra.pop("title", f"conv {cid}"), "create_time": extra.pop("create_time", 1700000000.0),
            "update_time": extra.pop("update_time", 1700000500.0), "mapping": mapping,
            "current_node": current, "conversation_id": cid}
    conv.update(extra)
    return conv


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


# ---------------------------------------------------------------------------------------------
# Zip exports, bad files, damage.
# ---------------------------------------------------------------------------------------------

def comparable(doc: ConversationDoc) -> dict:
    data = doc.model_dump(mode="json")
    data.pop("source_uri")
    for key in ("export_file", "zip_member"):
        data["metadata"].pop(key, None)
    return data


def test_zip_export_gives_the_same_documents(tmp_path):
    archive = tmp_path / "chatgpt-export-2026-01-03.zip"
    with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.write(CHATLORE, "conversations.json")
        zf.writestr("user.json", '{"id": "user-1"}')
        zf.writestr("file-abc-photo.png", b"\x89PNG....")
    (tmp_path / "chat.html").write_text("<html></html>")
    cands, skipped = candidates(tmp_path)
    assert [c.extra["kind"] for c in cands] == ["chatgpt_zip"]
    assert [(s.reason, Path(s.source_uri).name) for s in skipped] == [("not_supported", "chat.html")]
    report = ParseReport()
    from_zip = list(ADAPTER.parse(cands[0], report, None))
    plain, _ = parse_path(CHATLORE)
    assert [comparable(d) for d in from_zip] == [comparable(d) for d in plain]
    assert all(d.source_uri == f"{archive}#{d.thread_id}" for d in from_zip)
    assert from_zip[0].metadata["zip_member"] == "conversations.json"


def test_zip_without_conversations_is_skipped_and_bad_zip_errors(tmp_path):
    with zipfile.ZipFile(tmp_path / "photos.zip", "w") as zf:
        zf.writestr("a.png", b"x")
    (tmp_path / "broken.zip").write_bytes(b"PK\x03\x04 not really")
    cands, skipped = candidates(tmp_path)
    assert not cands
    assert {(Path(s.source_uri).name, s.reason) for s in skipped} == {
        ("photos.zip", "not_supported"), ("broken.zip", "unreadable")}
    cand = SourceCandidate(source_uri=str(tmp_path / "broken.zip"), source_type="chat",
                           adapter="chat_export", root=str(tmp_path), path=tmp_path / "broken.zip",
                           extra={"kind": "chatgpt_zip"})
    with pytest.raises(SourceError, match="broken.zip"):
        list(ADAPTER.parse(cand, ParseReport(), None))


@pytest.mark.parametrize("content, expected", [
    (b"hello, this is not json", "not a JSON array"),
    (b'{"title": "one conversation as an object"}', "a JSON object"),
    (b"[1, 2, 3]", "not of ChatGPT or claude.ai conversations"),
    (b"", "empty file"),
    (b"[{\"title\": \"x\", \"mapping\": {]", "not valid JSON"),
])
def test_not_a_conversations_array_raises_source_error(tmp_path, content, expected):
    path = tmp_path / "conversations.json"
    path.write_bytes(content)
    with pytest.raises(UnrecognisedSource) as info:  # skipped with this line, not a failure
        parse_path(path)
    message = str(info.value)
    assert str(path) in message and expected in message and "\n" not in message


def test_other_json_files_are_sniffed_not_parsed(tmp_path):
    write_json(tmp_path / "message_feedback.json", [{"id": "f1", "rating": "thumbsUp"}])
    write_json(tmp_path / "user.json", {"id": "u"})
    write_json(tmp_path / "older-export.json", [conversation("c1", msg("m1", "user", text("hi")))])
    cands, skipped = candidates(tmp_path)
    assert [Path(c.source_uri).name for c in cands] == ["older-export.json"]
    assert sorted(Path(s.source_uri).name for s in skipped) == ["message_feedback.json", "user.json"]


def three_conversations() -> list[dict]:
    return [conversation(f"c{i}", msg(f"m{i}", "user", text(f"question number {i}"), float(i)))
            for i in (1, 2, 3)]


def test_truncated_file_keeps_what_was_complete(tmp_path):
    data = orjson.dumps(three_conversations())
    cut = data.index(b'"c3"') - 40  # inside the third conversation
    path = tmp_path / "conversations.json"
    path.write_bytes(data[:cut])
    docs, report = parse_path(path)
    assert [d.thread_id for d in docs] == ["c1", "c2"]
    assert report.counts["truncated"] == 1
    assert any("truncated" in w for w in report.warnings)


def test_syntax_error_in_the_middle_resyncs(tmp_path):
    data = orjson.dumps(three_conversations())
    start = data.index(b'"question number 2"')
    broken = data[:start] + b'"question \xff number 2" garbage' + data[start + len(b'"question number 2"'):]
    path = tmp_path / "conversations.json"
    path.write_bytes(broken)
    docs, report = parse_path(path)
    assert [d.thread_id for d in docs] == ["c1", "c3"]
    assert report.counts["json_resyncs"] >= 1
    assert any("invalid JSON" in w for w in report.warnings)


def test_stray_bracket_does_not_end_the_array_early(tmp_path):
    data = orjson.dumps(three_conversations())
    start = data.index(b'"question number 2"')
    path = tmp_path / "conversations.json"
    path.write_bytes(data[:start] + b'"question number 2"]]' + data[start + len(b'"question number 2"'):])
    docs, report = parse_path(path)
    assert [d.thread_id for d in docs] == ["c1", "c3"]
    assert report.counts["json_resyncs"] >= 1 and not report.counts["trailing_garbage"]

    path.write_bytes(orjson.dumps(three_conversations()) + b"\n%%EOF junk")
    docs, report = parse_path(path)
    assert [d.thread_id for d in docs] == ["c1", "c2", "c3"] and report.counts["trailing_garbage"] == 1


def test_corrupt_entry_in_the_middle_is_counted(tmp_path):
    data = three_conversations()
    data[1]["mapping"] = {"root": "not a node", "m2": {"message": "not a message", "parent": ["x"]}}
    data[1]["current_node"] = {"weird": True}
    docs, report = parse_path(write_json(tmp_path / "conversations.json", data))
    assert [d.thread_id for d in docs] == ["c1", "c3"]
    assert report.counts["conversations_without_turns"] == 1
    assert report.counts["entries_failed"] == 0


def test_duplicate_conversation_in_one_file_keeps_first(tmp_path):
    first, second = three_conversations()[:2]
    copy = json.loads(json.dumps(first))
    copy["title"] = "later copy"
    docs, report = parse_path(write_json(tmp_path / "conversations.json", [first, second, copy]))
    assert [d.title for d in docs] == ["conv c1", "conv c2"]
    assert report.counts["duplicate_conversations"] == 1


def test_same_conversation_in_two_exports_shares_doc_id_and_precedence_is_deterministic(tmp_path):
    old = conversation("c-shared", msg("m1", "user", text("v1")), update_time=1700000000.0)
    new = conversation("c-shared", msg("m1", "user", text("v1")), msg("m2", "assistant", text("v2")),
                       update_time=1700009999.0)
    (tmp_path / "2025").mkdir()
    (tmp_path / "2026").mkdir()
    write_json(tmp_path / "2025" / "conversations.json", [old])
    write_json(tmp_path / "2026" / "conversations.json", [new])
    cands, _ = candidates(tmp_path)
    docs = [d for c in cands for d in ADAPTER.parse(c, ParseReport(), None)]
    assert len({d.doc_id for d in docs}) == 1
    for order in (docs, docs[::-1]):
        assert max(order, key=precedence_key).source_uri.startswith(str(tmp_path / "2026"))


# ---------------------------------------------------------------------------------------------
# Streaming: memory stays bounded on a large export.
# ---------------------------------------------------------------------------------------------

def generate_export(path: Path, target_bytes: int) -> int:
    """Write a realistic conversations.json of about `target_bytes`, one conversation at a time."""
    paragraph = ("The planner chose a sequential scan because the statistics are stale; "
                 "run ANALYZE and compare the estimated and actual row counts. ") * 4
    written = count = 0
    with path.open("wb") as out:
        out.write(b"[")
        while written < target_bytes:
            messages = [msg(f"c{count}-m{j}", "user" if j % 2 == 0 else "assistant",
                            text(f"{paragraph} (conversation {count}, message {j})"),
                            1700000000.0 + count * 100 + j) for j in range(16)]
            blob = orjson.dumps(conversation(f"conv-{count:06d}", *messages))
            out.write((b"," if count else b"") + blob)
            written += len(blob) + 1
            count += 1
        out.write(b"]")
    return count


MEASURE = """
import gc, json, sys, time
import psutil
from chinvex.models.sources import ParseReport
from chinvex_adapters.chat_export.adapter import parse_conversations
path = sys.argv[1]
gc.collect()
baseline = psutil.Process().memory_info().rss
report = ParseReport()
started = time.perf_counter()
count = turns = 0
for doc in parse_conversations(lambda: open(path, "rb"), path, path, report):
    count += 1
    turns += len(doc.turns)
elapsed = time.perf_counter() - started
# VmHWM, not ru_maxrss: Linux keeps ru_maxrss across exec, so it would report the pytest
# process that forked this interpreter (hundreds of MB) instead of this one.
peak = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM")) * 1024
print(json.dumps({"count": count, "turns": turns, "seconds": elapsed, "warnings": report.warnings,
                  "growth_mb": (peak - baseline) / 1024 / 1024}))
"""


def measure_parse(path: Path) -> dict:
    """Parse in a fresh interpreter: its peak RSS (VmHWM) minus its RSS before parsing."""
    proc = subprocess.run([sys.executable, "-c", MEASURE, str(path)], capture_output=True, text=True,
                          timeout=300, check=True)
    return json.loads(proc.stdout)


def test_streaming_50mb_export_keeps_memory_bounded(tmp_path):
    small, large = tmp_path / "small" / "conversations.json", tmp_path / "large" / "conversations.json"
    small.parent.mkdir()
    large.parent.mkdir()
    generate_export(small, 1024 * 1024)
    expected = generate_export(large, 50 * 1024 * 1024)
    assert large.stat().st_size >= 50 * 1024 * 1024
    base = measure_parse(small)
    result = measure_parse(large)
    print(f"\n50 MB export: {result['count']} conversations, {result['turns']} turns in "
          f"{result['seconds']:.1f}s, peak RSS growth {result['growth_mb']:.1f} MB "
          f"(1 MB export: {base['growth_mb']:.1f} MB)")
    assert result["count"] == expected and result["turns"] == expected * 16
    assert not result["warnings"]
    # Peak memory does not grow with the file: a 50x larger export costs at most a few MB more
    # than a 1 MB one (json.load of the same 50 MB file peaks ~250 MB higher).
    assert result["growth_mb"] - base["growth_mb"] < 8
    # The absolute figure includes lazily imported modules and varies with machine load; it only
    # has to stay far below what loading the whole document would cost.
    assert result["growth_mb"] < 120


# ---------------------------------------------------------------------------------------------
# Markdown chat exports.
# ---------------------------------------------------------------------------------------------

def test_pionxzh_markdown_export():
    docs, report = parse_path(MD / "ChatGPT-Rust_lifetimes_in_iterators.md")
    (doc,) = docs
    assert isinstance(doc, ConversationDoc) and doc.source == "chat_markdown"
    assert doc.metadata["format"] == "pionxzh"
    # The conversation id comes from the `source:` URL, so the markdown copy and the JSON export
    # of the same conversation are one document.
    assert doc.thread_id == "6790a1b2-1c2d-8003-9e4f-0a1b2c3d4e5f"
    assert doc.doc_id == thread_doc_id("chat", doc.thread_id)
    assert doc.source_uri == str(MD / "ChatGPT-Rust_lifetimes_in_iterators.md")
    assert doc.title == "Rust lifetimes in iterators"
    assert [t.role for t in doc.turns] == ["user", "assistant", "user", "tool", "assistant", "assistant"]
    assert [t.turn_id for t in doc.turns] == ["md-1", "md-2", "md-3", "md-4", "md-6", "md-7"]
    user, thought = doc.turns[0], doc.turns[1]
    assert user.ts.isoformat() == "2025-01-22T09:14:03+00:00" and "<time" not in user.text
    assert [a.name for a in user.attachments] == ["windows.rs"]
    assert thought.meta["thinking"] and "<details>" not in thought.text
    assert "the borrow checker ties it to `&mut self`" in thought.text
    tool = doc.turns[3]
    assert tool.tool.name == "python" and "range(len(data) - 2)" in tool.text
    assert "[b'abc', b'bcd', b'cde', b'def']" in tool.text
    assert doc.turns[5].attachments[0].uri == "file-service://file-Rk2dLq8YtV5m3nP0wQ1aZx"
    assert doc.created_at.isoformat() == "2025-01-22T09:14:03+00:00"
    assert not report.warnings


def test_convoviz_markdown_export():
    docs, _ = parse_path(MD / "Postgres_vacuum_tuning.md")
    (doc,) = docs
    assert doc.metadata["format"] == "convoviz"
    assert doc.thread_id == "0b7e3f10-55aa-4c2b-9d41-7e0f3a2b6c11"
    assert [t.role for t in doc.turns] == ["system", "user", "assistant", "user", "assistant", "tool"]
    assert doc.title == "Postgres vacuum tuning"
    assert doc.created_at.isoformat() == "2024-03-05T18:02:11+00:00"
    assert doc.updated_at.isoformat() == "2024-03-05T18:40:57+00:00"
    answer = doc.turns[2].text
    assert "ALTER TABLE events SET" in answer and "# Me\nnot a heading here" in answer  # fenced
    assert not any(t.text.endswith("---") for t in doc.turns)
    assert all(t.ts == doc.created_at for t in doc.turns)  # no per-message times: the chat's


def test_bold_label_markdown_and_plain_markdown():
    docs, _ = parse_path(MD / "claude_ai_bold_labels.md")
    (doc,) = docs
    assert doc.metadata["format"] == "bold_labels" and doc.title == "Naming a CLI flag"
    assert [t.role for t in doc.turns] == ["user", "assistant", "user", "assistant"]
    assert doc.turns[1].text.startswith("Prefer `--dry-run`")
    assert doc.thread_id.startswith("md-")

    docs, _ = parse_path(MD / "meeting-notes.md")
    (plain,) = docs
    assert isinstance(plain, Document) and plain.source_type == "chat"
    assert plain.metadata["format"] == "plain_markdown"
    assert plain.title == "Q3 planning notes"
    assert plain.text == (MD / "meeting-notes.md").read_text()


def test_role_heading_markdown(tmp_path):
    path = tmp_path / "export.md"
    path.write_text("# Deploy question\n\n### User\n\nHow do I roll back?\n\n### Assistant\n\n"
                    "Run `kubectl rollout undo`.\n\n### User research\n\nnot a speaker heading\n")
    docs, _ = parse_path(path)
    (doc,) = docs
    assert doc.metadata["format"] == "role_headings" and doc.title == "Deploy question"
    assert [t.role for t in doc.turns] == ["user", "assistant"]
    assert doc.turns[1].text.endswith("### User research\n\nnot a speaker heading")


def test_markdown_with_broken_front_matter_still_parses(tmp_path):
    path = tmp_path / "chat.md"
    path.write_text("---\ntitle: [unclosed\n---\n\n## Prompt\n\nhow?\n\n## Response\n\nlike this\n")
    docs, report = parse_path(path)
    assert [t.role for t in docs[0].turns] == ["user", "assistant"]
    assert report.counts["front_matter_invalid"] == 1


# ---------------------------------------------------------------------------------------------
# Enumeration rules.
# ---------------------------------------------------------------------------------------------

def test_enumerate_excludes_symlinks_and_limits(tmp_path):
    root = tmp_path / "chats"
    (root / "keep").mkdir(parents=True)
    (root / "drafts").mkdir()
    (root / "keep" / "a.md").write_text("# A\n")
    (root / "drafts" / "b.md").write_text("# B\n")
    (root / "keep" / "notes.txt").write_text("x")
    (root / "keep" / "huge.md").write_text("x" * 2000)
    (root / ".obsidian").mkdir()
    (root / ".obsidian" / "c.md").write_text("# hidden\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "d.md").write_text("# D\n")
    os.symlink(outside, root / "link-out")
    os.symlink(root, root / "keep" / "loop")  # a link back to the root must not loop
    found = list(ADAPTER.enumerate(root, options(excludes=["drafts"], settings={"chat_markdown_max_bytes": 1000})))
    cands = [Path(c.source_uri).relative_to(root).as_posix() for c in found if isinstance(c, SourceCandidate)]
    skipped = {Path(s.source_uri).relative_to(root).as_posix(): s.reason for s in found
               if isinstance(s, SkippedSource)}
    assert cands == ["keep/a.md"]
    assert skipped == {"drafts": "excluded", "keep/huge.md": "too_large", "keep/notes.txt": "not_supported",
                       "link-out": "ignored"}


# ---------------------------------------------------------------------------------------------
# Fuzzing: anything yields documents or a SourceError, never another exception.
# ---------------------------------------------------------------------------------------------

json_scalars = (st.none() | st.booleans() | st.integers(-10**6, 10**6)
                | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=20))
json_values = st.recursive(json_scalars, lambda inner: st.lists(inner, max_size=4)
                           | st.dictionaries(st.text(max_size=8), inner, max_size=4), max_leaves=12)
def mostly(valid, junk=json_values):
    """Usually a well-formed value, sometimes junk, so that fuzzing also reaches deep code."""
    return st.one_of(valid, valid, valid, junk)


node_ids = st.sampled_from(["root", "a", "b", "c", "d"])
content_types = mostly(st.sampled_from([
    "text", "multimodal_text", "code", "execution_output", "thoughts", "tether_quote",
    "tether_browsing_display", "reasoning_recap", "user_editable_context", "model_editable_context",
    "system_error", "sonic_webpage", "mystery"]))
parts = st.lists(mostly(st.text(max_size=20) | st.fixed_dictionaries(
    {"content_type": st.sampled_from(["image_asset_pointer", "audio_transcription", "x"]),
     "asset_pointer": mostly(st.text(max_size=10)), "text": mostly(st.text(max_size=10))})), max_size=4)
messages = st.fixed_dictionaries({
    "id": mostly(node_ids),
    "author": mostly(st.fixed_dictionaries({
        "role": mostly(st.sampled_from(["user", "assistant", "tool", "system", "x"])),
        "name": mostly(st.none() | st.text(max_size=10))})),
    "content": mostly(st.fixed_dictionaries({"content_type": content_types}, optional={
        "parts": mostly(parts), "text": mostly(st.text(max_size=20)), "language": json_values,
        "thoughts": mostly(st.lists(st.dictionaries(st.sampled_from(["summary", "content"]), json_values))),
        "result": json_values, "title": json_values, "url": json_values,
    })),
}, optional={
    "create_time": mostly(st.none() | st.floats(-1e12, 1e12, allow_nan=False) | st.integers(-10**13, 10**13)),
    "recipient": mostly(st.sampled_from(["all", "python", "browser"])),
    "weight": json_values,
    "metadata": mostly(st.dictionaries(st.sampled_from([
        "is_visually_hidden_from_conversation", "model_slug", "attachments", "aggregate_result"]), json_values)),
})
nodes = st.fixed_dictionaries({"id": node_ids, "message": mostly(st.none() | messages),
                               "parent": mostly(st.none() | node_ids),
                               "children": mostly(st.lists(node_ids, max_size=3))})
conversations = st.fixed_dictionaries(
    {"mapping": mostly(st.dictionaries(node_ids, mostly(nodes), min_size=1, max_size=5))},
    optional={"title": json_values, "create_time": json_values, "update_time": json_values,
              "current_node": mostly(node_ids), "conversation_id": json_values, "id": json_values,
              "gizmo_id": json_values, "is_archived": json_values, "default_model_slug": json_values})


contents = st.one_of(
    st.builds(lambda ps: {"content_type": "text", "parts": ps}, st.lists(st.text(max_size=30), max_size=3)),
    st.builds(lambda ps: {"content_type": "multimodal_text", "parts": ps}, parts),
    st.builds(lambda t, lang: {"content_type": "code", "text": t, "language": lang},
              st.text(max_size=30), st.sampled_from(["python", "unknown", None])),
    st.builds(lambda t, url: {"content_type": "execution_output", "text": t},
              st.text(max_size=30), st.text(max_size=5)),
    st.builds(lambda th: {"content_type": "thoughts", "thoughts": th},
              st.lists(st.fixed_dictionaries({"summary": st.text(max_size=20), "content": st.text(max_size=20)}))),
    st.builds(lambda t: {"content_type": "tether_quote", "title": t, "url": "https://x", "text": t},
              st.text(max_size=20)),
    st.builds(lambda t: {"content_type": "tether_browsing_display", "result": t, "summary": t},
              st.text(max_size=20)),
    st.just({"content_type": "reasoning_recap", "content": "Thought for 3s"}),
    st.builds(lambda t: {"content_type": "user_editable_context", "user_profile": t, "user_instructions": t},
              st.text(max_size=20)),
    st.builds(lambda t: {"content_type": "system_error", "name": "E", "text": t}, st.text(max_size=20)),
    json_values,
)


@st.composite
def damaged_conversations(draw):
    """A well-formed conversation (tool calls, hidden and null-time messages, branches) with a
    few fields anywhere in it replaced by arbitrary JSON."""
    roles_ = st.sampled_from(["user", "assistant", "assistant", "tool", "system"])
    msgs = [msg(f"m{i}", draw(roles_), draw(contents), draw(st.none() | st.floats(0, 2e9)),
                recipient=draw(st.sampled_from(["all", "all", "python", "browser"])),
                name=draw(st.sampled_from([None, "python", "browser"])),
                weight=draw(st.sampled_from([1.0, 1.0, 0.0])))
            for i in range(draw(st.integers(1, 6)))]
    conv = copy.deepcopy(conversation(draw(st.sampled_from(["c1", "c2", "c3"])), *msgs))
    if draw(st.booleans()):  # a regeneration branch off the first message
        conv["mapping"]["m0"]["children"].append("alt")
        conv["mapping"]["alt"] = node("alt", "m0", [], msg("alt", "assistant", text("alt answer"), 5.0))
    targets = dicts_in(conv, [])
    for _ in range(draw(st.integers(0, 3))):
        target = draw(st.sampled_from(targets))
        key = draw(st.sampled_from(sorted(target) or ["x"]))
        target[key] = copy.deepcopy(draw(json_values))
    return conv


def parse_bytes(data: bytes) -> tuple[list, ParseReport]:
    report = ParseReport()
    docs = list(parse_conversations(lambda: io.BytesIO(data), "fuzz.json", "/fuzz/conversations.json", report))
    return docs, report


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(damaged_conversations() | conversations | json_values, max_size=4))
def test_fuzz_conversation_structures(entries):
    try:
        docs, report = parse_bytes(orjson.dumps(entries))
    except SourceError as exc:
        assert "\n" not in str(exc)
        return
    assert report.counts["entries_failed"] == 0  # handled by the converter, not the safety net
    for doc in docs:
        orjson.dumps(doc.model_dump(mode="json"))  # what the engine will store must serialise


GOOD_ENTRY = (b'{"title": "z", "mapping": {"q": {"message": {"author": {"role": "user"}, '
              b'"content": {"content_type": "text", "parts": ["recovered"]}}}}}')


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300) | st.builds(
    lambda head, junk, tail: head + junk + tail,
    st.sampled_from([b"[", b"[" + GOOD_ENTRY + b",", b'[{"title": "t", "mapping": {}}, {"title": ']),
    st.binary(max_size=100),
    st.sampled_from([b"", b"]", b"," + GOOD_ENTRY + b"]"])))
def test_fuzz_bytes(data):
    try:
        docs, _ = parse_bytes(data)
    except SourceError:
        return
    assert all(isinstance(d, ConversationDoc) for d in docs)


# ---------------------------------------------------------------------------------------------
# Hostile bytes: lone surrogate escapes and pathological nesting
# ---------------------------------------------------------------------------------------------

def _max_depth(value) -> int:
    if isinstance(value, dict):
        return 1 + max((_max_depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((_max_depth(v) for v in value), default=0)
    return 0


_nested = st.recursive(
    st.none() | st.integers() | st.text(alphabet='ab[]{}"\\ \n', max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(alphabet='k[{"\\', max_size=3),
                                                                  inner, max_size=3),
    max_leaves=30)


@settings(max_examples=300, deadline=None)
@given(value=_nested, limit=st.integers(1, 8), cuts=st.lists(st.integers(0, 300), max_size=8))
def test_nesting_guard_matches_the_real_depth_in_any_pieces(value, limit, cuts):
    """Brackets and quotes inside strings, escapes cut by a read boundary: the guard trips
    exactly when the JSON nests deeper than its limit."""
    from chinvex_adapters.chat_export.json_stream import NestedTooDeep, NestingGuard

    data = json.dumps(value).encode()
    points = sorted({min(c, len(data)) for c in cuts})
    guard = NestingGuard(limit)
    tripped_at = None
    for a, b in zip([0, *points], [*points, len(data)]):
        try:
            guard.feed(data[a:b])
        except NestedTooDeep as exc:
            tripped_at = a + exc.offset
            break
    assert tripped_at == _first_too_deep(data, limit)
    assert (tripped_at is not None) == (_max_depth(value) > limit)
    if tripped_at is None:
        assert guard.depth == 0 and not guard.in_string


def _first_too_deep(data: bytes, limit: int) -> int | None:
    """Reference: offset of the first bracket past `limit` levels, one byte at a time."""
    depth, in_string, escape = 0, False, False
    for i, byte in enumerate(data):
        char = chr(byte)
        if in_string:
            if escape:
                escape = False
            elif char == "\\":
                escape = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            if depth > limit:
                return i
        elif char in "]}":
            depth -= 1
    return None


def test_deeply_nested_conversation_is_skipped_and_its_neighbours_kept(tmp_path):
    convs = three_conversations()
    data = orjson.dumps(convs)
    deep = b"[" * 100_000 + b"]" * 100_000
    marker = b'"question number 2"'
    start = data.index(marker)
    path = tmp_path / "conversations.json"
    path.write_bytes(data[:start] + marker + b", " + deep + data[start + len(marker):])
    docs, report = parse_path(path)
    assert [d.thread_id for d in docs] == ["c1", "c3"]
    assert report.counts["json_too_deep"] >= 1
    assert any("nested deeper than" in w for w in report.warnings)


def test_export_nested_too_deeply_is_refused(tmp_path):
    path = tmp_path / "conversations.json"
    path.write_bytes(b"[" * 100_000 + b"]" * 100_000)
    with pytest.raises(SourceError, match="nested deeper than"):
        parse_path(path)


def test_lone_surrogate_escapes_cost_one_character_even_across_read_buffers(tmp_path):
    """A surrogate pair then a lone surrogate escape, placed at every offset across the first
    64 KB read boundary: the pair stays one emoji, the lone one becomes one U+FFFD."""
    from chinvex_adapters.chat_export.json_stream import BUF_SIZE

    def export(pad: int) -> bytes:
        convs = [conversation("c0", msg("m0", "user", text("p" * pad), 1.0)),
                 conversation("c1", msg("m1", "user", text("question LONE after"), 2.0))]
        return orjson.dumps(convs).replace(b"LONE", b"\\ud83d\\ude00 \\udc80")

    base = export(0).index(b"\\ud83d")
    boundary = 1 + BUF_SIZE  # reading starts after the array's `[`
    path = tmp_path / "conversations.json"
    for shift in range(0, 20):
        path.write_bytes(export(boundary - shift - base))
        docs, report = parse_path(path)
        assert [d.thread_id for d in docs] == ["c0", "c1"], (shift, report.warnings)
        [turn] = [t for t in docs[1].turns if t.role == "user"]
        assert turn.text == "question \U0001f600 \ufffd after", (shift, turn.text)
