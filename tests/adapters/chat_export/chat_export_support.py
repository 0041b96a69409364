"""The chat_export adapter on real ChatGPT exports (tests/fixtures/samples), markdown chat exports
(tests/fixtures/chat_export) and generated damage: truncation, corruption, huge files.

What the chat export tests share: fixture paths, parsing helpers, export builders.
"""

from __future__ import annotations

import copy
import io
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path
import orjson
from hypothesis import strategies as st
from chinvex.models import ConversationDoc
from chinvex.models.sources import AdapterOptions, ParseReport, SkippedSource, SourceCandidate
from chinvex_adapters.chat_export import ChatExportAdapter
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


def comparable(doc: ConversationDoc) -> dict:
    data = doc.model_dump(mode="json")
    data.pop("source_uri")
    for key in ("export_file", "zip_member"):
        data["metadata"].pop(key, None)
    return data


def three_conversations() -> list[dict]:
    return [conversation(f"c{i}", msg(f"m{i}", "user", text(f"question number {i}"), float(i)))
            for i in (1, 2, 3)]


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


GOOD_ENTRY = (b'{"title": "z", "mapping": {"q": {"message": {"author": {"role": "user"}, '
              b'"content": {"content_type": "text", "parts": ["recovered"]}}}}}')


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
