"""The file a redacted source uri names, found again on disk without storing its real name.

A file or folder whose name holds a secret is indexed under its redacted uri
(`/notes/prod-[REDACTED:github_token@1a2b3c4d].md`, see `redact_uri`), so the secret never
reaches the index; but a check that stats that uri (doctor's stale sources, a result's
freshness) would find nothing there and call the file deleted. `real_path` lists the folder of
each redacted segment and takes the entry whose own redaction gives that segment back: the
marker's digest tells two such names apart.
"""

from __future__ import annotations

import os
import re

from chinvex.redaction.text import redact_uri

_URI_MARKER = re.compile(r"\[REDACTED:[a-z_]{1,40}@[0-9a-f]{8}\]")
_MAX_ENTRIES = 100_000
"""A folder larger than this is not searched (the uri is returned as it is)."""


def _pattern(segment: str) -> re.Pattern[str]:
    """The names a redacted segment may stand for: its text as written, anything for a marker."""
    parts = _URI_MARKER.split(segment)
    return re.compile(".+?".join(map(re.escape, parts)), re.DOTALL)


def _entry(folder: str, redacted_prefix: str, segment: str) -> str | None:
    try:
        with os.scandir(folder or "/") as entries:
            names = [e.name for i, e in enumerate(entries) if i < _MAX_ENTRIES]
    except OSError:
        return None
    shape = _pattern(segment)
    for name in names:
        if shape.fullmatch(name) and redact_uri(f"{folder}/{name}") == redacted_prefix:
            return name
    return None


def real_path(uri: str) -> str:
    """The path on disk of a file indexed under the redacted `uri`, or `uri` itself when it
    holds no uri marker or no entry matches (then the file is gone)."""
    if "[REDACTED:" not in uri:
        return uri
    segments = uri.split("/")
    real = [segments[0]]
    for i, segment in enumerate(segments[1:], start=1):
        if _URI_MARKER.search(segment) is None:
            real.append(segment)
            continue
        name = _entry("/".join(real), "/".join(segments[: i + 1]), segment)
        if name is None:
            return uri
        real.append(name)
    return "/".join(real)
