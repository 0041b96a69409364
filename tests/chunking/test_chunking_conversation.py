"""Conversation chunking: markers, whole turns, parts, prefix stability, stable embed text."""

from __future__ import annotations

import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chinvex.chunking import embed_text, render_conversation, stable_text
from chinvex.chunking.base import MAX_TOKENS
from chinvex.chunking.validate import chunk_problems
from chinvex.embedding.tokenizer import count_tokens_batch
from chinvex.models.documents import Attachment, ConversationDoc, ToolCall, Turn

MARKER = re.compile(r"^\[Turn (\d+) of (\d+)(?:, part (\d+)/(\d+))?\] (\w+)(?: \(([^)]*)\))?:$", re.M)


def make_turn(i: int, text: str, role: str | None = None, tool: str | None = None, **kw) -> Turn:
    role = role or ("user", "assistant", "tool")[i % 3]
    call = ToolCall(name=tool or "exec_command", input={"cmd": f"ls {i}"}) if role == "tool" else None
    return Turn(turn_id=f"turn-{i}", role=role, text=text, ts=1_700_000_000 + 60 * i, tool=call, **kw)


def make_doc(turns: list[Turn], title: str | None = "Fix the flaky test") -> ConversationDoc:
    return ConversationDoc(
        source="cx_sessions_jsonl",
        source_type="codex_session",
        source_uri="/home/u/.codex/sessions/rollout.jsonl",
        doc_id="conv-doc",
        thread_id="thread-1",
        title=title,
        turns=turns,
    )


def words(i: int, n: int) -> str:
    return " ".join(f"w{i}x{k}" if k % 5 else "the" for k in range(n))


def render(doc, **kw):
    transcript, chunks = render_conversation(doc, **kw)
    assert chunk_problems(transcript, chunks, lines=False) == []
    assert all(c.line_start is None and c.line_end is None for c in chunks)
    return transcript, chunks


def test_markers_and_whole_turns():
    turns = [make_turn(i, words(i, 30)) for i in range(14)]
    transcript, chunks = render(make_doc(turns))
    assert transcript.startswith("[Turn 1 of 14] user:\n")
    assert "[Turn 3 of 14] tool (exec_command):\n" in transcript
    assert len(chunks) > 1
    covered = []
    for c in chunks:
        markers = MARKER.findall(c.text)
        assert c.text.startswith("[Turn ")
        numbers = [int(m[0]) for m in markers]
        assert numbers == list(range(c.metadata["turn_start"], c.metadata["turn_end"] + 1))
        assert all(m[1] == "14" and m[2] == "" for m in markers)
        for n in numbers:  # every turn in the chunk is whole
            assert words(n - 1, 30) in c.text
        covered += numbers
        meta = c.metadata
        assert meta["thread_id"] == "thread-1" and meta["kind"] == "conversation"
        assert meta["turn_ids"] == [f"turn-{meta['turn_start'] - 1}", f"turn-{meta['turn_end'] - 1}"]
        assert meta["header"] == "Fix the flaky test · codex_session"
        assert set(meta["roles"]) <= {"user", "assistant", "tool"}
        assert meta["ts_start"] <= meta["ts_end"] and meta["ts_start"].endswith("Z")
        assert "part" not in meta
    assert covered == list(range(1, 15))
    sizes = count_tokens_batch([embed_text(c) for c in chunks])
    assert max(sizes) <= MAX_TOKENS


def test_an_oversized_turn_is_split_into_parts():
    turns = [make_turn(0, "short question", role="user"), make_turn(1, words(1, 900), role="tool", tool="exec_command")]
    turns.append(make_turn(2, "short answer", role="assistant"))
    transcript, chunks = render(make_doc(turns))
    parts = [c for c in chunks if c.metadata["turn_start"] == 2]
    assert len(parts) >= 3
    total = parts[0].metadata["parts"]
    assert [c.metadata["part"] for c in parts] == list(range(1, total + 1))
    for k, c in enumerate(parts, start=1):
        assert c.text.startswith(f"[Turn 2 of 3, part {k}/{total}] tool (exec_command):\n")
        assert c.metadata["turn_end"] == 2
    # the parts hold the whole turn, in order, once
    body = " ".join(c.text.split("\n", 1)[1] for c in parts)
    assert body.split() == words(1, 900).split()
    # neighbours are chunks of their own: a split turn never groups with others
    assert chunks[0].metadata["turn_end"] == 1 and chunks[-1].metadata["turn_start"] == 3


