"""Files that are not rollouts, empty or drifting, and one huge line."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
import pytest
from chinvex.models.sources import SourceError
from chinvex_adapters.cx_sessions_jsonl.content import TOOL_OUTPUT_LIMIT
from rollout_support import ROLLOUT_NAME, ev, line, meta_line, parse, ri, user_msg, write


def test_unrelated_jsonl_raises_with_the_file_name(tmp_path: Path) -> None:
    path = write(tmp_path / "metrics.jsonl", [json.dumps({"step": i, "loss": 1 / (i + 1)}) for i in range(20)])
    with pytest.raises(SourceError, match=r"metrics\.jsonl: not a Codex rollout"):
        parse(path)


def test_empty_file_raises(tmp_path: Path) -> None:
    path = tmp_path / ROLLOUT_NAME
    path.write_bytes(b"")
    with pytest.raises(SourceError, match="empty rollout"):
        parse(path)
    path.write_bytes(b"\n\r\n  \n")
    with pytest.raises(SourceError, match="empty rollout"):
        parse(path)


def test_unknown_types_only_is_an_error_but_mixed_in_is_counted(tmp_path: Path) -> None:
    only = write(tmp_path / "a.jsonl", [meta_line(), line("future_thing", {"x": 1})])
    with pytest.raises(SourceError, match="no conversation turns; 1 unrecognised line.*future_thing"):
        parse(only)
    mixed = write(tmp_path / "b.jsonl", [meta_line(), line("future_thing", {"x": 1}), "not json {",
                                         '[1, 2]', *user_msg("hello"), ev("agent_message", message="hi")])
    doc, report = parse(mixed)
    assert [t.text for t in doc.turns] == ["hello", "hi"]
    assert report.counts["lines_unknown_type"] == 1 and report.counts["lines_drift"] == 2
    assert any("unknown type" in w for w in report.warnings)


def test_five_megabyte_single_line(tmp_path: Path) -> None:
    big = "".join(f"row {i:07d} some tool output text\n" for i in range(170_000))  # ~5 MB
    assert len(big) > 5_000_000
    path = write(tmp_path / ROLLOUT_NAME, [
        meta_line(), ev("task_started", turn_id="t1"), *user_msg("dump the table"),
        ri("function_call", name="exec_command", arguments='{"cmd": "cat table"}', call_id="c1"),
        ri("function_call_output", call_id="c1", output=big),
        ev("agent_message", message="dumped"), ev("task_complete", turn_id="t1"),
    ])
    started = time.perf_counter()
    doc, report = parse(path)
    elapsed = time.perf_counter() - started
    tool = doc.turns[1]
    assert "row 0000000" in tool.text and "row 0169999" in tool.text  # head and tail kept
    assert re.search(r"\[\.\.\. \d+ bytes truncated \.\.\.\]", tool.text)
    assert len(tool.text) < TOOL_OUTPUT_LIMIT + 500
    assert report.counts["tool_outputs_truncated"] == 1
    assert elapsed < 10


def test_counts_in_messages_take_the_singular_for_one(tmp_path: Path) -> None:
    one = write(tmp_path / "one.jsonl", [meta_line(), line("future_thing", {"x": 1}), "not json {",
                                         *user_msg("hello"), ev("agent_message", message="hi")])
    _, report = parse(one)
    assert any("skipped 1 line of unknown type and 1 unrecognised line" in w and "(s)" not in w
               for w in report.warnings), report.warnings
    only = write(tmp_path / "drift.jsonl", ['{"foo": 1}'])
    with pytest.raises(SourceError, match=r"no conversation records; 1 unrecognised line\)"):
        parse(only)
