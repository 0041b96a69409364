"""Files the repository keeps generated from its own code (docs/CLI.md, the MCP handshake
recording): write one, or check that it is up to date, the same way for every generator so a
stale file fails CI with the same one-line message."""

from __future__ import annotations

import sys
from pathlib import Path


def sync(path: Path, wanted: str, *, check: bool, command: str) -> int:
    """Write `wanted` to `path` unless it is already there; with `check`, write nothing and
    return 1 when the file is missing or differs (saying which command regenerates it)."""
    current = path.read_text(encoding="utf-8") if path.exists() else None
    if current == wanted:
        return 0
    if check:
        print(f"{path} is out of date (run: {command})", file=sys.stderr)
        return 1
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(wanted, encoding="utf-8")
    print(f"wrote {path}")
    return 0
