"""Tool calls written as XML inside the assistant's text (Cline up to 3.x, Roo Code and Kilo
Code before native tool calling), e.g.

    <write_to_file>
    <path>src/a.py</path>
    <content>...</content>
    </write_to_file>

An assistant message is prose with calls between; a call's parameters are its child tags. A
`content` or `diff` may hold anything, tags included, so such a value ends at the last closing
tag of its name inside the call; a short value ends at its first closing tag followed by
another tag. A call cut off by an interrupted stream is kept, marked incomplete.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

TOOLS = frozenset({
    # Cline
    "execute_command", "read_file", "write_to_file", "replace_in_file", "apply_patch",
    "search_files", "list_files", "list_code_definition_names", "browser_action", "use_mcp_tool",
    "access_mcp_resource", "load_mcp_documentation", "ask_followup_question", "attempt_completion",
    "new_task", "plan_mode_respond", "act_mode_respond", "focus_chain", "web_fetch", "web_search",
    "condense", "summarize_task", "report_bug", "new_rule", "generate_explanation", "use_skill",
    "use_subagents",
    # Roo Code / Kilo Code
    "read_command_output", "apply_diff", "edit", "search_and_replace", "search_replace",
    "edit_file", "switch_mode", "codebase_search", "update_todo_list", "run_slash_command", "skill",
    "generate_image", "custom_tool", "insert_content", "fetch_instructions",
})
"""Tool names of every generation; a tag of another name is prose."""
LONG_PARAMS = frozenset({"content", "diff", "result", "response", "context", "message", "todos",
                         "arguments", "args", "question", "follow_up", "command", "patch",
                         "task_progress", "input"})
"""Parameters whose value may itself contain tags."""
NESTED = frozenset({"args", "file"})
"""Roo's multi-file form: `<args><file><path>…</path><diff>…</diff></file></args>`."""

NOTICES = (
    "[Response interrupted by a tool use result. Only one tool may be used at a time and should "
    "be placed at the end of the message.]",
    "[Response interrupted by user]",
    "[Response interrupted by API Error]",
)
"""What the extension appends to an assistant message it cut short."""

_OPEN = re.compile(r"^[ \t]*<(" + "|".join(sorted(TOOLS, key=len, reverse=True)) + r")>", re.M)
_PARAM = re.compile(r"<([A-Za-z_][\w-]*)>")


@dataclass
class XmlCall:
    name: str
    params: dict[str, object] = field(default_factory=dict)
    complete: bool = True


Piece = str | XmlCall


def split_calls(text: str) -> list[Piece]:
    """The prose and the tool calls of an assistant text, in order. Text without a tool tag is
    returned whole."""
    pieces: list[Piece] = []
    pos = 0
    for match in _OPEN.finditer(text):
        if match.start() < pos:
            continue
        name = match.group(1)
        parsed = _call(text, name, match.end())
        if parsed is None:
            continue
        call, end = parsed
        if match.start() > pos:
            pieces.append(text[pos:match.start()])
        pieces.append(call)
        pos = end
    if pos < len(text):
        pieces.append(text[pos:])
    return pieces


def strip_notices(text: str) -> tuple[str, bool]:
    """The text without the extension's interruption notices, and whether there was one."""
    found = False
    for notice in NOTICES:
        if notice in text:
            text = text.replace(notice, "")
            found = True
    return text, found


def _skip_ws(text: str, pos: int, end: int) -> int:
    while pos < end and text[pos] in " \t\r\n":
        pos += 1
    return pos


def _call(text: str, name: str, start: int) -> tuple[XmlCall, int] | None:
    """The call whose opening tag ends at `start`, and where it ends; None when what follows
    the tag is not parameters (a tag mentioned in prose)."""
    close = f"</{name}>"
    first = _skip_ws(text, start, len(text))
    if first < len(text) and text[first] != "<":
        return None
    # A long value may contain anything up to the call's last closing tag before the next call
    # of the same tool.
    nxt = text.find(f"\n<{name}>", start)
    region = len(text) if nxt == -1 else nxt
    last_close = text.rfind(close, start, region)
    limit = last_close if last_close != -1 else len(text)
    params, pos, complete = _params(text, start, limit, close)
    call = XmlCall(name, params, complete)
    if complete:
        return call, pos + len(close)
    return call, len(text) if last_close == -1 else last_close + len(close)


def _params(text: str, pos: int, limit: int, close: str) -> tuple[dict[str, object], int, bool]:
    """Child tags from `pos` up to the closing tag `close` (searched up to `limit`)."""
    params: dict[str, object] = {}
    while True:
        pos = _skip_ws(text, pos, limit)
        if text.startswith(close, pos):
            return params, pos, True
        opened = _PARAM.match(text, pos)
        if opened is None or pos >= limit:
            at = text.find(close, pos)
            return params, (at if at != -1 else limit), at != -1
        key = opened.group(1)
        value_start = opened.end()
        end = _value_end(text, key, value_start, limit)
        if end == -1:  # cut off: keep what was written
            params[key] = _clean(key, text[value_start:limit])
            return params, limit, False
        raw = text[value_start:end]
        params[key] = _nested(raw) if key in NESTED else _clean(key, raw)
        pos = end + len(key) + 3


def _value_end(text: str, key: str, start: int, limit: int) -> int:
    tag = f"</{key}>"
    if key in LONG_PARAMS:
        return text.rfind(tag, start, limit)
    at = text.find(tag, start, limit)
    while at != -1:
        after = _skip_ws(text, at + len(tag), len(text))
        if after >= len(text) or text[after] == "<":
            return at
        at = text.find(tag, at + 1, limit)
    return text.rfind(tag, start, limit)


def _clean(key: str, value: str) -> str:
    """Values as the extension reads them: trimmed; a body keeps its inner whitespace but
    loses the line breaks around it."""
    if key in ("content", "diff", "patch", "input"):
        if value.startswith("\n"):
            value = value[1:]
        if value.endswith("\n"):
            value = value[:-1]
        return value
    return value.strip()


def _nested(raw: str) -> object:
    """Roo's `<args>` (a list of `<file>` elements) or one `<file>` as plain data."""
    items: list[dict[str, object]] = []
    pos = 0
    while True:
        start = raw.find("<file>", pos)
        if start == -1:
            break
        end = raw.find("</file>", start)
        body = raw[start + 6: end if end != -1 else len(raw)]
        items.append(_children(body))
        if end == -1:
            break
        pos = end + 7
    return items if items else _children(raw) or raw.strip()


def _children(body: str) -> dict[str, object]:
    out: dict[str, object] = {}
    pos = 0
    while True:
        pos = _skip_ws(body, pos, len(body))
        opened = _PARAM.match(body, pos)
        if opened is None:
            return out
        key = opened.group(1)
        end = _value_end(body, key, opened.end(), len(body))
        if end == -1:
            out[key] = _clean(key, body[opened.end():])
            return out
        value = body[opened.end():end]
        if key == "diff" and "<content>" in value:
            value = _children(value)  # type: ignore[assignment]
        elif key not in ("content", "diff"):
            value = value.strip()
        elif value.startswith("\n"):
            value = value[1:]
        if key in out:  # repeated children (several diffs of one file)
            prev = out[key]
            out[key] = [*(prev if isinstance(prev, list) else [prev]), value]
        else:
            out[key] = value
        pos = end + len(key) + 3
