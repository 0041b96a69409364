"""Reading `.aider.chat.history.md`, the markdown log Aider appends to in a repository.

What each line is, as Aider writes it (aider/io.py `append_chat_history`):
- `# aider chat started at YYYY-MM-DD HH:MM:SS` begins a session (local time, no zone);
- `#### ` prefixes every line of what the user typed (messages and /commands);
- `> ` begins Aider's own output (tool output: files added, tokens, `Applied edit to`,
  `Commit <sha> <message>`); a multi-line output has `> ` on its first line only, and every
  output ends with a markdown hard break (two trailing spaces);
- everything else is the model's reply, with its SEARCH/REPLACE edit blocks (the file path on
  the line before the fence, or first inside it).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timezone

from chinvex_adapters.kit.edits import FileEdit, resolve

SESSION_START = re.compile(r"^# aider chat started at (\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2})\s*$")
_FENCE = re.compile(r"^(`{3,}|~{3,})")
_SEARCH = re.compile(r"^<{5,9} SEARCH\b")
_DIVIDER = re.compile(r"^={5,9}\s*$")
_REPLACE = re.compile(r"^>{5,9} REPLACE\b")
_APPLIED = re.compile(r"^Applied edit to (.+?)\s*$")
_COMMIT = re.compile(r"^Commit ([0-9a-f]{7,40}) (.+?)\s*$")
_MODEL = re.compile(r"^(?:Main model|Models?): (\S+)")
_VERSION = re.compile(r"^Aider v(\S+)")


@dataclass
class Block:
    kind: str  # user | output | assistant
    lines: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        return "\n".join(self.lines).strip("\n")


@dataclass
class Session:
    started: datetime | None
    started_text: str
    line_no: int
    blocks: list[Block] = field(default_factory=list)


def _stamp(text: str) -> datetime | None:
    try:
        return datetime.fromisoformat(text.replace(" ", "T")).replace(tzinfo=timezone.utc)
    except ValueError:
        return None


def _ends_output(lines: list[str], line_no: int) -> bool:
    """Aider ends each output with two spaces; a line of the output itself may too, so the end
    is where the next line is what Aider writes next (a blank line, another output, the user's
    input or a new session)."""
    following = lines[line_no] if line_no < len(lines) else ""
    return not following.strip() or following.startswith((">", "####", "# aider chat started"))


def is_marker(line: str) -> bool:
    """A line only Aider writes: a session header, the user's input (`#### `), or the end of one
    of its own outputs (`> ` ... ending in its hard break, two spaces)."""
    line = line.rstrip("\r\n")
    return (line.startswith("#### ") or line == "####" or bool(SESSION_START.match(line))
            or (line.startswith("> ") and line.endswith("  ")))


def split_sessions(text: str, counts: Counter[str]) -> list[Session]:
    """The sessions of a history, each as its blocks in order. Lines before the first header
    (a hand-edited file, or a history written without one) form a session without a start."""
    sessions: list[Session] = []
    current: Session | None = None
    block: Block | None = None
    in_output = in_fence = in_edit = False
    lines = [raw.rstrip("\r") for raw in text.split("\n")]
    for line_no, line in enumerate(lines, start=1):
        if block is not None and block.kind == "assistant" and (in_edit or _SEARCH.match(line)):
            # Inside a SEARCH/REPLACE block every line is the edit's, whatever it starts with.
            in_edit = not _REPLACE.match(line)
            block.lines.append(line.rstrip())
            continue
        header = SESSION_START.match(line)
        if header and not in_fence:
            current = Session(_stamp(header.group(1)), header.group(1), line_no)
            sessions.append(current)
            block, in_output = None, False
            continue
        if current is None:
            if not line.strip():
                continue
            current = Session(None, "", line_no)
            sessions.append(current)
            counts["sessions_without_header"] += 1
        if in_output:
            assert block is not None
            block.lines.append(line.rstrip())
            if line.endswith("  ") and _ends_output(lines, line_no):
                in_output = False
            continue
        if not in_fence and line.startswith("####"):
            content = line[5:] if line.startswith("#### ") else line[4:]
            if block is None or block.kind != "user":
                block = Block("user")
                current.blocks.append(block)
            block.lines.append(content.rstrip())
            continue
        if not in_fence and line.startswith(">"):
            if block is None or block.kind != "output":  # consecutive outputs: one turn
                block = Block("output")
                current.blocks.append(block)
            block.lines.append((line[2:] if line.startswith("> ") else line[1:]).rstrip())
            in_output = not (line.endswith("  ") and _ends_output(lines, line_no))
            continue
        if not line.strip() and not in_fence:
            if block is not None and block.kind == "user":
                block = None  # each input is written after a blank line
            elif block is not None and block.kind == "assistant":
                block.lines.append("")
            continue
        if block is None or block.kind != "assistant":
            block = Block("assistant")
            current.blocks.append(block)
        if _FENCE.match(line.strip()) or line.strip() in ("<source>", "</source>"):
            in_fence = not in_fence
        block.lines.append(line.rstrip())
    return sessions


def edits_in_reply(text: str, cwd: str | None) -> list[FileEdit]:
    """The SEARCH/REPLACE blocks of a reply, each with the file it names: the nearest line
    before its `<<<<<<< SEARCH` that is not a fence (a path alone on its line, outside the
    fence in the `diff` format, first inside it in `diff-fenced`)."""
    edits: list[FileEdit] = []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        if not _SEARCH.match(lines[i]):
            i += 1
            continue
        divider = next((j for j in range(i + 1, len(lines)) if _DIVIDER.match(lines[j])), None)
        end = next((j for j in range((divider or i) + 1, len(lines)) if _REPLACE.match(lines[j])), None)
        if divider is None or end is None:
            i += 1
            continue
        path = _path_before(lines, i)
        if path:
            edits.append(FileEdit(path=path, op="edit", old_text="\n".join(lines[i + 1:divider]),
                                  new_text="\n".join(lines[divider + 1:end]), abs_path=resolve(path, cwd)))
        i = end + 1
    return edits


def _path_before(lines: list[str], index: int) -> str | None:
    for j in range(index - 1, max(-1, index - 4), -1):
        line = lines[j].strip()
        if not line or _FENCE.match(line) or line in ("<source>", "</source>") or line.startswith("<source"):
            continue
        candidate = line.strip("`*: ")
        return candidate if candidate and " " not in candidate.strip() or "/" in candidate else None
    return None


def output_facts(text: str) -> dict[str, list[str]]:
    """What Aider's output says happened: files edited, commits made, model and version."""
    facts: dict[str, list[str]] = {"applied": [], "commits": [], "models": [], "versions": []}
    for line in text.split("\n"):
        line = line.strip()
        for key, pattern in (("applied", _APPLIED), ("models", _MODEL), ("versions", _VERSION)):
            found = pattern.match(line)
            if found:
                facts[key].append(found.group(1))
        commit = _COMMIT.match(line)
        if commit:
            facts["commits"].append(f"{commit.group(1)} {commit.group(2)}")
    return facts
