"""The legacy plain-text agent transcript (`agent-transcripts/<id>.txt`, Cursor IDE up to early
2026), read into blocks of events.

A block starts with a line `user:` or `assistant:` after a blank line. An assistant block
holds `[Thinking] ` (running on to the reply that follows it), text, `[Tool call] <Name>`
with `  key: value` arguments, then `[Tool result] <Name>` lines (no output) in the calls'
order. Argument values are written raw: a file's content runs on over many lines and can hold
lines that look like arguments, so a line starts a new argument only when it names one the
tool takes and that call has not had yet.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import orjson

CALL = "[Tool call] "
RESULT = "[Tool result] "
THINKING = "[Thinking] "

KNOWN_ARGS: dict[str, frozenset[str]] = {name: frozenset(args) for name, args in {
    "Read": ("path", "offset", "limit"),
    "Write": ("path", "contents"),
    "StrReplace": ("path", "file_path", "old_string", "new_string", "replace_all"),
    "MultiStrReplace": ("path", "file_path", "edits"),
    "Delete": ("path",),
    "Shell": ("command", "description", "working_directory", "block_until_ms",
              "required_permissions", "is_background"),
    "Grep": ("pattern", "path", "glob", "head_limit", "output_mode", "type", "multiline",
             "-i", "-n", "-A", "-B", "-C"),
    "Glob": ("glob_pattern", "target_directory"),
    "LS": ("target_directory", "ignore_globs"),
    "Task": ("subagent_type", "model", "description", "prompt", "readonly", "resume"),
    "TodoWrite": ("todos", "merge"),
    "ReadLints": ("paths",),
    "WebFetch": ("url",),
    "WebSearch": ("search_term", "explanation"),
    "SwitchMode": ("target_mode_id", "explanation"),
    "GenerateImage": ("description", "filename", "reference_image_paths"),
    "SemanticSearch": ("query", "target_directories", "num_results", "explanation"),
    "AwaitShell": ("shell_id", "block_until_ms"),
    "EditNotebook": ("target_notebook", "cell_idx", "is_new_cell", "cell_language",
                     "old_string", "new_string"),
}.items()}
"""Argument names of the tools seen in real transcripts (others: any new name opens one)."""

TEXT_ARGS = frozenset({"path", "file_path", "contents", "old_string", "new_string", "prompt",
                       "command", "description", "pattern", "glob_pattern", "query", "url",
                       "filename", "explanation", "search_term", "target_directory",
                       "working_directory", "glob", "subagent_type", "model"})
"""Values that stay strings even when they look like numbers, booleans or JSON."""

_ARG = re.compile(r"^  ([A-Za-z_-][\w-]*):(?: (.*))?$")
_LIST_ITEM = re.compile(r"^(?:\d+[.)]|[-*+•]|[│├└|>#])")


@dataclass
class Call:
    name: str
    args: dict[str, Any]
    line: int


@dataclass
class Event:
    kind: str  # thinking | text | call | result
    line: int
    text: str = ""
    call: Call | None = None


@dataclass
class Block:
    role: str  # user | assistant
    line: int
    lines: list[str] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)


def split_blocks(text: str) -> tuple[list[Block], int]:
    """The blocks of a transcript and the number of lines before the first one."""
    lines = text.replace("\r\n", "\n").split("\n")
    starts: list[int] = []
    for i, line in enumerate(lines):
        if (line == "user:" or line == "assistant:") and (i == 0 or lines[i - 1] == ""):
            if line == "user:" and i + 1 < len(lines) and not lines[i + 1].startswith(("<", "[Image]")):
                continue
            starts.append(i)
    blocks: list[Block] = []
    for n, start in enumerate(starts):
        end = starts[n + 1] if n + 1 < len(starts) else len(lines)
        while end > start + 1 and lines[end - 1] == "":
            end -= 1
        block = Block(lines[start][:-1], start + 1, lines[start + 1:end])
        if block.role == "assistant":
            block.events = assistant_events(block.lines, start + 2)
        blocks.append(block)
    return blocks, (starts[0] if starts else len(lines))


def assistant_events(lines: list[str], first_line: int) -> list[Event]:
    """Thinking, text, calls and results of one assistant block, in order."""
    events: list[Event] = []
    text: list[str] = []
    text_at = 0
    i = 0

    def flush() -> None:
        body = "\n".join(text).strip("\n")
        if body.strip():
            events.append(Event("text", first_line + text_at, body))
        text.clear()

    while i < len(lines):
        line = lines[i]
        if line.startswith(CALL):
            flush()
            call, i = _read_call(lines, i, first_line)
            events.append(Event("call", call.line, call=call))
        elif line.startswith(RESULT):
            flush()
            j = i + 1
            while j < len(lines) and not lines[j].startswith((RESULT, CALL, THINKING)):
                j += 1
            events.append(Event("result", first_line + i, "\n".join(lines[i + 1:j]).strip("\n"),
                                Call(line[len(RESULT):].strip(), {}, first_line + i)))
            i = j
        elif line.startswith(THINKING):
            flush()
            j = i + 1
            while j < len(lines) and not lines[j].startswith((CALL, RESULT, THINKING)):
                j += 1
            thought, reply_at = split_thinking([line[len(THINKING):], *lines[i + 1:j]])
            events.append(Event("thinking", first_line + i, "\n".join(thought).strip("\n")))
            if reply_at is not None:
                text_at = i + reply_at
                text.extend(lines[i + reply_at:j])
            i = j
        else:
            if not text:
                text_at = i
            text.append(line)
            i += 1
    flush()
    return events


def split_thinking(lines: list[str]) -> tuple[list[str], int | None]:
    """Where the reply begins after a `[Thinking]` paragraph: the file puts the reply right
    after the thought with a single line break, while the thought's own paragraphs are split
    by blank lines; so the reply is the first line that directly follows a non-blank line and
    is neither a list item nor inside a code fence. None when the block is all thought."""
    fenced = False
    for k, line in enumerate(lines):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if fenced or k == 0 or not line.strip() or not lines[k - 1].strip():
            continue
        if line[0].isspace() or _LIST_ITEM.match(line) or lines[k - 1].lstrip().startswith("```"):
            continue
        return lines[:k], k
    return lines, None


def _read_call(lines: list[str], i: int, first_line: int) -> tuple[Call, int]:
    """One `[Tool call]` and its arguments; the index of the line after them."""
    name = lines[i][len(CALL):].strip() or "tool"
    known = KNOWN_ARGS.get(name)
    args: dict[str, list[str]] = {}
    key: str | None = None
    j = i + 1
    while j < len(lines) and not lines[j].startswith((CALL, RESULT)):
        line = lines[j]
        m = _ARG.match(line)
        if m and m.group(1) not in args and (known is None or m.group(1) in known):
            key = m.group(1)
            args[key] = [m.group(2) or ""]
        elif key is not None:
            args[key].append(line)
        j += 1
    if key is not None and (j >= len(lines) or lines[j].startswith(RESULT)) and len(args[key]) > 1 \
            and args[key][-1] == "":
        args[key].pop()  # the blank line between the last call and the results
    return Call(name, {k: _value(k, v) for k, v in args.items()}, first_line + i), j


def _value(key: str, lines: list[str]) -> Any:
    text = "\n".join(lines)
    if key in TEXT_ARGS or len(lines) > 1:
        return text
    if text in ("true", "false"):
        return text == "true"
    if re.fullmatch(r"-?\d{1,15}", text):
        return int(text)
    if text[:1] in "[{":
        try:
            return orjson.loads(text)
        except orjson.JSONDecodeError:
            return text
    return text
