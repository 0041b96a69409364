"""What the user typed, out of the context Cursor wraps around it.

Every Cursor store keeps a prompt inside tags: `<user_query>` holds the words, and before it
come `<timestamp>` (a local-time string: the only time in a JSONL transcript),
`<attached_files>` (code and terminal selections, with their text), `<image_files>` (where
pasted images were saved), `<external_links>`, and injected context (`<user_info>` with the
workspace path, rules, reminders). The words become the turn's text; files and images become
references; injected context is named, not indexed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

from chinvex.models import Attachment

CONTEXT_TAGS = ("attached_files", "image_files", "external_links", "cursor_commands",
                "system_reminder", "user_info", "rules", "agent_requestable_workspace_rules",
                "always_applied_workspace_rules", "git_status", "open_and_recently_viewed_files",
                "project_layout", "agent_skills", "manually_attached_skills", "additional_data",
                "terminal_files_information", "agent_transcripts", "mcp_file_system",
                "timestamp", "user_rules", "memories", "attached_terminals")
"""Tags whose content is context the editor added, not the user's words."""

_QUERY = re.compile(r"<user_query>\n?(.*?)\n?</user_query>", re.S)
_CONTEXT = re.compile(r"<(" + "|".join(CONTEXT_TAGS) + r")(?:\s[^>]*)?>(.*?)</\1>", re.S)
_TOP_TAG = re.compile(r"^<([a-z][a-z0-9_]*)(?:\s[^>]*)?>", re.M)
_ELEMENT = re.compile(r"<([a-z][a-z0-9_]*)((?:\s+[a-zA-Z_:-]+=\"[^\"]*\")+)\s*/?>")
_ATTR = re.compile(r"([a-zA-Z_:-]+)=\"([^\"]*)\"")
_IMAGE_LINE = re.compile(r"^\s*(?:\d+\.\s+)?((?:/|[A-Za-z]:[\\/]|~)\S.*?\.(png|jpe?g|gif|webp|bmp|svg|heic))\s*$",
                         re.M | re.I)
_URL = re.compile(r"https?://[^\s<>\"')\]]+")
_WORKSPACE = re.compile(r"^\s*(?:workspace path|workspace|working directory|cwd)\s*:\s*(\S.*?)\s*$",
                        re.M | re.I)
_HUMAN_TIME = re.compile(
    r"(?:[A-Za-z]+,\s*)?([A-Za-z]{3,9})\.?\s+(\d{1,2}),?\s+(\d{4}),?\s+(?:at\s+)?(\d{1,2}):(\d{2})"
    r"(?::(\d{2}))?\s*([AaPp]\.?[Mm]\.?)?\s*(?:\((?:UTC|GMT)\s*(?:([+-])(\d{1,2})(?::?(\d{2}))?)?\))?")
_MONTHS = {m: i for i, m in enumerate(
    ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"), start=1)}
MIME = {"png": "image/png", "jpg": "image/jpeg", "jpeg": "image/jpeg", "gif": "image/gif",
        "webp": "image/webp", "bmp": "image/bmp", "svg": "image/svg+xml", "heic": "image/heic"}


@dataclass
class UserText:
    text: str
    ts: datetime | None = None
    attachments: list[Attachment] = field(default_factory=list)
    context: list[str] = field(default_factory=list)
    links: list[str] = field(default_factory=list)
    workspace: str | None = None
    images: int = 0


def parse_human_time(text: str) -> datetime | None:
    """`Friday, Jul 31, 2026, 5:10 PM (UTC-5)` as UTC (no offset given: taken as UTC)."""
    m = _HUMAN_TIME.search(text)
    if not m:
        return None
    month = _MONTHS.get(m.group(1)[:3].lower())
    if month is None:
        return None
    hour, minute, second = int(m.group(4)), int(m.group(5)), int(m.group(6) or 0)
    meridiem = (m.group(7) or "").replace(".", "").lower()
    if meridiem == "pm" and hour < 12:
        hour += 12
    elif meridiem == "am" and hour == 12:
        hour = 0
    offset = timedelta(0)
    if m.group(8):
        offset = timedelta(hours=int(m.group(9)), minutes=int(m.group(10) or 0))
        offset = -offset if m.group(8) == "-" else offset
    try:
        local = datetime(int(m.group(3)), month, int(m.group(2)), hour, minute, second,
                         tzinfo=timezone(offset))
    except ValueError:
        return None
    return local.astimezone(timezone.utc)


def _selections(body: str) -> list[Attachment]:
    """Code and terminal selections of `<attached_files>`, as references (path and lines)."""
    out: list[Attachment] = []
    for m in _ELEMENT.finditer(body):
        attrs = dict(_ATTR.findall(m.group(2)))
        path = attrs.get("path") or attrs.get("file") or attrs.get("uri")
        if not path:
            continue
        tag = m.group(1)
        extra = {k: v for k, v in attrs.items() if k in ("lines", "title")}
        out.append(Attachment(kind="terminal" if "terminal" in tag else "file", path=path,
                              name=re.split(r"[\\/]", path.rstrip("/\\"))[-1] or path,
                              selection=tag, **extra))
    return out


def _images(body: str) -> list[Attachment]:
    out: list[Attachment] = []
    for m in _IMAGE_LINE.finditer(body):
        path = m.group(1)
        out.append(Attachment(kind="image", path=path, name=re.split(r"[\\/]", path)[-1],
                              mime_type=MIME.get(m.group(2).lower())))
    return out


def _context_block(tag: str, body: str, found: UserText) -> None:
    if tag == "timestamp":
        found.ts = found.ts or parse_human_time(body)
    elif tag == "attached_files":
        found.attachments.extend(_selections(body))
    elif tag == "image_files":
        found.attachments.extend(_images(body))
    elif tag == "external_links":
        found.links.extend(_URL.findall(body)[:50])
    elif tag == "user_info":
        m = _WORKSPACE.search(body)
        if m:
            found.workspace = m.group(1)
    if tag not in found.context:
        found.context.append(tag)


def parse_user_text(raw: str) -> UserText:
    """The words of a prompt and what came with it. With `<user_query>` the words are its
    content; without, the text left once known context blocks are taken out."""
    found = UserText(text="")
    if "</" in raw:
        for m in _CONTEXT.finditer(raw):
            _context_block(m.group(1), m.group(2), found)
    queries = _QUERY.findall(raw) if "<user_query>" in raw else []
    if queries:
        found.text = "\n\n".join(q.strip("\n") for q in queries)
        outside = _QUERY.sub("", _CONTEXT.sub("", raw) if found.context else raw)
        for tag in _TOP_TAG.findall(outside):
            if tag not in found.context:
                found.context.append(tag)
    else:
        rest = _CONTEXT.sub("", raw) if found.context else raw
        found.text = rest.strip("\n")
    if "[Image]" in raw:
        found.images = raw.count("[Image]")
        if not queries:
            found.text = re.sub(r"^\[Image\]\s*$\n?", "", found.text, flags=re.M).strip("\n")
    return found


_REDACTED = re.compile(r"(?:\n\n)?\[REDACTED\]")


def without_redacted(text: str) -> str:
    """Assistant text without Cursor's `[REDACTED]` markers (hidden reasoning)."""
    return _REDACTED.sub("", text) if "[REDACTED]" in text else text
