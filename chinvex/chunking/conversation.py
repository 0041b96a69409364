"""Conversations: a transcript of `[Turn N of M] role:` blocks, chunked by whole turns.

The transcript is rendered from the chunking decisions, so a turn too long for one chunk is
rendered as parts (`[Turn 4 of 12, part 1/3] tool (exec_command):`) and each part is a chunk of
its own; every other chunk is a run of whole turns grouped greedily from the first turn.

Greedy grouping from the start is prefix-stable: appending turns can only change the last
group. All sizes are measured on the stable form of the markers (without "of M"), which is also
what `embed_text` embeds, so an unchanged group keeps its embedding after an append even though
the total M in its text has grown.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import orjson

from chinvex.ids import chunk_id
from chinvex.models.documents import Chunk, ConversationDoc, Turn
from chinvex.timeutil import iso_z

from .base import (
    LineIndex,
    choose_windows,
    clean_header,
    line_pieces,
    split_exact,
    text_budget,
    trim,
)
from .tokens import header_tokens, line_token_counts

_PART_RESERVE = 8
"""Tokens kept free when estimating a part marker, retried tighter if ever short."""


def _one_line(text: str) -> str:
    return " ".join(text.split())


def turn_label(turn: Turn) -> str:
    """`assistant`, or `tool (exec_command)` when the turn carries a tool call."""
    if turn.tool is not None and turn.tool.name:
        return f"{turn.role} ({_one_line(turn.tool.name)})"
    return turn.role


def _value_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return orjson.dumps(
            value, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS, default=str
        ).decode("utf-8")
    except (TypeError, orjson.JSONEncodeError):
        return str(value)


def turn_body(turn: Turn) -> str:
    """The text rendered under a turn's marker.

    A turn's own text; a tool turn without text shows its call's input and output instead;
    attachments are named (never their bytes).
    """
    text = (turn.text or "").strip("\r\n").rstrip()
    parts = [text] if text.strip() else []
    if not parts and turn.tool is not None:
        for key, value in (("input", turn.tool.input), ("output", turn.tool.output)):
            if value is None or value == "" or value == {} or value == []:
                continue
            parts.append(f"{key}: {_value_text(value).strip()}")
    if turn.attachments:
        names = [a.name or a.path or a.uri or a.kind for a in turn.attachments]
        parts.append("attachments: " + ", ".join(_one_line(n) for n in names))
    return "\n".join(parts)


def conversation_header(doc: ConversationDoc) -> str:
    title = _one_line(doc.title or "") or f"thread {doc.thread_id}"
    return clean_header(f"{title} · {doc.source_type}")


def _marker(n: int, total: int | None, label: str, part: tuple[int, int] | None = None) -> str:
    """`[Turn 3 of 12] assistant:`; read back by chinvex.models.turn_markers."""
    head = f"[Turn {n}" if total is None else f"[Turn {n} of {total}"
    if part is not None:
        head += f", part {part[0]}/{part[1]}"
    return f"{head}] {label}:"


def _sum_by_turn(bodies: list[str]) -> list[int]:
    """Tokens of each body, all counted in one pass."""
    lines: list[str] = []
    owners: list[int] = []
    for i, body in enumerate(bodies):
        for line in body.split("\n"):
            lines.append(line)
            owners.append(i)
    totals = [0] * len(bodies)
    for owner, n in zip(owners, line_token_counts(lines)):
        totals[owner] += n
    return totals


def _split_body(body: str, n: int, label: str, budget: int) -> list[tuple[int, int]]:
    """Char ranges of `body` for the parts of an oversized turn (each fits with its marker)."""
    idx = LineIndex(body)
    reserve = _PART_RESERVE
    while True:
        probe = _marker(n, None, label, (9999, 9999))
        part_budget = max(1, budget - header_tokens(probe) - reserve)
        pieces = line_pieces(idx, 0, idx.n, part_budget)
        ranges: list[tuple[int, int]] = []
        for i, j in choose_windows(pieces, part_budget):
            s, e = trim(body, pieces[i].start, pieces[j - 1].end)
            if s >= e:
                continue
            if all(p.exact for p in pieces[i:j]):
                ranges.append((s, e))
            else:
                for ps, pe in split_exact(body, s, e, part_budget):
                    ps, pe = trim(body, ps, pe)
                    if ps < pe:
                        ranges.append((ps, pe))
        parts = len(ranges)
        worst = max(
            (header_tokens(_marker(n, None, label, (k + 1, parts))) for k in range(parts)),
            default=0,
        )
        if worst <= header_tokens(probe) + reserve or part_budget == 1:
            return ranges
        reserve += 8


def exchange_starts(turns: list[Turn]) -> set[int]:
    """Every user turn opens a new exchange. Chunks never span two exchanges: a retrieved chunk
    is about one question and its answer, and appending a new exchange to a session never
    changes the chunks of the earlier ones (only their "of M", which embedding ignores)."""
    return {i for i, turn in enumerate(turns) if i > 0 and turn.role == "user"}


class _Unit(NamedTuple):
    """One block of the transcript: a whole turn, or one part of a turn too long for a chunk."""

    turn: int
    """The turn's 0-based index."""
    part: int | None
    """1-based part number; None for a whole turn."""
    parts: int
    body: str


