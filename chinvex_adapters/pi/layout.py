"""Where pi and OpenClaw keep sessions, which files of a store are transcripts, and which of
the two tools wrote a file (by the folders on its path).

pi: `<agent dir>/sessions/--<cwd>--/<timestamp>_<id>.jsonl`, the agent dir being
`$PI_CODING_AGENT_DIR` or `~/.pi/agent`. OpenClaw (formerly Clawdbot, Moltbot) embeds pi and
writes the same transcripts under `<state dir>/agents/<agent id>/sessions/<session id>.jsonl`,
the state dir being `$OPENCLAW_STATE_DIR` or `~/.openclaw` (older installs: `~/.clawdbot`,
`~/.moltbot`); beside them lie its store index, locks, archives and backups, never read.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from chinvex_adapters.kit.registry import Where

OPENCLAW_HOMES = (".openclaw", ".clawdbot", ".moltbot", ".moldbot", ".kimi_openclaw")
"""State folders of OpenClaw and its former names (and Kimi's bundled build)."""
_OPENCLAW_DIR = re.compile(r"^\.(?:openclaw|clawdbot|moltbot|moldbot|kimi_openclaw)(?:[-_].+)?$")

NOT_TRANSCRIPTS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\.jsonl\.lock$"), "OpenClaw's writer lock, not a transcript"),
    (re.compile(r"\.jsonl\.reset\.[^/]*$"),
     "an OpenClaw transcript archived by /new or /reset (not read: only live sessions are)"),
    (re.compile(r"\.jsonl\.deleted\.[^/]*$"),
     "an OpenClaw transcript archived when its session was deleted (not read)"),
    (re.compile(r"\.jsonl\.(?:bak-[^/]*|full\.bak|bak)$"), "a backup copy of a transcript (a duplicate)"),
    (re.compile(r"\.trajectory\.jsonl$"), "OpenClaw's runtime trajectory log, not the transcript"),
    (re.compile(r"\.trajectory-path\.json$"), "a pointer to a trajectory log, not a transcript"),
    (re.compile(r"(?:^|/)sessions\.json$"),
     "OpenClaw's session store (read for titles with each transcript)"),
    (re.compile(r"(?:^|/)(?:auth|auth-profiles|credentials)\.json$"), "credentials: never read"),
    (re.compile(r"\.tmp$|\.tmp\.[^/]*$"), "a temporary file"),
)


def pi_stores(w: Where) -> list[Path]:
    """pi's sessions folder: `$PI_CODING_AGENT_DIR/sessions` and `~/.pi/agent/sessions`."""
    return [base / "sessions" for base in (w.var("PI_CODING_AGENT_DIR"), w.home / ".pi" / "agent")
            if base is not None]


def openclaw_states(w: Where) -> list[Path]:
    """OpenClaw's state folders: the overrides, then the current and former defaults."""
    found = [w.var("OPENCLAW_STATE_DIR"), w.var("CLAWDBOT_STATE_DIR")]
    found += [w.home / name for name in OPENCLAW_HOMES]
    return [p for p in found if p is not None]


def openclaw_stores(w: Where) -> list[Path]:
    """Each agent's `agents/<agent id>/sessions` folder in every OpenClaw state folder."""
    return [folder for state in openclaw_states(w) for folder in session_folders(state)]


def session_folders(state: Path) -> list[Path]:
    """The `agents/*/sessions` folders of an OpenClaw state folder (sorted)."""
    agents = state / "agents"
    try:
        if not agents.is_dir():
            return []
        return sorted(p / "sessions" for p in agents.iterdir() if (p / "sessions").is_dir())
    except OSError:
        return []


def walk_roots(root: Path) -> Iterator[Path]:
    """The folders to walk for a root a user or a store gives: an OpenClaw state folder is read
    through its agents' session folders only (never its workspace or credentials), a pi agent
    folder through its `sessions`; any other root as it is."""
    try:
        if root.is_dir() and (root / "agents").is_dir():
            folders = session_folders(root)
            if folders:
                yield from folders
                return
        if (root / "sessions").is_dir():
            yield root / "sessions"
            return
    except OSError:
        pass
    yield root


def not_transcript(rel: str) -> str | None:
    """Why a file beside the transcripts is not one (None when it may be one)."""
    for pattern, why in NOT_TRANSCRIPTS:
        if pattern.search(rel):
            return why
    if not rel.endswith(".jsonl"):
        return "not a pi or OpenClaw session file (sessions are .jsonl)"
    return None


def openclaw_path(path: Path) -> bool:
    """Whether the file lies in an OpenClaw store: under a state folder of OpenClaw's (or a
    former name's, or a profile's `.openclaw-<name>`), or at `agents/<agent id>/sessions/`."""
    parts = path.parts
    if len(parts) >= 4 and parts[-2] == "sessions" and parts[-4] == "agents":
        return True
    return any(_OPENCLAW_DIR.match(part) for part in parts[:-1])


_PI_NAME = re.compile(r"^\d{4}-\d{2}-\d{2}T[\d-]+Z_(.+)$")


def stem_id(path: Path) -> str:
    """The session id a file name carries: pi's `<timestamp>_<id>.jsonl`, OpenClaw's
    `<id>.jsonl` (or `<id>-topic-<thread>.jsonl`)."""
    stem = path.name[: -len(".jsonl")] if path.name.endswith(".jsonl") else path.stem
    match = _PI_NAME.match(stem)
    return match.group(1) if match else stem
