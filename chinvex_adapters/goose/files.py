"""goose sessions kept as files: `goose session export --format json` output (one `Session`
object with its `conversation`), and the `<data>/sessions/<id>.jsonl` files of goose before
the SQLite store (first line the session's metadata, then one `Message` per line).

Both are told apart from other agents' files by goose's own field names: snake_case session
fields (`working_dir`, `extension_data`, `accumulated_*`) and messages whose only keys are
`id/role/created/content/metadata`, `created` in whole seconds.
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from chinvex.models import ConversationDoc
from chinvex.models.sources import ParseReport, SourceError, UnrecognisedSource
from chinvex_adapters.kit.jsonfile import read_json
from chinvex_adapters.kit.jsonl import partial_tail_warning, read_jsonl
from chinvex_adapters.kit.sniff import first_objects, head_bytes, json_shape
from chinvex_adapters.kit.text import as_str

from .session import session_doc

EXPORT_LABEL = "goose session export"
LEGACY_LABEL = "goose session file"
SESSION_KEYS = frozenset({"extension_data", "session_type", "user_set_name", "accumulated_total_tokens",
                          "message_count", "conversation", "schedule_id", "goose_mode", "model_config"})
"""Fields of goose's Session beside `id` and `working_dir` (one of them must be there)."""
METADATA_KEYS = frozenset({"message_count", "total_tokens", "accumulated_total_tokens", "schedule_id"})
MESSAGE_KEYS = frozenset({"id", "role", "created", "content", "metadata"})
MAX_LEGACY_BYTES = 512 * 1024 * 1024


def is_message(obj: Any) -> bool:
    """A goose Message: nothing but its own keys, a role, whole-second `created`, a block list."""
    return (isinstance(obj, dict) and obj.get("role") in ("user", "assistant")
            and isinstance(obj.get("created"), int) and not isinstance(obj.get("created"), bool)
            and isinstance(obj.get("content"), list) and set(obj) <= MESSAGE_KEYS)


def is_metadata_line(obj: Any) -> bool:
    """The first line of a legacy session file (goose's SessionMetadata)."""
    return (isinstance(obj, dict) and "role" not in obj and "content" not in obj
            and ("working_dir" in obj or "description" in obj) and bool(METADATA_KEYS & set(obj)))


def recognises_export(path: Path) -> bool:
    shape = json_shape(head_bytes(path))
    keys = set(shape.keys)
    return shape.kind == "object" and {"id", "working_dir"} <= keys and bool(SESSION_KEYS & keys) \
        and ("name" in keys or "description" in keys)


def recognises_legacy(path: Path) -> bool:
    objects = first_objects(path, 4)
    if not objects:
        return False
    if is_metadata_line(objects[0]):
        return len(objects) == 1 or is_message(objects[1])
    return all(is_message(o) for o in objects[:3])


def _mtime(path: Path) -> datetime | None:
    try:
        return datetime.fromtimestamp(path.stat().st_mtime, timezone.utc)
    except OSError:
        return None


def read_export(path: Path, report: ParseReport) -> ConversationDoc | None:
    data = read_json(path, EXPORT_LABEL)
    if not isinstance(data, dict):
        raise UnrecognisedSource(f"{path}: not a {EXPORT_LABEL} (a JSON {type(data).__name__}, not an object)")
    if not ({"id", "working_dir"} <= set(data) and SESSION_KEYS & set(data)):
        raise UnrecognisedSource(f"{path}: not a {EXPORT_LABEL} (no goose session fields: id, working_dir)")
    conv = data.get("conversation")
    if isinstance(conv, dict):
        conv = conv.get("messages")
    if conv is not None and not isinstance(conv, list):
        raise UnrecognisedSource(f"{path}: not a {EXPORT_LABEL} (its conversation is not a list of messages)")
    thread_id = as_str(data.get("id")) or path.stem
    return session_doc(data, conv or [], thread_id=thread_id, source_uri=str(path),
                       store="session export", report=report, fallback_ts=_mtime(path))


def read_legacy(path: Path, report: ParseReport) -> ConversationDoc | None:
    """A legacy session file; a half-written last line is left for the next run."""
    try:
        if path.stat().st_size > MAX_LEGACY_BYTES:
            raise UnrecognisedSource(f"{path}: not read as a {LEGACY_LABEL} (over {MAX_LEGACY_BYTES:,} bytes)")
        read = read_jsonl(path, report.counts)
    except OSError as exc:
        raise SourceError(f"{path}: cannot read: {exc.strerror or exc}") from None
    lines = [line.data for line in read.lines]
    if not lines:
        if read.invalid or read.not_objects:
            raise UnrecognisedSource(f"{path}: not a {LEGACY_LABEL} (no JSON object lines)")
        report.warnings.append(f"{path}: empty session file (nothing written yet)")
        return None
    meta = lines[0] if is_metadata_line(lines[0]) else {}
    messages = lines[1:] if meta else lines
    if not meta and not any(is_message(m) for m in messages[:8]):
        raise UnrecognisedSource(f"{path}: not a {LEGACY_LABEL} (neither session metadata nor goose messages)")
    if read.partial_tail:
        report.warnings.append(partial_tail_warning(path))
    stem = path.name[: -len(".jsonl")] if path.name.endswith(".jsonl") else path.stem
    thread_id = as_str(meta.get("id")) or stem
    return session_doc(meta, messages, thread_id=thread_id, source_uri=str(path), store="legacy jsonl",
                       report=report, fallback_ts=_mtime(path))
