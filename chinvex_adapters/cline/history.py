"""What a task's side files and its store's index say about it: the working directory the task
started in, its title, its parent and child tasks (Roo's sub-tasks), the tool's version (Cline
records it per task), the files it read and edited.

Indexes (`state/taskHistory.json` of Cline, `tasks/_index.json` of Roo, `task_history.json` of
Kilo) hold every task of a store: each is read once per change (size and mtime), not once per
task.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from chinvex.models.sources import SourceError
from chinvex_adapters.kit.jsonfile import read_json

MAX_INDEX_BYTES = 64 * 1024 * 1024
MAX_SIDE_BYTES = 8 * 1024 * 1024
HISTORY_KEYS = ("parentTaskId", "rootTaskId", "childIds", "status", "mode", "number", "isFavorited",
                "totalCost", "tokensIn", "tokensOut", "cacheReads", "cacheWrites", "modelId",
                "apiConfigName", "ulid", "conversationHistoryDeletedRange")


def _read(path: Path, limit: int) -> Any:
    try:
        if not path.is_file() or path.stat().st_size > limit:
            return None
        return read_json(path, "task index")
    except (SourceError, OSError):
        return None


class HistoryIndex:
    """Each store index as {task id: entry}, cached by the index file's size and mtime."""

    def __init__(self) -> None:
        self._cache: dict[Path, tuple[tuple[int, int], dict[str, dict[str, Any]]]] = {}

    def entry(self, folder: Path, task_id: str) -> dict[str, Any] | None:
        tasks = folder.parent
        for index in (tasks / "_index.json", tasks.parent / "state" / "taskHistory.json",
                      tasks.parent / "task_history.json"):
            found = self._entries(index).get(task_id)
            if found is not None:
                return found
        return None

    def _entries(self, path: Path) -> dict[str, dict[str, Any]]:
        try:
            st = path.stat()
        except OSError:
            return {}
        key = (st.st_size, st.st_mtime_ns)
        cached = self._cache.get(path)
        if cached is not None and cached[0] == key:
            return cached[1]
        data = _read(path, MAX_INDEX_BYTES)
        items = data.get("entries") if isinstance(data, dict) else data
        entries = {str(e["id"]): e for e in items if isinstance(e, dict) and "id" in e} \
            if isinstance(items, list) else {}
        self._cache[path] = (key, entries)
        return entries


def task_facts(folder: Path, task_id: str, index: HistoryIndex, counts: Counter[str]) -> dict[str, Any]:
    """Metadata from the task's history entry and task_metadata.json (absent files: nothing)."""
    facts: dict[str, Any] = {}
    item = _read(folder / "history_item.json", MAX_SIDE_BYTES)
    if not isinstance(item, dict):
        item = index.entry(folder, task_id)
    if isinstance(item, dict):
        counts["history_entries_read"] += 1
        cwd = item.get("cwdOnTaskInitialization") or item.get("workspace")
        if isinstance(cwd, str) and cwd.strip():
            facts["cwd"] = cwd
        if isinstance(item.get("task"), str) and item["task"].strip():
            facts["title"] = item["task"]
        facts.update({k: item[k] for k in HISTORY_KEYS if item.get(k) not in (None, "", [])})
    meta = _read(folder / "task_metadata.json", MAX_SIDE_BYTES)
    if isinstance(meta, dict):
        facts.update(_task_metadata(meta))
    return facts


def _task_metadata(meta: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    files = meta.get("files_in_context")
    if isinstance(files, list):
        edited = [f["path"] for f in files if isinstance(f, dict) and isinstance(f.get("path"), str)
                  and str(f.get("record_source", "")).endswith("_edited")
                  and f.get("record_source") != "user_edited"]
        read = [f["path"] for f in files if isinstance(f, dict) and isinstance(f.get("path"), str)]
        if read:
            out["files_in_context"] = list(dict.fromkeys(read))[:200]
        if edited:
            out["files_edited_by_agent"] = list(dict.fromkeys(edited))[:200]
    environments = meta.get("environment_history")
    if isinstance(environments, list) and environments and isinstance(environments[-1], dict):
        last = environments[-1]
        if isinstance(last.get("cline_version"), str):
            out["version"] = last["cline_version"]
        host = " ".join(str(last[k]) for k in ("host_name", "host_version") if last.get(k))
        if host:
            out["host"] = host
        system = " ".join(str(last[k]) for k in ("os_name", "os_version", "os_arch") if last.get(k))
        if system:
            out["os"] = system
    usage = meta.get("model_usage")
    if isinstance(usage, list):
        models = [u["model_id"] for u in usage if isinstance(u, dict) and isinstance(u.get("model_id"), str)]
        if models:
            out["models_used"] = list(dict.fromkeys(models))[:20]
    return out