def render_conversation(
    doc: ConversationDoc, boundaries: set[int] | None = None
) -> tuple[str, list[Chunk]]:
    """The transcript of `doc` and its chunks (`chunk.text == transcript[start:end]`).

    `boundaries`: 0-based turn indices where a new chunk must start; by default the start of
    every exchange (`exchange_starts`). Grouping is greedy within an exchange.
    """
    turns = doc.turns
    if boundaries is None:
        boundaries = exchange_starts(turns)
    header = conversation_header(doc)
    labels = [turn_label(t) for t in turns]
    units, groups = _group_turns(turns, labels, boundaries, text_budget(header))
    transcript, spans = _transcript(units, labels, len(turns))
    chunks = [
        _chunk(doc, header, [units[u] for u in group], spans[group[0]][0], spans[group[-1]][1],
               transcript, index)
        for index, group in enumerate(groups)
    ]
    return transcript, chunks


def _group_turns(
    turns: list[Turn], labels: list[str], boundaries: set[int] | None, budget: int
) -> tuple[list[_Unit], list[list[int]]]:
    """The transcript's units in order, and the chunks as groups of unit indices: an oversized
    turn is split into parts of one chunk each; other turns are grouped greedily, a new group
    starting at each boundary."""
    total = len(turns)
    bodies = [turn_body(t) for t in turns]
    body_tokens = _sum_by_turn(bodies)
    marker_tokens = line_token_counts([_marker(i + 1, None, labels[i]) for i in range(total)])
    units: list[_Unit] = []
    groups: list[list[int]] = []
    current: list[int] = []
    used = 0
    for i in range(total):
        size = marker_tokens[i] + body_tokens[i]
        if size > budget:
            if current:
                groups.append(current)
            current, used = [], 0
            body = bodies[i]
            ranges = _split_body(body, i + 1, labels[i], budget)
            for k, (s, e) in enumerate(ranges):
                units.append(_Unit(i, k + 1, len(ranges), body[s:e]))
                groups.append([len(units) - 1])
            continue
        starts_new = boundaries is not None and i in boundaries
        if current and not starts_new and used + size <= budget:
            current.append(len(units))
            used += size
        else:
            if current:
                groups.append(current)
            current, used = [len(units)], size
        units.append(_Unit(i, None, 1, bodies[i]))
    if current:
        groups.append(current)
    return units, groups


def _transcript(units: list[_Unit], labels: list[str], total: int) -> tuple[str, list[tuple[int, int]]]:
    """The transcript text, and the span of each unit's block in it (blocks end with a blank
    line)."""
    out: list[str] = []
    pos = 0
    spans: list[tuple[int, int]] = []
    for i, part, parts, body in units:
        marker = _marker(i + 1, total, labels[i], (part, parts) if part is not None else None)
        block = f"{marker}\n{body}" if body else marker
        spans.append((pos, pos + len(block)))
        out.append(block)
        out.append("\n\n")
        pos += len(block) + 2
    return "".join(out), spans


def _chunk(
    doc: ConversationDoc, header: str, members: list[_Unit], s: int, e: int, transcript: str,
    index: int,
) -> Chunk:
    """The chunk of the units `members` (the transcript from `s` to `e`)."""
    turns = doc.turns
    first, last = members[0], members[-1]
    text = transcript[s:e]
    member_turns = [turns[u.turn] for u in members]
    roles: list[str] = []
    for t in member_turns:
        if t.role not in roles:
            roles.append(t.role)
    stamps = [t.ts for t in member_turns if t.ts is not None]
    meta: dict[str, Any] = {
        "kind": "conversation",
        "header": header,
        "thread_id": doc.thread_id,
        "source": doc.source,
        "turn_start": first.turn + 1,
        "turn_end": last.turn + 1,
        "turn_ids": [turns[first.turn].turn_id, turns[last.turn].turn_id],
        "roles": roles,
        "ts_start": iso_z(min(stamps)) if stamps else None,
        "ts_end": iso_z(max(stamps)) if stamps else None,
    }
    if first.part is not None:
        meta["part"] = first.part
        meta["parts"] = first.parts
    return Chunk(
        chunk_id=chunk_id(doc.doc_id, index, text),
        doc_id=doc.doc_id,
        chunk_index=index,
        text=text,
        char_start=s,
        char_end=e,
        metadata=meta,
    )
