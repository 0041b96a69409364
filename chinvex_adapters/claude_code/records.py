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
    attachment = record.get("attachment")  # a queued_command's prompt can hold pasted images
    if isinstance(attachment, dict) and isinstance(attachment.get("prompt"), list):
        for block in attachment["prompt"]:
            _drop_base64(block)
    data = record.get("data")  # a sub-agent's message inside an agent_progress record
    if isinstance(data, dict) and isinstance(data.get("message"), dict):
        data.pop("normalizedMessages", None)
        _strip_payloads(data["message"])
    # toolUseResult repeats whole files, patches or images; only the shell streams are used.
    result = record.get("toolUseResult")
    if isinstance(result, dict):
        record["toolUseResult"] = {k: result[k] for k in ("stdout", "stderr", "is_error")
                                   if isinstance(result.get(k), str | bool)}
    elif isinstance(result, str) and len(result) > 20_000:
        record["toolUseResult"] = result[:20_000]


def read_records(path: Path, counts: Counter[str]) -> ReadResult:
    # a line of two records glued by a cut append gives both (kit.jsonl.glued_objects)
    read = read_jsonl(path, counts, max_line_bytes=sys.maxsize, each=_strip_payloads)
    return ReadResult(records=[Record(pos=n, line_no=line.line_no, data=line.data)
                               for n, line in enumerate(read.lines)],
                      lines=read.non_blank, invalid_lines=read.invalid,
                      partial_tail=read.partial_tail, complete_bytes=read.complete_bytes)
