"""What the current and the legacy Copilot CLI formats share: the wrappers the CLI puts
around a prompt for the model, tool arguments that may arrive as JSON text, attachments as
references, and the side file `workspace.yaml`."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any

import orjson

from chinvex.models import Attachment
from chinvex_adapters.kit.text import as_str, clean_text

_WRAPPERS = re.compile(
    r"<(current_datetime|reminder|system_reminder|system_notification|sql_tables)>.*?</\1>\s*",
    re.S)
MAX_WORKSPACE_BYTES = 256 * 1024
WORKSPACE_KEYS = ("id", "cwd", "git_root", "repository", "branch", "host_type", "client_name",
                  "name", "summary", "user_named", "created_at", "updated_at")


def strip_wrappers(text: str) -> str:
    """A prompt without the blocks the CLI adds for the model (`<current_datetime>`,
    `<reminder>`...): what remains is what the user typed or the runtime's own nudge."""
    if "<" not in text:
        return text.strip()
    return _WRAPPERS.sub("", text).strip()


def arguments(value: Any) -> Any:
    """Tool arguments as an object when they are JSON text of one (some versions and models
    send a string); raw text (a `custom` tool's patch) is kept as it is."""
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("{"):
            try:
                parsed = orjson.loads(text)
            except orjson.JSONDecodeError:
                return value
            return parsed
    return value


def attachments(items: Any, counts: Counter[str]) -> list[Attachment]:
    """`user.message.attachments` as references: files, folders, selections, GitHub items;
    a blob's bytes are never kept, only its name and type."""
    found: list[Attachment] = []
    if not isinstance(items, list):
        return found
    for item in items[:100]:
        if not isinstance(item, dict):
            continue
        kind = as_str(item.get("type")) or "file"
        path = as_str(item.get("path")) or as_str(item.get("filePath"))
        name = as_str(item.get("displayName")) or as_str(item.get("name"))
        uri = as_str(item.get("url")) or as_str(item.get("uri"))
        if kind == "blob":
            kind = "image" if (as_str(item.get("mimeType")) or "").startswith("image/") else "blob"
            counts["attachment_bytes_dropped"] += 1
        if not (path or name or uri):
            counts["attachments_without_reference"] += 1
            continue
        extra: dict[str, Any] = {}
        if isinstance(item.get("lineRange"), dict):
            extra["line_range"] = {k: v for k, v in item["lineRange"].items() if isinstance(v, int)}
        found.append(Attachment(kind=clean_text(kind), name=name or (Path(path).name if path else None),
                                path=path, uri=uri, **extra))
    return found


def read_workspace(path: Path, counts: Counter[str]) -> dict[str, Any]:
    """The flat facts of a session's `workspace.yaml` (folder, title, repository), {} when
    absent or unreadable (it is a side file: the session reads without it)."""
    try:
        if path.stat().st_size > MAX_WORKSPACE_BYTES:
            counts["workspace_yaml_too_large"] += 1
            return {}
        raw = path.read_text("utf-8", errors="replace")
    except OSError:
        return {}
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        data = yaml.load(raw, Loader=loader)  # noqa: S506 - a safe loader
    except yaml.YAMLError:
        counts["workspace_yaml_invalid"] += 1
        return {}
    if not isinstance(data, dict):
        counts["workspace_yaml_invalid"] += 1
        return {}
    out: dict[str, Any] = {}
    for key in WORKSPACE_KEYS:
        value = data.get(key)
        if isinstance(value, bool):
            out[key] = value
        elif isinstance(value, str | int | float) and str(value).strip():
            out[key] = clean_text(str(value)).strip()
        elif value is not None and hasattr(value, "isoformat"):
            out[key] = value.isoformat()
    return out
