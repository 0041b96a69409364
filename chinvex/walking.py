"""What every adapter's file walker shares: the record of a file found under an include root,
and the test that a resolved path stays inside the root (a symlink must never lead a walk out
of the folder the user configured)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


@dataclass
class WalkedFile:
    """A file found under a root; `skip` is a SkippedSource reason when it must not be read."""

    path: Path
    rel: str
    size_bytes: int | None = None
    mtime_ns: int | None = None
    skip: str | None = None
    detail: str = ""


def within(path: Path, root: Path) -> bool:
    """Whether `path` is `root` or lies under it (both already resolved)."""
    return path == root or root in path.parents


def inside(real: str, root_real: str) -> bool:
    """Whether the resolved path `real` is the resolved root or lies under it."""
    return real == root_real or real.startswith(root_real.rstrip(os.sep) + os.sep)
