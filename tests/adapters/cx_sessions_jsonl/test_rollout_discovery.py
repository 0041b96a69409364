"""Era-B files, enumerating a CODEX_HOME, finding a thread's rollout file."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
import pytest
from chinvex.models.sources import AdapterOptions, SkippedSource, SourceCandidate, SourceError
from chinvex_adapters.cx_sessions_jsonl import find_rollout_for_thread
from rollout_support import (
    ADAPTER,
    FIX,
    LEGACY,
    PAGINATED,
    ROLLOUT_NAME,
    ZST,
    _codex_home,
    dumps,
    parse,
    write,
)


def test_pre_envelope_era_b_file(tmp_path: Path) -> None:
    path = write(tmp_path / ROLLOUT_NAME, [
        json.dumps({"id": "019b0000-0000-7000-8000-000000000001", "timestamp": "2025-06-01T10:00:00Z",
                    "instructions": None, "git": {"branch": "dev"}, "cwd": "/old/proj"}),
        json.dumps({"record_type": "state"}),
        json.dumps({"type": "message", "role": "user",
                    "content": [{"type": "input_text", "text": "<environment_context>x</environment_context>"}]}),
        json.dumps({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "fix the build"}]}),
        json.dumps({"type": "reasoning", "summary": [{"type": "summary_text", "text": "Looking at CI"}],
                    "encrypted_content": "gAAAAsecretsecretsecretsecretsecret"}),
        json.dumps({"type": "local_shell_call", "call_id": "s1", "status": "completed",
                    "action": {"type": "exec", "command": ["make", "all"], "working_directory": "/old/proj"}}),
        json.dumps({"type": "function_call_output", "call_id": "s1",
                    "output": json.dumps({"output": "ok built", "metadata": {"exit_code": 0}})}),
        json.dumps({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Fixed."}]}),
        json.dumps({"record_type": "state"}),
    ])
    doc, report = parse(path)
    assert doc.metadata["format_era"] == "B"
    assert [(t.role, t.text.split("\n")[0]) for t in doc.turns] == [
        ("user", "fix the build"), ("assistant", "Looking at CI"), ("tool", "Tool: local_shell"),
        ("assistant", "Fixed.")]
    assert "$ make all" in doc.turns[2].text and "ok built" in doc.turns[2].text
    assert doc.turns[2].meta["exit_code"] == 0
    assert doc.turns[0].ts is None and doc.created_at.isoformat().startswith("2025-06-01T10:00:00")
    assert report.counts["lines_era_b_state"] == 2
    assert "secret" not in json.dumps(dumps(doc.turns))


def test_enumerate_codex_home(tmp_path: Path) -> None:
    home = _codex_home(tmp_path)
    items = list(ADAPTER.enumerate(home, AdapterOptions(context_name="t", excludes=["*/scratch/*"])))
    cands = [i for i in items if isinstance(i, SourceCandidate)]
    skipped = {Path(i.source_uri).name: i.reason for i in items if isinstance(i, SkippedSource)}
    names = sorted(Path(c.source_uri).name for c in cands)
    assert names == sorted([
        LEGACY.name, PAGINATED.name, ZST.name.replace("7f80-7e82", "0000-7000"),
        "rollout-2026-01-01T00-00-00-a1b2c3d4-e5f6-7890-abcd-ef1234567890.jsonl"])
    assert skipped == {"session_index.jsonl": "not_a_rollout", "history.jsonl": "not_a_rollout",
                       ZST.name: "superseded", "skip-me.jsonl": "excluded"}
    by_name = {Path(c.source_uri).name: c for c in cands}
    legacy = by_name[LEGACY.name]
    assert legacy.thread_id == "01a20116-7f80-7e82-8754-e5125007d434"
    assert legacy.size_bytes == LEGACY.stat().st_size and legacy.mtime_ns == (Path(legacy.source_uri)).stat().st_mtime_ns
    assert Path(legacy.source_uri).is_absolute() and legacy.adapter == "cx_sessions_jsonl"
    assert legacy.source_type == "codex_session"
    # excluding by basename glob, and enumerating a plain folder without CODEX_HOME layout
    items = list(ADAPTER.enumerate(home / "sessions", AdapterOptions(context_name="t", excludes=["*.zst"])))
    reasons = Counter(i.reason for i in items if isinstance(i, SkippedSource))
    assert reasons["excluded"] == 2 and not any(Path(i.source_uri).name == "elsewhere.jsonl" for i in items)


def test_enumerate_localpush_ignores_readme_and_missing_root(tmp_path: Path) -> None:
    items = list(ADAPTER.enumerate(FIX / "public" / "localpush", AdapterOptions(context_name="t")))
    assert len(items) == 3 and all(isinstance(i, SourceCandidate) for i in items)
    assert all(i.source_uri.endswith(".jsonl") for i in items)
    with pytest.raises(SourceError, match="not found"):
        list(ADAPTER.enumerate(tmp_path / "nope", AdapterOptions(context_name="t")))


def test_find_rollout_for_thread(tmp_path: Path) -> None:
    home = _codex_home(tmp_path)
    day = home / "sessions" / "2026" / "11" / "22"
    assert find_rollout_for_thread([home], "01a20116-7f80-7e82-8754-e5125007d434") == day / LEGACY.name
    assert find_rollout_for_thread([home], "01A20116-364E-7AC1-8D5A-B68A4DBBF7C6") == day / PAGINATED.name
    assert find_rollout_for_thread([home], "01a20116-0000-7000-8754-e5125007d434") == \
        day / ZST.name.replace("7f80-7e82", "0000-7000")
    archived = find_rollout_for_thread([tmp_path / "none", home], "a1b2c3d4-e5f6-7890-abcd-ef1234567890")
    assert archived is not None and "archived_sessions" in archived.parts
    assert find_rollout_for_thread([home / "sessions"], "01a20116-7f80-7e82-8754-e5125007d434") == day / LEGACY.name
    assert find_rollout_for_thread([home], "00000000-0000-0000-0000-000000000000") is None
