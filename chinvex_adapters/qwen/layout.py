"""Where Qwen Code keeps its chats and which files beside them are not chats.

Runtime folder: `$QWEN_RUNTIME_DIR`, else `$QWEN_HOME`, else `~/.qwen`. Chats:
`<runtime>/projects/<cwd with every non-alphanumeric character as '-'>/chats/<session id>.jsonl`
(archived ones in `chats/archive/`). The folder name is lossy: the project path comes from the
records' `cwd`. The rest of the runtime folder (tmp, debug logs, todos, settings, credentials)
is never walked.
"""

from __future__ import annotations

from pathlib import Path

from chinvex_adapters.kit.registry import Where
from chinvex_adapters.kit.walk import WalkEntry


def qwen_runtimes(w: Where) -> list[Path]:
    """Every folder Qwen Code may have written its runtime data to."""
    return [p for p in (w.var("QWEN_RUNTIME_DIR"), w.var("QWEN_HOME"), w.home / ".qwen") if p is not None]


def walk_root(root: Path) -> Path | None:
    """The folder to walk: a runtime folder through its `projects` folder only (None when it
    has none yet); any other root as it is."""
    try:
        if (root / "projects").is_dir():
            return root / "projects"
        if root.name == ".qwen" or (root / "settings.json").is_file() or (root / "tmp").is_dir():
            return None
    except OSError:
        pass
    return root


def chat_verdict(rel: str, entry: WalkEntry) -> bool | str:
    """True for a chat file (`<session id>.jsonl`), else why the file is not one."""
    name = entry.path.name
    if name.endswith(".runtime.json"):
        return "Qwen Code's process sidecar (pid, version), not a transcript"
    if name in ("oauth_creds.json", ".env", "settings.json"):
        return "settings or credentials: never read"
    if not name.endswith(".jsonl"):
        return "not a Qwen Code chat (chats are chats/<session id>.jsonl)"
    return True


def stem(path: Path) -> str:
    return path.name[: -len(".jsonl")] if path.name.endswith(".jsonl") else path.stem
