"""One chat session file as the session object VS Code would load from it.

Flat `.json` (VS Code < 1.109): the object itself (`ISerializableChatData`, `version` 3).
`.jsonl` (>= 1.109, objectMutationLog.ts): a log replayed in order, as VS Code does:
- kind 0: the whole session (the first line; a compacted log is this one line again);
- kind 1: set the value at path `k` (property names and array indexes);
- kind 2: push the items of `v` onto the array at `k`, after truncating it to `i` when given;
- kind 3: delete the property at `k`.
A log without a kind-0 line is invalid (VS Code refuses it too); an entry whose path does not
exist is counted and skipped; a half-written last line is left for the next run.
"""

from __future__ import annotations

import io
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import ijson

from chinvex.models.sources import SourceError, UnrecognisedSource
from chinvex_adapters.kit.jsonfile import read_json
from chinvex_adapters.kit.jsonl import read_jsonl
from chinvex_adapters.kit.sniff import head_bytes

LABEL = "VS Code Copilot Chat session"
MARKERS = frozenset({"version", "responderUsername", "requesterUsername", "initialLocation",
                     "creationDate", "sessionId"})
"""Top-level keys of a chat session beside `requests` (an export lacks some of them)."""
LOG_MARKERS = frozenset({"requests", "sessionId", "creationDate", "version", "initialLocation",
                         "customTitle", "responderUsername"})


@dataclass
class Loaded:
    data: dict[str, Any]
    form: str  # json | jsonl
    entries: int = 0
    partial_tail: bool = False


# -- sniffing ------------------------------------------------------------------------------

def _head_keys(head: bytes, *, log: bool) -> tuple[Any, set[str]]:
    """The first bytes' top-level keys (of a log line: its `kind` and the keys of its `v`),
    stopping as soon as they tell: a session names its markers before its first request."""
    kind: Any = None
    keys: set[str] = set()
    level = "v" if log else ""
    try:
        for prefix, event, value in ijson.parse(io.BytesIO(head), buf_size=2048, multiple_values=True):
            if log and prefix == "kind" and event == "number":
                kind = value
            elif prefix == level and event == "map_key":
                keys.add(value)
                if _decided(kind, keys, log):
                    break
            elif prefix == "" and event == "end_map":
                break
    except (ijson.common.IncompleteJSONError, ijson.common.JSONError, ValueError, RecursionError):
        pass
    return kind, keys


def _decided(kind: Any, keys: set[str], log: bool) -> bool:
    if log:
        return kind is not None and len(keys & LOG_MARKERS) >= 2
    return "requests" in keys and bool(keys & MARKERS)


def sniff(path: Path) -> str | None:
    """None when the file is a chat session (flat JSON or mutation log), else why not."""
    head = head_bytes(path, 64 * 1024)
    stripped = head.lstrip()
    if not stripped:
        return "empty file"
    if not stripped.startswith(b"{"):
        return "not a JSON object"
    if stripped.startswith(b'{"kind"') or path.name.endswith(".jsonl"):
        kind, keys = _head_keys(head, log=True)
        if kind == 0 and _decided(kind, keys, log=True):
            return None
        if kind in (1, 2, 3):
            return "a mutation log without its initial snapshot (kind 0)"
        if path.name.endswith(".jsonl"):
            return "first line is not a chat session snapshot {kind: 0, v: {requests, ...}}"
    _, keys = _head_keys(head, log=False)
    if _decided(None, keys, log=False):
        return None
    return "no 'requests' with version/sessionId/initialLocation/responderUsername"


# -- loading -------------------------------------------------------------------------------

def load(path: Path, counts: Counter[str]) -> Loaded:
    """The session object of a `.json` or `.jsonl` file (UnrecognisedSource when it is not
    one, SourceError when it cannot be read)."""
    if path.name.endswith(".jsonl") or head_bytes(path, 16).lstrip().startswith(b'{"kind"'):
        return _replay(path, counts)
    data = read_json(path, LABEL)
    if not isinstance(data, dict) or not isinstance(data.get("requests"), list):
        raise UnrecognisedSource(f"{path}: not a {LABEL} (no 'requests' list)")
    return Loaded(data, "json")


def _replay(path: Path, counts: Counter[str]) -> Loaded:
    try:
        read = read_jsonl(path, counts)
    except OSError as exc:
        raise SourceError(f"{path}: cannot read: {exc.strerror or exc}") from None
    state: dict[str, Any] | None = None
    applied = 0
    for line in read.lines:
        entry = line.data
        kind = entry.get("kind")
        if kind == 0:
            if isinstance(entry.get("v"), dict):
                state = entry["v"]
                counts["log_snapshots"] += 1
            else:
                counts["log_entries_invalid"] += 1
            continue
        if state is None:
            counts["log_entries_before_snapshot"] += 1
            continue
        if apply(state, entry):
            applied += 1
        else:
            counts["log_entries_invalid"] += 1
    if state is None:
        raise UnrecognisedSource(f"{path}: not a {LABEL} (no initial snapshot line "
                                 f"{{\"kind\": 0, \"v\": ...}})")
    if not isinstance(state.get("requests"), list):
        raise UnrecognisedSource(f"{path}: not a {LABEL} (its snapshot has no 'requests' list)")
    return Loaded(state, "jsonl", applied, read.partial_tail)


def _step(container: Any, key: Any) -> Any:
    if isinstance(container, dict) and isinstance(key, str):
        return container.get(key)
    if isinstance(container, list) and isinstance(key, int) and not isinstance(key, bool) \
            and 0 <= key < len(container):
        return container[key]
    return None


def _at(state: dict[str, Any], path: list[Any]) -> Any:
    node: Any = state
    for key in path:
        node = _step(node, key)
        if node is None:
            return None
    return node


def apply(state: dict[str, Any], entry: dict[str, Any]) -> bool:
    """One set/push/delete entry applied to `state` in place; False when it cannot be."""
    kind, path = entry.get("kind"), entry.get("k")
    if not isinstance(path, list) or not path:
        return False
    parent, key = _at(state, path[:-1]), path[-1]
    if kind == 1:
        return _set(parent, key, entry.get("v"))
    if kind == 2:
        target = _step(parent, key)
        if target is None and isinstance(parent, dict) and isinstance(key, str):
            target = parent[key] = []
        if not isinstance(target, list):
            return False
        cut = entry.get("i")
        if isinstance(cut, int) and not isinstance(cut, bool) and cut >= 0:
            del target[cut:]
        items = entry.get("v")
        if isinstance(items, list):
            target.extend(items)
        return True
    if kind == 3:
        if isinstance(parent, dict) and isinstance(key, str):
            parent.pop(key, None)
            return True
        return _set(parent, key, None)
    return False


def _set(parent: Any, key: Any, value: Any) -> bool:
    if isinstance(parent, dict) and isinstance(key, str):
        parent[key] = value
        return True
    if isinstance(parent, list) and isinstance(key, int) and not isinstance(key, bool):
        if 0 <= key < len(parent):
            parent[key] = value
            return True
        if key == len(parent):
            parent.append(value)
            return True
    return False
