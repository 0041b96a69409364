"""Fuzzed structures and bytes, nesting guards, lone surrogate escapes."""

from __future__ import annotations

import json
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from chinvex.models import ConversationDoc
from chinvex.models.sources import SourceError
from chat_export_support import (
    GOOD_ENTRY,
    _first_too_deep,
    _max_depth,
    _nested,
    conversation,
    conversations,
    damaged_conversations,
    json_values,
    msg,
    parse_bytes,
    parse_path,
    text,
    three_conversations,
)


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
