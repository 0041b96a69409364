"""Where chinvex keeps its data (DESIGN.md §3), resolved from the environment on every call
so that tests and users can point one process at several homes."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path


def _env_path(name: str) -> Path | None:
    value = os.environ.get(name, "").strip()
    return Path(value).expanduser().absolute() if value else None


def chinvex_home() -> Path:
    home = _env_path("CHINVEX_HOME")
    if home is not None:
        return home
    from platformdirs import user_data_path

    return user_data_path("chinvex", appauthor=False)


@dataclass(frozen=True)
class Roots:
    contexts: Path
    indexes: Path

    def context_dir(self, name: str) -> Path:
        return self.contexts / name

    def context_file(self, name: str) -> Path:
        return self.contexts / name / "context.json"

    def index_dir(self, name: str) -> Path:
        return self.indexes / name


def roots() -> Roots:
    home = chinvex_home()
    return Roots(
        contexts=_env_path("CHINVEX_CONTEXTS_ROOT") or home / "contexts",
        indexes=_env_path("CHINVEX_INDEXES_ROOT") or home / "indexes",
    )


def absolute(path: str | os.PathLike[str]) -> str:
    """Absolute, user-expanded, but not symlink-resolved: stored as the user would recognise it."""
    return os.path.abspath(os.path.expanduser(os.fspath(path)))


_SEPARATORS = re.compile(r"[\\/]+")
_DRIVE = re.compile(r"^[A-Za-z]:[\\/]")


def recorded_parts(path: str) -> list[str]:
    """The components of a path as another machine recorded it (a session's cwd, an edit's file),
    POSIX or Windows alike: compared as strings, never touched on this disk."""
    return [p for p in _SEPARATORS.split(path) if p and p != "."]


def recorded_absolute(path: str) -> bool:
    """Whether a recorded path is absolute on its own system (`/x`, `\\\\server\\x`, `C:\\x`, `d:/x`)."""
    return path.startswith(("/", "\\")) or bool(_DRIVE.match(path))
