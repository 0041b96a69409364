"""Reading a Claude Code transcript (JSONL) into records, tolerating a file being written.

Claude Code appends one JSON object per line while a session runs, so the last line may be
half-written: it is left unread (it will be complete next time), never an error. A bad line in
the middle is counted and skipped; bytes that are not UTF-8 are replaced, not fatal.
Base64 payloads (pasted images, PDFs) are dropped right here, keeping only their size, so they
cannot reach the index and do not sit in memory while the transcript is assembled.
Two records written on one line (the first one's newline missing, as happens when a write is
cut short and the next append lands behind it) are both read.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from chinvex_adapters.kit.jsonl import read_jsonl


@dataclass
class Record:
    pos: int  # order among the records kept
    line_no: int  # 1-based line in the file
    data: dict[str, Any]

    @property
    def type(self) -> str:
        value = self.data.get("type")
        return value if isinstance(value, str) else ""


@dataclass
class ReadResult:
    records: list[Record]
    lines: int = 0
    invalid_lines: int = 0
    partial_tail: bool = False
    complete_bytes: int = 0


def _drop_base64(block: Any) -> None:
    """Replace `source.data` of base64 image/document blocks by its length (recursively in
    tool results, whose content can hold images too)."""
    if not isinstance(block, dict):
        return
    source = block.get("source")
    if isinstance(source, dict) and source.get("type") == "base64" and isinstance(source.get("data"), str):
        source["data_chars"] = len(source["data"])
        source["data"] = None
    content = block.get("content")
    if isinstance(content, list):
        for inner in content:
            _drop_base64(inner)


def _strip_payloads(record: dict[str, Any]) -> None:
    message = record.get("message")
    if isinstance(message, dict) and isinstance(message.get("content"), list):
        for block in message["content"]:
            _drop_base64(block)
    # toolUseResult repeats whole files, patches or images; only the shell streams are used.
    result = record.get("toolUseResult")
    if isinstance(result, dict):
        record["toolUseResult"] = {k: result[k] for k in ("stdout", "stderr", "is_error")
                                   if isinstance(result.get(k), str | bool)}
    elif isinstance(result, str) and len(result) > 20_000:
        record["toolUseResult"] = result[:20_000]


def glued_records(line: bytes) -> list[dict[str, Any]] | None:
    """The records of a line that holds several JSON objects back to back (`{...}{...}`), or
    None when it is not exactly that (one object, garbage, a cut object, a non-object)."""
    text = line.decode("utf-8", "replace")
    decoder = json.JSONDecoder()
    found: list[dict[str, Any]] = []
    at = 0
    while at < len(text):
        if text[at].isspace():
            at += 1
            continue
        try:
            value, at = decoder.raw_decode(text, at)
        except ValueError:
            return None
        if not isinstance(value, dict):
            return None
        found.append(value)
    return found if len(found) > 1 else None


def _split_glued_lines(path: Path, kept: set[int], counts: Counter[str]) -> dict[int, list[dict[str, Any]]]:
    """Second reading, only of a file where some complete line was not JSON: such a line that is
    two or more records glued together gives its records back. In real 2.1.x transcripts the
    first of the pair is often an assistant message; dropping it cut the conversation in two
    (its children's parent was missing) and lost its words."""
    recovered: dict[int, list[dict[str, Any]]] = {}
    with path.open("rb") as handle:
        for line_no, raw in enumerate(handle, start=1):
            if line_no in kept or not raw.endswith(b"\n") or not raw.strip():
                continue
            records = glued_records(raw.strip())
            if records is None:
                continue
            for record in records:
                _strip_payloads(record)
            recovered[line_no] = records
            counts["lines_invalid_json"] -= 1
            counts["lines_glued_split"] += 1
    if counts["lines_invalid_json"] <= 0:
        del counts["lines_invalid_json"]
    return recovered


def read_records(path: Path, counts: Counter[str]) -> ReadResult:
    read = read_jsonl(path, counts, max_line_bytes=sys.maxsize, each=_strip_payloads)
    rows = [(line.line_no, line.data) for line in read.lines]
    invalid = read.invalid
    if invalid:
        recovered = _split_glued_lines(path, {line_no for line_no, _ in rows}, counts)
        invalid -= len(recovered)
        rows += [(line_no, record) for line_no, records in recovered.items() for record in records]
        rows.sort(key=lambda row: row[0])  # stable: glued records keep their order
    return ReadResult(records=[Record(pos=n, line_no=line_no, data=data)
                               for n, (line_no, data) in enumerate(rows)],
                      lines=read.non_blank, invalid_lines=invalid,
                      partial_tail=read.partial_tail, complete_bytes=read.complete_bytes)
