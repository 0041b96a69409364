"""Arbitrary bytes and JSON lines, lone surrogates, huge integers; apply_patch edits."""

from __future__ import annotations

import json
from pathlib import Path
import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rollout_support import (
    LEGACY,
    ROLLOUT_NAME,
    _json,
    _mutated_line,
    _parse_bytes,
    ev,
    meta_line,
    parse,
    ri,
    user_msg,
    write,
)


@settings(max_examples=250, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.binary(max_size=600))
def test_fuzz_arbitrary_bytes(data: bytes) -> None:
    _parse_bytes(data)


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(_json, max_size=12), st.booleans())
def test_fuzz_arbitrary_json_lines(values: list, crlf: bool) -> None:
    raw = "\n".join(json.dumps(v) for v in values) + "\n"
    _parse_bytes(raw.replace("\n", "\r\n").encode() if crlf else raw.encode())


@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(_mutated_line(), min_size=1, max_size=15), st.integers(0, 400))
def test_fuzz_mutated_rollout_lines(lines: list, grow: int) -> None:
    raw = ("\n".join(json.dumps(v) for v in lines) + "\n").encode()
    report = _parse_bytes(raw)
    if report is not None:  # and resuming after an append (possibly ending mid-line)
        _parse_bytes(raw + raw[:grow], report.state)


def test_lone_surrogates_and_huge_integers_cost_one_value_not_the_rollout(tmp_path: Path) -> None:
    """`\\udc80` (an emoji cut in half) makes orjson refuse the line and the stdlib parser give a
    lone surrogate; a NaN literal sends a line to the stdlib parser, which reads a 70-bit integer
    that orjson cannot write back. The rollout is still read, and what it stores is writable."""
    from chinvex.ingest.prepare import prepare

    lines = [meta_line(), *user_msg("before LONE lonemarker"),
             ev("token_count", info={"total_token_usage": {"input_tokens": 2**70, "output_tokens": 5}},
                rate=float("nan")),
             *user_msg("second question after"),
             ri("function_call", name="shell", call_id="c1",
                arguments=json.dumps({"seed": 2**70, "cmd": ["echo", "x"]}))]
    path = write(tmp_path / ROLLOUT_NAME, [entry.replace("LONE", "\\udc80") for entry in lines])
    doc, report = parse(path)
    texts = [t.text for t in doc.turns]
    assert any("\ufffd lonemarker" in t for t in texts), texts
    assert any("second question after" in t for t in texts)
    orjson.dumps(report.state)  # the resume state is stored with plain orjson
    prepared = prepare(doc, origin_uri=str(path), redact=True)
    assert any("lonemarker" in c.search_text for c in prepared.chunks)
    orjson.dumps(prepared.metadata)
    for turn in prepared.turns or []:
        turn.model_dump_json()


def test_apply_patch_calls_record_their_edits(tmp_path: Path):
    """No public rollout holds an apply_patch call, so one is appended to a real rollout in the
    shape Codex writes it (`custom_tool_call`, the patch envelope as `input`)."""
    patch = ("*** Begin Patch\n*** Update File: src/app.py\n@@ def main():\n-    return 1\n+    return 2\n"
             "*** Add File: notes.md\n+# Notes\n*** End Patch\n")
    lines = [
        {"timestamp": "2026-11-22T02:31:00.000Z", "type": "response_item",
         "payload": {"type": "custom_tool_call", "call_id": "call_patch", "name": "apply_patch", "input": patch}},
        {"timestamp": "2026-11-22T02:31:01.000Z", "type": "response_item",
         "payload": {"type": "custom_tool_call_output", "call_id": "call_patch", "output": "Success."}},
    ]
    path = tmp_path / LEGACY.name
    path.write_bytes(LEGACY.read_bytes() + b"".join(json.dumps(l).encode() + b"\n" for l in lines))
    doc, report = parse(path)
    (turn,) = [t for t in doc.turns if t.meta.get("edits")]
    cwd = doc.links.repo_paths[-1]
    assert [(e["path"], e["op"], e["abs_path"]) for e in turn.meta["edits"]] == [
        ("src/app.py", "patch", f"{cwd}/src/app.py"), ("notes.md", "write", f"{cwd}/notes.md")]
    assert turn.meta["edits"][0]["new_text"] == "    return 2" and "Success." in turn.text
    assert report.counts["file_edits"] == 2
