"""JSON read/write with orjson; writes are atomic (temp file in the same folder + rename) so a
crash never leaves a half-written context.json.

orjson is strict where Python is not: it refuses integers outside 64 bits (`json.loads` gives
them for any long number in a tool input), strings holding lone surrogates, non-string keys
(without OPT_NON_STR_KEYS) and nesting deeper than 254 levels. Values from user files reach
every one of those, so `jsonable` makes any value writable and `dumps`/`dumps_text` fall back to
it when orjson refuses, instead of every call site guarding on its own.
"""

from __future__ import annotations

import dataclasses
import os
import tempfile
from datetime import date, datetime, time
from enum import Enum
from pathlib import Path
from typing import Any
from uuid import UUID

import orjson

from chinvex.files.text import clean_str, is_clean

MAX_DEPTH = 200
"""Nesting kept by `jsonable` (orjson refuses more than 254 levels); deeper values are replaced
by a placeholder string."""
TOO_DEEP = "[nested too deeply]"

_INT_MIN = -(2**63)
_INT_MAX = 2**64 - 1
_NATIVE = (datetime, date, time, UUID)


def jsonable(value: Any, *, max_depth: int = MAX_DEPTH) -> Any:
    """`value` made writable by orjson (and by pydantic's JSON and SQLite): lone surrogates
    become U+FFFD, integers beyond 64 bits their decimal string, non-string keys strings,
    bytes a size note, enums their value, dataclasses dicts, other objects `str(obj)`, nesting
    beyond `max_depth` a placeholder. Copy on write: a value that needs no change is returned
    as is, so the common case allocates nothing.
    """
    return _jsonable(value, max_depth)


def _jsonable(value: Any, depth: int) -> Any:
    if value is None or value is True or value is False:
        return value
    kind = type(value)
    if kind is str:
        return clean_str(value)
    if kind is int:
        return value if _INT_MIN <= value <= _INT_MAX else str(value)
    if kind is float:
        return value  # orjson and pydantic write NaN and infinities as null
    if kind is dict:
        if depth <= 0:
            return TOO_DEEP
        changes: dict[Any, tuple[str, Any]] | None = None
        for key, item in value.items():
            # Inlined common cases: this runs for every metadata dict of every document.
            new_key = key if type(key) is str and key.isascii() else _key(key)
            if type(item) is str and item.isascii():
                new_item = item
            else:
                new_item = _jsonable(item, depth - 1)
            if new_key is not key or new_item is not item:
                if changes is None:
                    changes = {}
                changes[key] = (new_key, new_item)
        if changes is None:
            return value
        out: dict[str, Any] = {}
        for key, item in value.items():
            change = changes.get(key)
            if change is None:
                out[key] = item
            else:
                out[change[0]] = change[1]
        return out
    if kind is list or kind is tuple:
        if depth <= 0:
            return TOO_DEEP
        items = [item if type(item) is str and item.isascii() else _jsonable(item, depth - 1)
                 for item in value]
        return value if all(new is old for new, old in zip(items, value)) else items
    if isinstance(value, Enum):
        return _jsonable(value.value, depth)
    if isinstance(value, str):
        return clean_str(str(value))
    if isinstance(value, int):
        return _jsonable(int(value), depth)
    if isinstance(value, float):
        return _jsonable(float(value), depth)
    if isinstance(value, _NATIVE):
        return value
    if isinstance(value, dict):
        return _jsonable(dict(value), depth)
    if isinstance(value, (list, tuple, set, frozenset)):
        return _jsonable(list(value), depth)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return f"<{value.nbytes if isinstance(value, memoryview) else len(value)} bytes>"
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _jsonable({f.name: getattr(value, f.name) for f in dataclasses.fields(value)}, depth)
    try:
        text = str(value)
    except Exception:  # noqa: BLE001 - a hostile __str__ must not cost the document
        text = f"<{type(value).__name__}>"
    return clean_str(text)


def _key(key: Any) -> str:
    if type(key) is str:
        return key if is_clean(key) else clean_str(key)
    if key is None:
        return "null"
    if isinstance(key, bool):
        return "true" if key else "false"
    if isinstance(key, (int, float)):
        return str(key)
    try:
        text = str(key)
    except Exception:  # noqa: BLE001
        text = f"<{type(key).__name__}>"
    return clean_str(text)


def dumps(data: Any, *, pretty: bool = False) -> bytes:
    """JSON bytes of `data`; what orjson refuses is written through `jsonable`."""
    option = orjson.OPT_NON_STR_KEYS
    if pretty:
        option |= orjson.OPT_INDENT_2
    try:
        return orjson.dumps(data, option=option)
    except TypeError:  # orjson.JSONEncodeError is a TypeError
        return orjson.dumps(jsonable(data), option=option)


def dumps_text(data: Any, *, sort_keys: bool = False) -> str:
    """Compact JSON text of any value (tool inputs, metadata): never raises."""
    option = orjson.OPT_NON_STR_KEYS | (orjson.OPT_SORT_KEYS if sort_keys else 0)
    try:
        return orjson.dumps(data, option=option, default=str).decode("utf-8")
    except TypeError:
        return orjson.dumps(jsonable(data), option=option, default=str).decode("utf-8")


def atomic_write_bytes(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    try:
        dir_fd = os.open(path.parent, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dir_fd)
    except OSError:
        pass
    finally:
        os.close(dir_fd)


def atomic_write_json(path: Path, data: Any) -> None:
    atomic_write_bytes(path, dumps(data, pretty=True) + b"\n")
