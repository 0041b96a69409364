"""Turning rollout payload fragments into indexable text, safely.

Everything here is defensive about types: rollout payloads drift between Codex versions and
hand-made files, so a field can be missing, null, a string where a list was expected, ...
Nothing that is base64 (data URLs, generated images) or encrypted ever reaches a text.
"""

from __future__ import annotations

import re
import shlex
from typing import Any

from chinvex.models import Attachment

TOOL_OUTPUT_LIMIT = 8000
"""Characters of a tool's output kept for indexing; the rest is cut from the middle."""

TOOL_INPUT_LIMIT = 8000
"""Characters of a tool's rendered input (command, arguments, patch text) kept."""

TOOL_INPUT_VALUE_LIMIT = 2000
"""Characters of each string value kept in the structured `ToolCall.input`."""

TITLE_LIMIT = 80

USER_REQUEST_MARKER = "## My request for Codex:"
"""Codex Desktop/IDE prefix the typed prompt with mentioned files; the request follows this."""

# Model-visible context that Codex injects as user/developer messages; never typed by the user.
# Sources: codex-rs session-prefix and contextual-user-message helpers (environment_context,
# turn_aborted, context_update, tool_context, reasoning_context, pinned_notes,
# subagent_notification, user_shell_command, user/skill instructions) plus the developer-side
# blocks seen in rollouts (permissions/skills/plugins/apps instructions, collaboration mode).
INJECTED_PREFIXES = (
    "<environment_context>",
    "<user_instructions>",
    "# agents.md instructions",
    "<instructions>",
    "<permissions instructions>",
    "<skills_instructions>",
    "<plugins_instructions>",
    "<apps_instructions>",
    "<app-context>",
    "<collaboration_mode>",
    "<recommended_plugins>",
    "<skill>",
    "<turn_aborted>",
    "<context_update>",
    "<tool_context>",
    "<reasoning_context>",
    "<pinned_notes>",
    "<subagent_notification>",
    "<user_shell_command>",
)

_DATA_URL = re.compile(r"data:([A-Za-z0-9.+/-]*)((?:;[A-Za-z0-9=.+-]+)*);base64,[A-Za-z0-9+/=_-]*")
_LONG_BASE64 = re.compile(r"[A-Za-z0-9+/]{400,}={0,2}")
_IMAGE_OPEN = re.compile(r"^\s*<image\b[^>]*>\s*$", re.IGNORECASE)
_PATH_ATTR = re.compile(r'\bpath="([^"]*)"')
_IMAGE_CLOSE = re.compile(r"^\s*</image>\s*$", re.IGNORECASE)
_EXIT_CODE = re.compile(r"(?:Process exited with code|Exit code:)\s*(-?\d+)")


# -- type guards ---------------------------------------------------------------------------

def as_str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def json_scalar(value: Any) -> Any:
    """`value` if it is a JSON scalar every consumer accepts (finite, 64-bit), else None."""
    if value is None or isinstance(value, (str, bool)):
        return value
    if isinstance(value, int):
        return value if -INT64 <= value < INT64 else None
    if isinstance(value, float):
        return value if value == value and value not in (float("inf"), float("-inf")) else None
    return None


def as_dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


INT64 = 2**63


