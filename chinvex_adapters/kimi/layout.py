"""Where Moonshot's two Kimi agents keep sessions, and which files of a session folder are
read with which transcript.

Kimi Code (TypeScript, `$KIMI_CODE_HOME` or `~/.kimi-code`):
`sessions/wd_<name>_<hash>/session_<uuid>/` holding `state.json` and one `agents/<id>/wire.jsonl`
per agent (`main`, and a sub-agent's `agent-0`, ...).
Kimi CLI (Python, `$KIMI_SHARE_DIR` or `~/.kimi`): `sessions/<md5(work dir)>/<uuid>/` holding
`context.jsonl` (older copies `context_<n>.jsonl` after /clear or a revert), `wire.jsonl`,
`state.json` and `subagents/<id>/`; the earliest versions wrote `sessions/<md5>/<uuid>.jsonl`.

A session is one folder of several files: one of them is its candidate, with the summed size
and latest mtime of all it is read with (stat only), so a change to any of them re-reads it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from chinvex_adapters.kit.registry import Where

_ROTATED = re.compile(r"^context_(\d+)\.jsonl$")
_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$", re.I)
_WORKDIR_HASH = re.compile(r"^(?:[\w.-]+_)?[0-9a-f]{32}$")
SUBAGENT_FILES = ("context.jsonl", "wire.jsonl", "meta.json")

STORE_FILES = {
    "session_index.jsonl": "Kimi Code's session index (each session folder is read)",
    "kimi.json": "Kimi CLI's work-directory list (read for each session's work directory)",
    "config.toml": "settings, not a transcript",
    "config.json": "settings, not a transcript",
    "credentials": "credentials: never read",
    "device_id": "not a transcript",
    "mcp.json": "MCP settings, not a transcript",
}


def kimi_stores(w: Where) -> list[Path]:
    """The sessions folders of Kimi Code and of the Kimi CLI (overrides first)."""
    homes = [w.var("KIMI_CODE_HOME"), w.home / ".kimi-code", w.var("KIMI_SHARE_DIR"), w.home / ".kimi"]
    return [home / "sessions" for home in homes if home is not None]


def walk_root(root: Path) -> Path:
    """A home folder given as a root is read through its `sessions` folder only (never its
    settings, credentials or logs)."""
    try:
        if root.is_dir() and (root / "sessions").is_dir() and root.name != "sessions":
            return root / "sessions"
    except OSError:
        pass
    return root


@dataclass
class Session:
    """One session folder's files: (size, mtime) of each file read with the transcript."""

    folder: Path
    kind: str = ""  # "code" | "cli" | "cli_legacy"
    read: dict[Path, tuple[int, int]] = field(default_factory=dict)
    transcripts: list[Path] = field(default_factory=list)
    side: dict[Path, str] = field(default_factory=dict)

    @property
    def size_bytes(self) -> int:
        return sum(size for size, _ in self.read.values())

    @property
    def mtime_ns(self) -> int:
        return max((mtime for _, mtime in self.read.values()), default=0)


def _last(parts: tuple[str, ...], name: str) -> int:
    for i in range(len(parts) - 2, -1, -1):
        if parts[i] == name:
            return i
    return -1


def role_of(path: Path, rel: tuple[str, ...] | None = None) -> tuple[Path, str, str]:
    """(session folder, role, detail) of a file, from its path relative to the walked root
    (`rel`; its last parts when not given). Roles: code_wire (an agent's wire.jsonl, detail =
    agent id), cli_context, cli_rotated, cli_wire, cli_sub (detail = agent id), state,
    cli_legacy, side and store (detail = why it is not read)."""
    parts = rel if rel is not None else path.parts[-4:]
    n = len(parts)
    i = _last(parts, "agents")
    if i > 0 and i == n - 3 and path.name == "wire.jsonl":
        return path.parents[2], "code_wire", parts[i + 1]
    if i > 0 and i < n - 2:
        return path.parents[n - i - 1], "side", "a file an agent wrote (plans, notes), not a transcript"
    j = _last(parts, "subagents")
    if j > 0 and j == n - 3 and path.name in SUBAGENT_FILES:
        return path.parents[2], "cli_sub", parts[j + 1]
    if j > 0 and j < n - 2:
        return path.parents[n - j - 1], "side", "a sub-agent's prompt or output (its context is read)"
    name = path.name
    if name in STORE_FILES:
        return path.parent, "store", STORE_FILES[name]
    if name == "context.jsonl":
        return path.parent, "cli_context", ""
    if _ROTATED.match(name):
        return path.parent, "cli_rotated", ""
    if name == "wire.jsonl":
        return path.parent, "cli_wire", ""
    if name == "state.json":
        return path.parent, "state", ""
    if name.endswith(".jsonl") and _UUID.match(name[:-6]) and _WORKDIR_HASH.match(path.parent.name):
        return path, "cli_legacy", ""
    return path.parent, "side", "not a Kimi session file"


def rotation(path: Path) -> int:
    """The number of a rotated context file (0 for the current one)."""
    match = _ROTATED.match(path.name)
    return int(match.group(1)) if match else 0


def context_files(folder: Path) -> list[Path]:
    """A Kimi CLI session's context files, oldest first: the rotated copies in order, then the
    current `context.jsonl`."""
    try:
        rotated = [p for p in folder.iterdir() if _ROTATED.match(p.name) and p.is_file()]
    except OSError:
        rotated = []
    current = folder / "context.jsonl"
    return sorted(rotated, key=rotation) + ([current] if current.is_file() else [])


def session_id_of(folder: Path) -> str:
    """A Kimi Code session folder's id: its name without `session_` (or `ses_`)."""
    name = folder.name
    for prefix in ("session_", "ses_"):
        if name.startswith(prefix) and len(name) > len(prefix):
            return name[len(prefix):]
    return name
