"""Markdown chat exports → `ConversationDoc`; markdown without chat structure → `Document`.

Exporters mark speakers with headings, each in its own way (FORMATS.md §3.4):

- pionxzh/chatgpt-exporter: `#### You:` / `#### ChatGPT:` / `#### Plugin (name):`, optional
  front matter, `# <title>`, `<time datetime=…>` tags, `<details>` thoughts, `Code:`/`Result:`
  fenced blocks for code-interpreter traffic;
- convoviz: YAML front matter, `# Me` / `# ChatGPT` / `### System` / `### Tool output`
  (Obsidian flavour adds `^node-id` block ids and ⬆️/⬇️ navigation links), `---` separators;
- others: `**User:**` / `**Assistant:**`, `## Prompt` / `## Response`, `### User` / `### Assistant`.

A shape counts only when it has at least one user and one assistant heading outside code
fences, and shapes are tried most specific first, so an answer that itself contains
`### User` (say, explaining a chat format) does not split a pionxzh export.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from chinvex.ids import doc_id_for, sha256_hex, thread_doc_id
from chinvex.models import Attachment, ConversationDoc, Document, ToolCall, Turn
from chinvex.models.sources import ParseReport
from chinvex.timeutil import to_utc
from chinvex_adapters.kit.text import clean_text, fill_times, one_line, searchable

from .frontmatter import conversation_id_from, lookup, split_front_matter

SOURCE = "chat_markdown"
SOURCE_TYPE = "chat"

_FENCE_OPEN = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_IMAGE = re.compile(r"!\[([^\]\n]*)\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_TIME_TAG = re.compile(r"<time\b[^>]*\bdatetime=\"([^\"]+)\"[^>]*>.*?</time>\s*", re.DOTALL)
_DETAILS = re.compile(
    r"<details>\s*<summary>(.*?)</summary>(.*?)</details>\s*", re.DOTALL | re.IGNORECASE
)
_PAPERCLIP = re.compile(r"^- 📎 (.+)$", re.MULTILINE)
_NAV_UP = re.compile(r"^\[⬆️\]\(#\^[\w-]+\)\s*$")
_NAV_DOWN = re.compile(r"^(?:\[\d* ?⬇️\]\(#\^[\w-]+\)\s*\|?\s*)+$")
_H1 = re.compile(r"^# (.+?)\s*#*\s*$")
_CODE_BLOCK = re.compile(r"\A(Code|Result):\s*\n(.*)\Z", re.DOTALL)

_USER = {"you", "user", "me", "human", "prompt"}
_ASSISTANT = {"chatgpt", "assistant", "ai", "claude", "bot", "model", "gemini", "response"}


@dataclass
class _Header:
    line: int
    role: str
    label: str
    rest: str = ""
    node_id: str | None = None
    tool: str | None = None


@dataclass
class _Shape:
    name: str
    pattern: re.Pattern[str]
    role: Callable[[re.Match[str]], tuple[str, str | None] | None]


def _generic_role(label: str) -> tuple[str, str | None] | None:
    low = label.strip().lower()
    if low in _USER:
        return "user", None
    if low in _ASSISTANT:
        return "assistant", None
    if low == "system":
        return "system", None
    if low in ("tool", "tool output"):
        return "tool", None
    return None


def _pionxzh_role(m: re.Match[str]) -> tuple[str, str | None] | None:
    label = m.group(1).strip()
    plugin = re.fullmatch(r"Plugin \((.*)\)", label)
    if plugin:
        return "tool", plugin.group(1).strip() or "plugin"
    return _generic_role(label) if label.lower() in ("you", "chatgpt", "system", "tool", "user",
                                                     "assistant") else None


SHAPES: list[_Shape] = [
    _Shape("pionxzh", re.compile(r"^#### (.+?):\s*$"), _pionxzh_role),
    _Shape("convoviz", re.compile(r"^#{1,6} (Me|ChatGPT|System|Tool output)(?:\s+\^([\w-]+))?\s*$"),
           lambda m: _generic_role(m.group(1))),
    _Shape("prompt_response", re.compile(r"^#{1,4}\s+(Prompt|Response)\s*:?\s*$", re.IGNORECASE),
           lambda m: _generic_role(m.group(1))),
    _Shape("role_headings", re.compile(
        r"^#{1,4}\s+(User|Assistant|Human|You|AI|System|ChatGPT|Claude)\s*:?\s*$", re.IGNORECASE),
        lambda m: _generic_role(m.group(1))),
    _Shape("bold_labels", re.compile(
        r"^\*\*(User|You|Human|Me|Assistant|ChatGPT|AI|Claude|Bot|Model|System|Gemini)\s*:?\s*\*\*"
        r"\s*:?\s*(.*)$", re.IGNORECASE),
        lambda m: _generic_role(m.group(1))),
]


def _outside_fences(lines: list[str]) -> list[bool]:
    """For each line, whether it is markdown (True) or inside a fenced code block."""
    flags: list[bool] = []
    fence: str | None = None
    for line in lines:
        match = _FENCE_OPEN.match(line)
        if fence is None:
            if match:
                fence = match.group(1)
                flags.append(False)
            else:
                flags.append(True)
        else:
            flags.append(False)
            stripped = line.strip()
            if match and stripped.startswith(fence[0] * len(fence)) and set(stripped) == {fence[0]}:
                fence = None
    return flags


def detect(lines: list[str]) -> tuple[str, list[_Header]] | None:
    """The first shape whose headings name both a user and an assistant, with its headings."""
    usable = _outside_fences(lines)
    for shape in SHAPES:
        headers: list[_Header] = []
        for i, line in enumerate(lines):
            if not usable[i] or not line.startswith(("#", "*")):
                continue
            m = shape.pattern.match(line)
            if not m:
                continue
            found = shape.role(m)
            if found is None:
                continue
            role, tool = found
            header = _Header(line=i, role=role, label=m.group(1), tool=tool)
            if shape.name == "convoviz":
                header.node_id = m.group(2)
            elif shape.name == "bold_labels":
                header.rest = m.group(2)
            headers.append(header)
        roles = {h.role for h in headers}
        if "user" in roles and "assistant" in roles:
            return shape.name, headers
    return None


@dataclass
class _Body:
    text: str
    ts: datetime | None = None
    attachments: list[Attachment] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)


def _images(text: str, attachments: list[Attachment]) -> str:
    def repl(m: re.Match[str]) -> str:
        alt, url = m.group(1).strip(), m.group(2)
        if url.startswith("data:"):
            attachments.append(Attachment(kind="image", name=alt or None,
                                          mime_type=url[5:].split(";", 1)[0] or None))
        elif "://" in url:
            attachments.append(Attachment(kind="image", name=alt or None, uri=url))
        else:
            attachments.append(Attachment(kind="image", name=alt or None, path=url))
        return f"[image: {alt}]" if alt and alt.lower() not in ("image", "img") else "[image]"

    return _IMAGE.sub(repl, text)


def _clean_body(raw: str, shape: str) -> _Body:
    body = _Body(text=raw)
    text = raw
    if shape == "pionxzh":
        m = _TIME_TAG.search(text)
        if m:
            body.ts = to_utc(m.group(1))
            text = _TIME_TAG.sub("", text)

        def thought(m: re.Match[str]) -> str:
            body.meta["thinking"] = True
            label = re.sub(r"<[^>]+>", "", m.group(1)).strip() or "Thinking"
            return f"[{label}]\n{m.group(2).strip()}\n\n"

        text = _DETAILS.sub(thought, text)
        for name in _PAPERCLIP.findall(text):
            body.attachments.append(Attachment(kind="file", name=name.strip()))
    if shape == "convoviz":
        kept = [ln for ln in text.split("\n") if not (_NAV_UP.match(ln) or _NAV_DOWN.match(ln))]
        while kept and not kept[-1].strip():
            kept.pop()
        if kept and kept[-1].strip() == "---":
            kept.pop()
        text = "\n".join(kept)
    text = _images(text, body.attachments)
    body.text = text.strip("\n").strip()
    return body


def _title_from_preamble(preamble: str) -> tuple[str | None, str]:
    lines = preamble.split("\n")
    usable = _outside_fences(lines)
    for i, line in enumerate(lines):
        if usable[i]:
            m = _H1.match(line)
            if m:
                rest = "\n".join(lines[:i] + lines[i + 1:])
                return m.group(1).strip(), rest.strip()
    return None, preamble.strip()


def read_text(path: Path) -> str:
    data = path.read_bytes()
    return clean_text(data.decode("utf-8-sig", "replace").replace("\r\n", "\n").replace("\r", "\n"))


def _first_heading(body: str) -> str | None:
    lines = body.split("\n")
    usable = _outside_fences(lines)
    for i, line in enumerate(lines):
        m = re.match(r"^#{1,6}\s+(.+?)\s*#*\s*$", line)
        if usable[i] and m:
            return m.group(1).strip()
    return None


def plain_document(text: str, front: dict[str, Any], body: str, *, path: str, stem: str) -> Document:
    """A .md file without chat structure: still searchable, as one document."""
    title = lookup(front, "title")
    title = str(title) if isinstance(title, str | int | float) and not isinstance(title, bool) else None
    metadata: dict[str, Any] = {"format": "plain_markdown"}
    if front:
        metadata["front_matter"] = front
    return Document(
        doc_id=doc_id_for(SOURCE_TYPE, path), source_type=SOURCE_TYPE, source_uri=path,
        title=title or _first_heading(body) or stem,
        created_at=to_utc(lookup(front, "created", "create_time", "created_at", "date")),
        updated_at=to_utc(lookup(front, "updated", "update_time", "updated_at", "modified")),
        text=searchable(text), metadata=metadata,
    )


def _header_turns(lines: list[str], headers: list[Any], shape: str, body_offset: int,
                  report: ParseReport) -> list[Turn]:
    """One turn per speaker header, its body up to the next header; a pionxzh `Result:` code
    block joins the `Code:` call before it."""
    turns: list[Turn] = []
    open_call: Turn | None = None
    for k, header in enumerate(headers):
        end = headers[k + 1].line if k + 1 < len(headers) else len(lines)
        raw = "\n".join(([header.rest] if header.rest else []) + lines[header.line + 1 : end])
        parsed = _clean_body(raw, shape)
        meta: dict[str, Any] = {"line": body_offset + header.line + 1, "speaker": header.label}
        meta.update(parsed.meta)
        if header.node_id:
            meta["node_id"] = header.node_id
        turn_id = f"md-{k + 1}"
        code = _CODE_BLOCK.match(parsed.text) if shape == "pionxzh" else None
        if code and code.group(1) == "Result" and open_call is not None:
            open_call.text = searchable(f"{open_call.text}\n\nResult:\n{code.group(2).strip()}")
            open_call.attachments.extend(parsed.attachments)
            open_call.meta.setdefault("result_lines", []).append(meta["line"])
            continue
        if not parsed.text and not parsed.attachments:
            report.counts["messages_empty"] += 1
            continue
        role, tool = header.role, header.tool
        call = ToolCall(name=tool) if tool else None
        if code and code.group(1) == "Code":
            role, call = "tool", ToolCall(name="python", input=code.group(2).strip()[:2000])
            text = f"Tool call: python\n{code.group(2).strip()}"
        elif code:  # a Result: without a preceding Code:
            role, call = "tool", ToolCall(name="python")
            text = f"Tool result: python\n{code.group(2).strip()}"
        else:
            text = parsed.text
        turn = Turn(turn_id=turn_id, ts=parsed.ts, role=role, text=searchable(text),  # type: ignore[arg-type]
                    tool=call, attachments=parsed.attachments, meta=meta)
        turns.append(turn)
        open_call = turn if code and code.group(1) == "Code" else None
    return turns


def parse_markdown(path: Path, report: ParseReport) -> ConversationDoc | Document:
    """Parse one markdown file; `path` must be absolute (it becomes the source_uri)."""
    text = read_text(path)
    uri = str(path)
    front, body, fm_error = split_front_matter(text)
    if fm_error:
        report.warnings.append(f"{uri}: {fm_error}; front matter ignored")
        report.counts["front_matter_invalid"] += 1
    lines = body.split("\n")
    found = detect(lines)
    if found is None:
        return plain_document(text, front, body, path=uri, stem=path.stem)
    shape, headers = found
    preamble = "\n".join(lines[: headers[0].line])
    h1_title, preamble_rest = _title_from_preamble(preamble)
    body_offset = text[: len(text) - len(body)].count("\n")

    thread_id = conversation_id_from(front)
    synthetic = thread_id is None
    if thread_id is None:
        thread_id = "md-" + sha256_hex(uri)[:32]

    turns: list[Turn] = []
    if preamble_rest:
        turns.append(Turn(turn_id="md-0", role="system", text=searchable(preamble_rest),
                          meta={"preamble": True}))
    turns += _header_turns(lines, headers, shape, body_offset, report)

    if not turns:
        report.counts["chat_markdown_without_messages"] += 1
        return plain_document(text, front, body, path=uri, stem=path.stem)
    created = to_utc(lookup(front, "create_time", "created", "created_at", "date"))
    updated = to_utc(lookup(front, "update_time", "updated", "updated_at", "modified"))
    stamps = [t.ts for t in turns if t.ts]
    created = created or (min(stamps) if stamps else None)
    updated = updated or (max(stamps) if stamps else None) or created
    fill_times(turns, created)
    fm_title = lookup(front, "title")
    first_user = next((t.text for t in turns if t.role == "user"), "")
    title = (str(fm_title) if isinstance(fm_title, str | int | float) and not isinstance(fm_title, bool)
             else None) or h1_title or one_line(first_user) or path.stem
    metadata: dict[str, Any] = {"format": shape, "path": uri}
    if front:
        metadata["front_matter"] = front
    model = lookup(front, "model")
    if isinstance(model, str):
        metadata["model"] = model
    if synthetic:
        metadata["thread_id_note"] = "no conversation id in front matter; id = hash of the path"
    return ConversationDoc(
        source=SOURCE, source_type=SOURCE_TYPE, source_uri=uri,
        doc_id=thread_doc_id(SOURCE_TYPE, thread_id), thread_id=thread_id, title=title,
        created_at=created, updated_at=updated, turns=turns, metadata=metadata,
    )
