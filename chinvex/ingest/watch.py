"""`chinvex watch`: keep contexts current by re-running the incremental ingest when their
sources change.

The ingest is already incremental (stat fingerprints, content hashes, append-aware Codex and
Claude Code session readers that parse only the lines added since the last run), so the watcher
needs no change list of its own: a file event only says *which contexts* to ingest now. That
keeps one code path for what gets indexed, and a missed or coalesced event costs nothing but a
scan: the next run sees every difference anyway.

- One ingest at a time per context: the run takes the context's writer lock and waits for a
  manual `chinvex ingest` holding it, as `ingest --wait` does.
- Events inside an index folder (a context whose index lives under one of its own source roots)
  and under folders that are never sources (`.git`, `node_modules`, caches, ...) are ignored, so
  an ingest's own writes never trigger the next one.
- Memory stays flat over days: no per-event history is kept, and the embedder is loaded once and
  reused by every run.
- Stopping (Ctrl-C, SIGTERM) lets the running ingest finish its batch and exits; a second Ctrl-C
  stops at once, which the ingest's write journal makes safe too.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from chinvex.models import ContextConfig
from chinvex.models.context import SESSIONS_KEY
from chinvex.timeutil import now_iso
from chinvex.files.walk import within

DEFAULT_DEBOUNCE_MS = 400
IGNORED_DIRS = frozenset({".git", ".hg", ".svn", "__pycache__", "node_modules", ".venv", ".tox",
                          ".mypy_cache", ".pytest_cache", ".hypothesis", ".ruff_cache", ".idea"})
SAMPLE_PATHS = 5


STORE_FILES = re.compile(r"\.(sqlite3?|db)(-wal|-shm|-journal)?$|\.lock$|~$|\.sw.$", re.IGNORECASE)
"""Never a source, but rewritten by the programs whose folders are watched (Codex keeps its own
SQLite databases in CODEX_HOME and writes them on every app-server start): reacting to them
would make every ingest trigger the next."""

SESSION_SUFFIXES = {
    "codex_session_roots": (".jsonl", ".jsonl.zst"),
    "claude_session_roots": (".jsonl", ".md", ".meta.json"),
    "sessions:cx_appserver": (".jsonl", ".jsonl.zst"),
    "sessions:claude_code": (".jsonl", ".md", ".meta.json"),
    "sessions:cline": (".json",),
}
"""Session roots hold much besides sessions (logs, caches, databases): only these files are
read from them (rollouts; transcripts, memory files and sub-agent metadata)."""

DATABASE_STORES = re.compile(r"\.(sqlite3?|db|vscdb)(-wal)?$", re.IGNORECASE)
"""Agents that keep sessions in SQLite (Cursor, OpenCode, Goose, ...) change the database or its
write-ahead log; a reader only touches `-shm`, so reacting to these cannot loop."""


def source_roots(config: ContextConfig) -> list[tuple[Path, str]]:
    """Every folder or file a context reads with the `includes` key that lists it (built-in and
    adapter keys alike), resolved; duplicates removed, order kept. Agents' session stores
    (`includes.sessions`, "auto" resolved now) are keyed `sessions:<adapter>`."""
    roots: dict[tuple[Path, str], None] = {}
    for key, values in config.includes.entries():
        if not isinstance(values, list):
            continue
        if key == SESSIONS_KEY:
            from chinvex.errors import UsageError
            from chinvex.ingest.session_stores import resolve

            for value in values:
                try:
                    found = resolve([str(value)])
                except UsageError:
                    continue
                for adapter, root in found:
                    roots[(Path(root).expanduser().resolve(), f"sessions:{adapter}")] = None
            continue
        for value in values:
            if isinstance(value, str) and value.strip():
                roots[(Path(value).expanduser().resolve(), key)] = None
    return list(roots)


@dataclass(frozen=True)
class Target:
    config: ContextConfig
    roots: tuple[tuple[Path, str], ...]
    """(root, includes key)."""
    index_dirs: tuple[Path, ...]


def target_of(config: ContextConfig) -> Target:
    index = (Path(config.index.sqlite_path).expanduser().resolve().parent,
             Path(config.index.chroma_dir).expanduser().resolve())
    return Target(config, tuple(source_roots(config)), index)


def may_be_source(path: Path, key: str) -> bool:
    """Whether a change to `path` under a root of kind `key` can change what is indexed (pure)."""
    if any(part in IGNORED_DIRS for part in path.parts):
        return False
    if STORE_FILES.search(path.name):
        return key.startswith("sessions:") and key not in SESSION_SUFFIXES \
            and bool(DATABASE_STORES.search(path.name))
    suffixes = SESSION_SUFFIXES.get(key)
    return suffixes is None or path.name.endswith(suffixes)


def owners(paths: Iterable[str], targets: Sequence[Target]) -> dict[str, list[str]]:
    """Context name -> the changed paths that belong to it (pure). A path belongs to a context
    when it lies under one of its roots, may be a source there (`may_be_source`), and is outside
    every index folder. A deleted folder is reported as one path: it counts under any root."""
    found: dict[str, list[str]] = {}
    all_index_dirs = [d for t in targets for d in t.index_dirs]
    for raw in paths:
        path = Path(raw)
        if any(within(path, d) for d in all_index_dirs):
            continue
        for t in targets:
            if any(within(path, root) and may_be_source(path, key) for root, key in t.roots):
                found.setdefault(t.config.name, []).append(raw)
    return found


def run_event(context: str, trigger: str, changed: Sequence[str], summary: Any, duration: float) -> dict[str, Any]:
    """The `--json` line for one ingest run (`sessions_resumed`: growing session files read from
    where the last run stopped, only their new turns parsed)."""
    sources = summary.sources
    return {"event": "ingest", "at": now_iso(), "context": context, "trigger": trigger,
            "changed_paths": len(changed), "sample": sorted(changed)[:SAMPLE_PATHS],
            "status": summary.status,
            "sources": {"indexed": sources.indexed, "removed": sources.removed,
                        "refreshed": sources.refreshed, "unchanged": sources.unchanged,
                        "errors": sources.errors},
            "chunks": {"written": summary.chunks.get("written", 0), "deleted": summary.chunks.get("deleted", 0),
                       "embedded": summary.chunks.get("embedded", 0)},
            "sessions_resumed": sum(counts.get("sessions_resumed", 0) for counts in summary.adapter_counts.values()),
            "errors": [e.message for e in summary.errors][:SAMPLE_PATHS],
            "duration_s": round(duration, 3)}


class Watcher:
    """Watches the roots of `configs` and ingests each context whose sources changed."""

    def __init__(self, configs: Sequence[ContextConfig], *, emit: Callable[[dict[str, Any]], None],
                 debounce_ms: int = DEFAULT_DEBOUNCE_MS, stop: threading.Event | None = None,
                 catch_up: bool = True):
        self.targets = [target_of(c) for c in configs]
        self.emit = emit
        self.debounce_ms = debounce_ms
        self.stop = stop or threading.Event()
        self.catch_up = catch_up
        self._embedders: dict[str, Any] = {}

    def watched(self) -> tuple[list[Path], list[str]]:
        """(existing roots to watch, one line per root that does not exist)."""
        roots: dict[Path, None] = {}
        missing: list[str] = []
        for t in self.targets:
            for root, _ in t.roots:
                if root.exists():
                    roots[root] = None
                else:
                    missing.append(f"context {t.config.name!r}: source {root} does not exist; not watched")
        # A root inside another watched root is covered by the recursive watch of the outer one.
        kept = [r for r in roots if not any(o != r and within(r, o) for o in roots)]
        return kept, missing

    def run(self) -> None:
        from watchfiles import watch

        roots, missing = self.watched()
        for line in missing:
            self.emit({"event": "warning", "at": now_iso(), "message": line})
        if not roots:
            from chinvex.errors import NotFoundError

            names = ", ".join(t.config.name for t in self.targets)
            raise NotFoundError(f"nothing to watch: no source folder of context {names} exists")
        self.emit({"event": "watching", "at": now_iso(), "contexts": [t.config.name for t in self.targets],
                   "roots": [str(r) for r in roots], "debounce_ms": self.debounce_ms})
        if self.catch_up:
            for t in self.targets:
                if self.stop.is_set():
                    break
                self.ingest(t.config, "start", [])
        for changes in watch(*roots, watch_filter=None, debounce=self.debounce_ms, step=50,
                             stop_event=self.stop, raise_interrupt=False, ignore_permission_denied=True):
            by_context = owners([path for _, path in changes], self.targets)
            for t in self.targets:
                if self.stop.is_set():
                    break
                if t.config.name in by_context:
                    self.ingest(t.config, "change", by_context[t.config.name])
        self.emit({"event": "stopped", "at": now_iso()})

    def ingest(self, config: ContextConfig, trigger: str, changed: Sequence[str]) -> None:
        from chinvex.errors import ChinvexError
        from chinvex.ingest.pipeline import IngestOptions, run_ingest

        started = time.perf_counter()
        try:
            summary = run_ingest(config, IngestOptions(wait=True, embedder_factory=self._embedder_for(config)))
        except ChinvexError as exc:  # a damaged or read-only index: say so, keep watching
            self.emit({"event": "error", "at": now_iso(), "context": config.name, "trigger": trigger,
                       "message": exc.message, "duration_s": round(time.perf_counter() - started, 3)})
            return
        self.emit(run_event(config.name, trigger, changed, summary, time.perf_counter() - started))

    def _embedder_for(self, config: ContextConfig) -> Callable[[], Any]:
        """One embedder per embedding configuration for the watcher's lifetime: loading the
        model costs about a second and a hundred megabytes, once."""
        from chinvex.embedding.factory import make_embedder

        key = config.embedding.model_dump_json() if config.embedding is not None else "builtin"

        def factory() -> Any:
            if key not in self._embedders:
                self._embedders[key] = make_embedder(config.embedding)
            return self._embedders[key]

        return factory
