"""Whether a result's source is still as it was indexed: one stat of the file, compared with its
recorded fingerprint, so agents never present deleted or changed code as current. Used by search
results and by the filter language's `doc.stale`."""

from __future__ import annotations

import os
import re
import stat
from typing import Any

import orjson

from chinvex.models import Freshness


def freshness(row: dict[str, Any]) -> Freshness:
    """Cheap stat check of the result's source, so agents never present deleted code as current."""
    origin = row["origin_uri"] or ""
    indexed_at = row["indexed_at"]
    if not origin.startswith("/") and not re.match(r"^[A-Za-z]:[\\/]", origin):
        return Freshness(indexed_at=indexed_at)
    path = origin.split("#", 1)[0]
    if "[REDACTED:" in path:  # a name holding a secret is stored redacted
        # imported here: the redaction package compiles its detectors when imported, which a
        # search over ordinary paths (nearly every search) does not need
        from chinvex.redaction.paths import real_path

        path = real_path(path)
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        # NotADirectoryError: a folder on the way to the file is now something else (a file),
        # so the file itself is gone, which is not the same as being there but unreadable.
        return Freshness(indexed_at=indexed_at, stale=True, reason="deleted")
    except OSError:
        return Freshness(indexed_at=indexed_at, stale=True, reason="unreadable")
    if stat.S_ISDIR(st.st_mode):
        # The indexed file was replaced by a folder of the same name: the file is gone.
        return Freshness(indexed_at=indexed_at, stale=True, reason="deleted")
    if row["size_bytes"] is not None and st.st_size != row["size_bytes"]:
        return Freshness(indexed_at=indexed_at, stale=True, reason="modified")
    state = orjson.loads(row["state_json"]) if row.get("state_json") else {}
    mtime_ns = state.get("_mtime_ns") if isinstance(state, dict) else None
    if mtime_ns is not None and st.st_mtime_ns != mtime_ns:
        return Freshness(indexed_at=indexed_at, stale=True, reason="modified")
    if mtime_ns is None and row["mtime_unix"] is not None and int(st.st_mtime) != row["mtime_unix"]:
        return Freshness(indexed_at=indexed_at, stale=True, reason="modified")
    return Freshness(indexed_at=indexed_at)
