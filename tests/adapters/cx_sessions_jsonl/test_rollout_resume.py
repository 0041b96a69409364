"""Appends, a cut last line, zstd copies and the resume state."""

from __future__ import annotations

from pathlib import Path
import pytest
from chinvex.models.sources import SourceError
from rollout_support import (
    AGENT_SESSIONS,
    CODEMIE,
    INCR,
    LEGACY,
    PAGINATED,
    RESUME_FILES,
    TRUNCATED,
    ZST,
    _line_cuts,
    doc_fields,
    dumps,
    parse,
)


def test_incremental_turn1_to_turn2_same_path(tmp_path: Path) -> None:
    path = tmp_path / "rollout.jsonl"
    path.write_bytes((INCR / "turn-1.jsonl").read_bytes())
    first, r1 = parse(path)
    assert len(first.turns) == 2
    # turn-1 ends with task_complete, so the resume point is its end: nothing is re-read
    assert r1.state["resume_offset"] == r1.state["offset"] == path.stat().st_size
    assert r1.state["resume_turn_index"] == 2
    path.write_bytes((INCR / "turn-2.jsonl").read_bytes())  # same path, appended
    resumed, r2 = parse(path, r1.state)
    assert r2.append_from == 2
    assert [t.text for t in resumed.turns] == [
        "What languages can you work with?",
        "I can work with many programming languages including Python, JavaScript, TypeScript, Go, and Rust.",
    ]
    full, _ = parse(path)
    assert dumps(first.turns) + dumps(resumed.turns) == dumps(full.turns)
    assert doc_fields(resumed) == doc_fields(full)


def test_truncated_last_line_is_left_then_completed(tmp_path: Path) -> None:
    path = tmp_path / LEGACY.name
    path.write_bytes(TRUNCATED.read_bytes())
    partial, r1 = parse(path)
    tail = len(LEGACY.read_bytes()) - len(TRUNCATED.read_bytes())
    assert r1.counts["partial_tail_bytes"] == TRUNCATED.stat().st_size - r1.state["offset"] > 0
    assert r1.counts["lines_drift"] == 0
    assert r1.state["offset"] < TRUNCATED.stat().st_size
    # the second task was still open: the next run restarts at its task_started
    assert r1.state["resume_turn_index"] == 4
    with path.open("ab") as fh:
        fh.write(LEGACY.read_bytes()[-tail:])
    resumed, r2 = parse(path, r1.state)
    assert r2.append_from == 4 and len(resumed.turns) == 3
    assert r2.state["offset"] == LEGACY.stat().st_size and "partial_tail_bytes" not in r2.counts
    full, _ = parse(path)
    assert dumps(partial.turns[:4]) + dumps(resumed.turns) == dumps(full.turns)
    assert doc_fields(resumed) == doc_fields(full)
    assert full.updated_at.isoformat() == "2026-11-22T02:29:41.895000+00:00"  # task_complete line


def test_zstd_gives_the_turns_of_its_plain_source(tmp_path: Path) -> None:
    plain, _ = parse(LEGACY)
    packed, report = parse(ZST)
    assert dumps(packed.turns) == dumps(plain.turns)
    assert (packed.thread_id, packed.title, packed.created_at, packed.updated_at) == (
        plain.thread_id, plain.title, plain.created_at, plain.updated_at)
    assert packed.metadata["compressed"] is True
    # a .zst is always parsed in full, even with a state
    again, r2 = parse(ZST, report.state)
    assert r2.append_from is None and dumps(again.turns) == dumps(plain.turns)


def test_state_rejected_when_file_replaced_or_truncated(tmp_path: Path) -> None:
    path = tmp_path / LEGACY.name
    data = LEGACY.read_bytes()
    path.write_bytes(data)
    _, r1 = parse(path)
    path.write_bytes(data[: len(data) // 2].rsplit(b"\n", 1)[0] + b"\n")  # truncated
    doc, r2 = parse(path, r1.state)
    assert r2.append_from is None and r2.counts["resume_rejected:truncated"] == 1
    path.write_bytes(data.replace(b"run2", b"runX", 1))  # same size, different head
    doc, r3 = parse(path, r1.state)
    assert r3.append_from is None and r3.counts["resume_rejected:replaced"] == 1
    assert len(doc.turns) == 7
    state = dict(r1.state, parser_version="old")
    path.write_bytes(data)
    assert parse(path, state)[1].append_from is None
    assert parse(path, {"garbage": True})[1].append_from is None
    assert parse(path, r1.state)[1].append_from == r1.state["resume_turn_index"]


@pytest.mark.parametrize("src", RESUME_FILES, ids=[p.name[:40] for p in RESUME_FILES])
def test_resume_equals_full_parse_at_every_cut(src: Path, tmp_path: Path) -> None:
    """full(final).turns == full(prefix).turns[:append_from] + resumed(final, state(prefix)).turns."""
    data = src.read_bytes()
    path = tmp_path / src.name
    path.write_bytes(data)
    full, _ = parse(path)
    checked = 0
    for cut in _line_cuts(data, 25):
        path.write_bytes(data[:cut])
        try:
            prefix, pr = parse(path)
        except SourceError:
            continue  # empty or not-yet-a-rollout prefix: the next run parses in full anyway
        path.write_bytes(data)
        resumed, rr = parse(path, pr.state)
        assert rr.append_from == pr.state["resume_turn_index"], cut
        assert dumps(prefix.turns)[: rr.append_from] + dumps(resumed.turns) == dumps(full.turns), cut
        assert doc_fields(resumed) == doc_fields(full), cut
        checked += 1
    assert checked >= min(5, len(_line_cuts(data, 25)) - 2)


def test_resume_through_partial_lines_and_two_appends(tmp_path: Path) -> None:
    import random

    rnd = random.Random(7)
    for src in (PAGINATED, AGENT_SESSIONS / "small.jsonl", CODEMIE):
        data = src.read_bytes()
        path = tmp_path / src.name
        path.write_bytes(data)
        full, _ = parse(path)
        for _ in range(6):
            a = rnd.randrange(len(data) // 4, len(data))
            b = rnd.randrange(a, len(data) + 1)
            path.write_bytes(data[:a])
            d1, r1 = parse(path)
            path.write_bytes(data[:b])
            d2, r2 = parse(path, r1.state)
            path.write_bytes(data)
            d3, r3 = parse(path, r2.state)
            chained = (dumps(d1.turns)[: r2.append_from] + dumps(d2.turns))[: r3.append_from] + dumps(d3.turns)
            assert chained == dumps(full.turns), (src.name, a, b)
            assert doc_fields(d3) == doc_fields(full)
