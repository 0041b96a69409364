"""JSON read/write with orjson; writes are atomic (temp file in the same folder + rename) so a
crash never leaves a half-written context.json."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import orjson


def dumps(data: Any, *, pretty: bool = False) -> bytes:
    option = orjson.OPT_NON_STR_KEYS
    if pretty:
        option |= orjson.OPT_INDENT_2
    return orjson.dumps(data, option=option)


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