def as_int(value: Any) -> int | None:
    """An integer that fits JSON consumers (64-bit); anything else is None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if -INT64 <= value < INT64 else None
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return int(value)
    return None


# -- cleaning --------------------------------------------------------------------------------

def _data_url_marker(match: re.Match[str]) -> str:
    mime = match.group(1) or "data"
    approx = (len(match.group(0)) - match.group(0).find(",") - 1) * 3 // 4
    return f"[inline {mime}, {approx} bytes omitted]"


def scrub(text: str) -> tuple[str, int]:
    """Remove inline base64 payloads from `text`; returns (text, number removed)."""
    if "base64," not in text and len(text) < 400:
        return text, 0
    text, n_urls = _DATA_URL.subn(_data_url_marker, text)
    text, n_runs = _LONG_BASE64.subn(lambda m: f"[base64 data, {len(m.group(0))} chars omitted]", text)
    return text, n_urls + n_runs


_TERMINAL_ESCAPE = re.compile(
    r"\x1b(?:\[[0-?]*[ -/]*[@-~]"  # CSI: colours (SGR), cursor moves, erases
    r"|\][^\x07\x1b]*(?:\x07|\x1b\\)"  # OSC: window titles, hyperlinks
    r"|[()*+#%][0-~]"  # charset selection (`ESC(B`)
    r"|[@-Z\\-_])"  # two-byte escapes
)


_CONTROL_RUN = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]+")


def clean_terminal_output(text: str) -> str:
    """Tool output as text: terminal escapes removed (`strip_terminal_escapes`), and every run
    of other control characters (NUL, BEL, a lone ESC, ...) made one space.

    `cat` of a binary file (an Unreal `.uasset`, a SQLite database) puts NUL-separated names
    and raw bytes into the output; a space keeps the names apart as words, and no NUL or other
    control character reaches the index. Tabs and line breaks are kept.
    """
    text = strip_terminal_escapes(text)
    if text.isprintable() or not _CONTROL_RUN.search(text):
        return text
    return _CONTROL_RUN.sub(" ", text)


def strip_terminal_escapes(text: str) -> str:
    """`text` without terminal escape sequences.

    Shell output captured from a terminal keeps its colour codes: PowerShell 7 on Windows
    writes `ESC[32;1mMode ESC[0m` around every table header and error line, and `ls --color`,
    test runners and compilers do the same. Left in, the codes glue to the words next to them
    (`[32;1mMode`), so the words are not found and the text reads as noise.
    """
    if "\x1b" not in text:
        return text
    return _TERMINAL_ESCAPE.sub("", text)


def truncate_middle(text: str, limit: int) -> tuple[str, bool]:
    """Keep the head and the tail (errors and summaries live at both ends of tool output)."""
    if len(text) <= limit:
        return text, False
    head = limit * 3 // 4
    tail = limit - head
    removed = text[head: len(text) - tail]
    marker = f"\n[... {len(removed.encode('utf-8', 'surrogatepass'))} bytes truncated ...]\n"
    return text[:head] + marker + text[len(text) - tail:], True


def truncate_title(text: str, limit: int = TITLE_LIMIT) -> str:
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    cut = flat[: limit - 1]
    space = cut.rfind(" ")
    if space >= limit // 2:
        cut = cut[:space]
    return cut.rstrip() + "…"


def strip_request_prefix(text: str) -> str:
    """The typed request without the "files mentioned" preamble (what Codex shows as title)."""
    idx = text.find(USER_REQUEST_MARKER)
    if idx >= 0:
        return text[idx + len(USER_REQUEST_MARKER):].strip()
    return text.strip()


def is_injected(text: str) -> bool:
    head = text.lstrip()[:64].lower()
    return any(head.startswith(prefix) for prefix in INJECTED_PREFIXES)


# -- attachments -----------------------------------------------------------------------------

def image_attachment(url: Any = None, path: Any = None, name: Any = None) -> Attachment | None:
    """An image reference without its bytes: data URLs keep only their type and size."""
    url_s = as_str(url)
    path_s = as_str(path)
    if url_s is None and path_s is None:
        return None
    mime = None
    size = None
    uri = None
    if url_s is not None:
        match = _DATA_URL.match(url_s)
        if match or url_s.startswith("data:"):
            mime = (match.group(1) if match else None) or None
            comma = url_s.find(",")
            size = (len(url_s) - comma - 1) * 3 // 4 if comma >= 0 else None
        else:
            uri = url_s[:2000]
    display = as_str(name) or (path_s.rsplit("/", 1)[-1] if path_s else None)
    return Attachment(kind="image", name=display, path=path_s, uri=uri, mime_type=mime,
                      size_bytes=size)


def image_placeholder(att: Attachment) -> str:
    label = att.path or att.uri or att.name
    return f"[image: {label}]" if label else "[image]"


# -- message content -------------------------------------------------------------------------

def content_parts(content: Any) -> tuple[list[str], list[Attachment]]:
    """Texts and image references of a Responses-API `content` (str or list of items).

    The 0.169 local-image wrapper (`<image name=.. path=..>` / `</image>` text parts around an
    `input_image`) becomes one attachment carrying the path.
    """
    if isinstance(content, str):
        return [content], []
    texts: list[str] = []
    atts: list[Attachment] = []
    pending_path: str | None = None
    for item in as_list(content):
        if isinstance(item, str):
            texts.append(item)
            continue
        item = as_dict(item)
        kind = as_str(item.get("type")) or ""
        if kind in ("input_text", "output_text", "text", "Text", "inputText", "summary_text",
                    "reasoning_text"):
            text = as_str(item.get("text"))
            if text is None:
                continue
            if len(text) < 2000 and text.lstrip()[:7].lower() in ("<image ", "<image>", "</image"):
                if _IMAGE_OPEN.match(text):
                    attr = _PATH_ATTR.search(text)
                    pending_path = attr.group(1) if attr else pending_path
                    continue
                if _IMAGE_CLOSE.match(text):
                    continue
            texts.append(text)
        elif kind in ("input_image", "image", "inputImage", "local_image", "localImage"):
            att = image_attachment(item.get("image_url") or item.get("url"),
                                   item.get("path") or pending_path)
            pending_path = None
            if att is not None:
                atts.append(att)
        # encrypted_content, input_audio, refusal, ... carry nothing indexable
    return texts, atts


# Codex's local compaction writes `compacted.message` as its fixed framing for the next model
# (codex-rs core/templates/compact/summary_prefix.md), a line break, then the summary the model
# wrote. Remote compaction writes an empty message (the summary is encrypted in the history).
_COMPACT_SUMMARY_PREFIX = re.compile(
    r"\A\s*Another language model started to solve this problem\b.{0,600}?"
    r"use the information in this summary to assist with your own analysis:[ \t]*(?:\r?\n)?",
    re.DOTALL,
)


def compaction_summary(message: str) -> str:
    """The summary of a `compacted` record's message, without Codex's framing for the model."""
    return _COMPACT_SUMMARY_PREFIX.sub("", message, count=1).strip()


def join_texts(texts: list[str]) -> str:
    return "\n".join(t for t in texts if t.strip()).strip()


def exit_code_from_text(text: str) -> int | None:
    match = _EXIT_CODE.search(text[:2000])
    return int(match.group(1)) if match else None


def command_text(command: Any) -> str | None:
    """A shell command for display: argv lists are joined, `bash -lc SCRIPT` shows SCRIPT."""
    if isinstance(command, str):
        return command
    argv = [a for a in as_list(command) if isinstance(a, str)]
    if not argv:
        return None
    if len(argv) == 3 and argv[1] in ("-lc", "-c") and argv[0].rsplit("/", 1)[-1] in (
        "bash", "sh", "zsh", "dash", "fish", "pwsh", "powershell"
    ):
        return argv[2]
    return shlex.join(argv)
