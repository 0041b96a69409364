"""Zip exports, other JSON, truncation, resyncs, corrupt and duplicate entries, memory."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
import orjson
import pytest
from chinvex.models.sources import ParseReport, SourceCandidate, SourceError, UnrecognisedSource
from chinvex_adapters.chat_export import precedence_key
from chat_export_support import (
    ADAPTER,
    CHATLORE,
    candidates,
    comparable,
    conversation,
    generate_export,
    measure_parse,
    msg,
    parse_path,
    text,
    three_conversations,
    write_json,
)


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