def test_a_huge_single_line_turn_in_cjk_is_split():
    turns = [make_turn(0, "東京大学の研究" * 400, role="assistant")]
    _, chunks = render(make_doc(turns))
    assert len(chunks) > 3 and all(c.metadata["parts"] == len(chunks) for c in chunks)


def test_prefix_stability_under_append():
    base = [make_turn(i, words(i, 10 + (i * 37) % 120)) for i in range(40)]
    base[17] = make_turn(17, words(17, 700))
    _, before = render(make_doc(base[:30]))
    _, after = render(make_doc(base))
    key = lambda c: (c.metadata["turn_start"], c.metadata["turn_end"], c.metadata.get("part"))
    assert [key(c) for c in before[:-1]] == [key(c) for c in after[: len(before) - 1]]
    assert [embed_text(c) for c in before[:-1]] == [embed_text(c) for c in after[: len(before) - 1]]
    # the texts themselves changed: the total in the markers grew
    assert before[0].text != after[0].text and "of 30]" in before[0].text and "of 40]" in after[0].text


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.integers(min_value=0, max_value=400), min_size=2, max_size=40),
    st.integers(min_value=1, max_value=39),
)
def test_prefix_stability_property(sizes, cut):
    cut = min(cut, len(sizes) - 1)
    turns = [make_turn(i, words(i, n)) for i, n in enumerate(sizes)]
    _, before = render(make_doc(turns[:cut]))
    _, after = render(make_doc(turns))
    stable = before[:-1]
    assert [embed_text(c) for c in stable] == [embed_text(c) for c in after[: len(stable)]]
    assert [c.chunk_index for c in stable] == [c.chunk_index for c in after[: len(stable)]]


def test_embed_text_drops_the_volatile_total():
    turns = [make_turn(i, words(i, 20)) for i in range(5)]
    _, chunks = render(make_doc(turns))
    for c in chunks:
        e = embed_text(c)
        assert " of 5]" not in e and "[Turn 1] user:" in embed_text(chunks[0])
        assert e == c.metadata["header"] + "\n" + stable_text(c.text)


def test_each_exchange_starts_a_chunk_by_default():
    roles = ["user", "assistant", "tool", "assistant", "user", "assistant", "user", "assistant"]
    turns = [make_turn(i, words(i, 3), role=r) for i, r in enumerate(roles)]
    _, chunks = render(make_doc(turns))
    assert [(c.metadata["turn_start"], c.metadata["turn_end"]) for c in chunks] == [(1, 4), (5, 6), (7, 8)]


def test_appending_an_exchange_keeps_earlier_embed_texts():
    roles = ["user", "assistant", "user", "assistant"]
    turns = [make_turn(i, words(i, 3), role=r) for i, r in enumerate(roles)]
    _, before = render(make_doc(turns[:2]))
    _, after = render(make_doc(turns))
    assert embed_text(after[0]) == embed_text(before[0])
    assert after[0].text != before[0].text  # "of 2" became "of 4"
    assert len(after) == 2


def test_boundaries_force_new_groups():
    turns = [make_turn(i, words(i, 3)) for i in range(10)]
    _, free = render(make_doc(turns), boundaries=set())
    assert len(free) == 1
    _, forced = render(make_doc(turns), boundaries={4, 7})
    assert [(c.metadata["turn_start"], c.metadata["turn_end"]) for c in forced] == [(1, 4), (5, 7), (8, 10)]


def test_tool_turns_without_text_show_input_and_output_and_attachments_are_named():
    turns = [
        Turn(turn_id="a", role="user", text="run it", attachments=[Attachment(kind="image", name="shot.png")]),
        Turn(turn_id="b", role="tool", text="", tool=ToolCall(name="shell", input={"cmd": "pytest -q"}, output="3 passed")),
        Turn(turn_id="c", role="assistant", text=""),
    ]
    transcript, chunks = render(make_doc(turns, title=None))
    assert 'input: {"cmd":"pytest -q"}' in transcript and "output: 3 passed" in transcript
    assert "attachments: shot.png" in transcript
    assert "[Turn 3 of 3] assistant:" in transcript
    assert chunks[0].metadata["header"] == "thread thread-1 · codex_session"
    assert chunks[0].metadata["ts_start"] is None


def test_empty_conversation():
    transcript, chunks = render_conversation(make_doc([]))
    assert transcript == "" and chunks == []


def test_messy_text_keeps_the_contract():
    texts = ["\r\nline\r\n\r\n", "\t tabs \t", "😀" * 500, "e\u0301" * 300, "", "   ", "[Turn 9 of 99] user: fake"]
    turns = [make_turn(i, t) for i, t in enumerate(texts * 5)]
    render(make_doc(turns))
