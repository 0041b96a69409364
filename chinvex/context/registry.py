"""The context registry (DESIGN.md §3): named groups of sources, one folder each.

Resolution never creates anything; every write of context.json is atomic and keeps keys this
version does not know.
"""

from __future__ import annotations

import os
import shutil
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
from pydantic import ValidationError

from chinvex.errors import (
    AliasConflictError,
    ChinvexError,
    ConfigError,
    ContextExistsError,
    ContextNotFoundError,
    InvalidNameError,
    StorageError,
    UsageError,
)
from chinvex.jsonio import atomic_write_json
from chinvex.models import INCLUDE_KEYS, ContextConfig
from chinvex.models.context import SESSIONS_KEY
from chinvex.models.documents import DEFAULT_WEIGHTS
from chinvex.paths import Roots, absolute, roots
from chinvex.timeutil import now_iso

MAX_NAME_LENGTH = 64


def validate_name(name: str, *, what: str = "context name") -> str:
    """Names become folder names, so anything that could escape or confuse a path is refused."""
    if not name or not name.strip():
        raise InvalidNameError(f"Invalid {what}: it must not be empty.")
    if len(name) > MAX_NAME_LENGTH:
        raise InvalidNameError(
            f"Invalid {what} {name[:20]!r}...: at most {MAX_NAME_LENGTH} characters "
            f"(got {len(name)})."
        )
    if "/" in name or "\\" in name:
        raise InvalidNameError(f"Invalid {what} {name!r}: path separators are not allowed.")
    if ".." in name or name == ".":
        raise InvalidNameError(f"Invalid {what} {name!r}: '.' and '..' are not allowed.")
    if name != name.strip():
        raise InvalidNameError(f"Invalid {what} {name!r}: no leading or trailing spaces.")
    if name.startswith("-"):
        raise InvalidNameError(f"Invalid {what} {name!r}: must not start with '-'.")
    if any(unicodedata.category(ch).startswith("C") for ch in name):
        raise InvalidNameError(f"Invalid {what} {name!r}: control characters are not allowed.")
    return name


def name_key(name: str) -> str:
    """How names are compared for clashes: NFC-normalised and case-folded. Names are folder
    names, and a case-insensitive file system (macOS, Windows) or a normalising one (macOS's NFD
    file names) would put `Work` and `work`, or `café` typed two ways, in one folder."""
    return unicodedata.normalize("NFC", name).casefold()


def _look_alike(name: str, claimed: dict[str, str]) -> tuple[str, str] | None:
    """A name in use that differs from `name` only by case or Unicode normalisation, with its
    owner; None when there is none (an exact match is the caller's own error)."""
    key = name_key(name)
    return next(((used, owner) for used, owner in claimed.items() if used != name and name_key(used) == key), None)


def _refuse_look_alike(name: str, claimed: dict[str, str]) -> None:
    clash = _look_alike(name, claimed)
    if clash is not None:
        used, owner = clash
        held = f"the context {owner!r}" if used == owner else f"an alias of context {owner!r}"
        raise AliasConflictError(
            f"Context {name!r} differs from {used!r} ({held}) only by case or Unicode normalisation; "
            "on a case-insensitive file system they would share a folder: choose another name.")


def _is_valid_name(name: str) -> bool:
    try:
        validate_name(name)
    except InvalidNameError:
        return False
    return True


def format_validation_error(path: Path, err: ValidationError) -> str:
    first = err.errors()[0]
    location = ".".join(str(part) for part in first["loc"]) or "(top level)"
    more = f" (+{err.error_count() - 1} more)" if err.error_count() > 1 else ""
    return f"{path}: invalid field '{location}': {first['msg']}{more}"


def load_config_file(path: Path) -> ContextConfig:
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise ConfigError(f"{path}: file not found") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise ConfigError(f"{path}: not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a JSON object at the top level")
    try:
        return ContextConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(format_validation_error(path, exc)) from None


@dataclass
class ContextEntry:
    """A context as found on disk: its folder name, and its config or why it could not load."""

    dir_name: str
    path: Path
    config: ContextConfig | None = None
    error: str | None = None


@dataclass
class CreateResult:
    config: ContextConfig
    created: bool
    path: Path
    notes: list[str] = field(default_factory=list)


def _dump(config: ContextConfig) -> dict[str, Any]:
    # exclude_unset keeps a loaded file's shape (no keys appear that the user did not write);
    # model_extra keys are always dumped, so unknown keys survive.
    return config.model_dump(mode="json", exclude_unset=True)


SOURCE_LABELS = {
    "repos": "repo", "note_roots": "note root", "chat_roots": "chat root",
    "codex_session_roots": "codex sessions", "claude_session_roots": "claude sessions",
    "sessions": "agent sessions",
}
"""Each include list's name for a person (`context show`, `add-source`, the web UI's Contexts)."""

INCLUDE_FLAGS = {
    "repos": "--repo",
    "chat_roots": "--chat-root",
    "codex_session_roots": "--codex-sessions",
    "claude_session_roots": "--claude-sessions",
    "note_roots": "--note-root",
}


FILE_ROOTS = frozenset({"chat_roots"})
"""Include lists whose entry may be one file (an export's conversations.json or .zip)."""


def _require_source(key: str, path: str) -> str:
    flag = INCLUDE_FLAGS.get(key, "--" + key)
    if key in FILE_ROOTS and os.path.isfile(absolute(path)):
        return absolute(path)
    return _require_dir(path, flag)


def _session_entry(entry: str) -> str:
    from chinvex.ingest.session_stores import checked_entry

    return checked_entry(entry)


def _require_dir(path: str, flag: str) -> str:
    full = absolute(path)
    try:
        st = os.stat(full)
    except FileNotFoundError:
        raise UsageError(f"{flag} {path}: does not exist") from None
    except PermissionError:
        raise UsageError(f"{flag} {path}: permission denied") from None
    except OSError as exc:
        raise UsageError(f"{flag} {path}: {exc.strerror or exc}") from None
    import stat as stat_module

    if not stat_module.S_ISDIR(st.st_mode):
        raise UsageError(f"{flag} {path}: is not a directory")
    if not os.access(full, os.R_OK | os.X_OK):
        raise UsageError(f"{flag} {path}: permission denied")
    return full


class Registry:
    def __init__(self, paths: Roots | None = None):
        self.roots = paths or roots()

    # -- reading -------------------------------------------------------------------------

    def entries(self) -> list[ContextEntry]:
        base = self.roots.contexts
        if not base.is_dir():
            return []
        found: list[ContextEntry] = []
        for child in sorted(base.iterdir(), key=lambda p: p.name):
            path = child / "context.json"
            if not child.is_dir() or not path.is_file():
                continue
            entry = ContextEntry(dir_name=child.name, path=path)
            try:
                entry.config = load_config_file(path)
            except ConfigError as exc:
                entry.error = exc.message
            found.append(entry)
        return found

    def load(self, name: str) -> ContextConfig:
        """Load by exact folder name; the error names the file when it is broken."""
        return load_config_file(self.roots.context_file(name))

    def resolve(self, name_or_alias: str) -> ContextConfig:
        """Exact name, else the first context (by name) listing it as an alias, else an error."""
        if _is_valid_name(name_or_alias) and self.roots.context_file(name_or_alias).is_file():
            return self.load(name_or_alias)
        for entry in self.entries():
            if entry.config is not None and name_or_alias in entry.config.aliases:
                return entry.config
        raise ContextNotFoundError(name_or_alias)

    def exists(self, name_or_alias: str) -> bool:
        try:
            self.resolve(name_or_alias)
        except ContextNotFoundError:
            return False
        return True

    def _claimed_names(self, *, ignore: str | None = None) -> dict[str, str]:
        """Every name and alias in use -> the context that holds it."""
        claimed: dict[str, str] = {}
        for entry in self.entries():
            owner = entry.config.name if entry.config else entry.dir_name
            if entry.dir_name == ignore:
                continue
            claimed.setdefault(entry.dir_name, owner)
            if entry.config is not None:
                for alias in entry.config.aliases:
                    claimed.setdefault(alias, owner)
        return claimed

    def _check_aliases(self, name: str, aliases: Iterable[str], *, ignore: str | None) -> list[str]:
        claimed = self._claimed_names(ignore=ignore)
        result: list[str] = []
        for alias in aliases:
            validate_name(alias, what="alias")
            if alias == name:
                raise AliasConflictError(f"Alias {alias!r} is the context's own name.")
            if alias in claimed:
                raise AliasConflictError(
                    f"Alias {alias!r} is already used by context {claimed[alias]!r}."
                )
            if alias not in result:
                result.append(alias)
        return result

    # -- writing -------------------------------------------------------------------------

    def save(self, config: ContextConfig, *, touch: bool = True) -> Path:
        if touch:
            config.updated_at = now_iso()
        path = self.roots.context_file(config.name)
        try:
            atomic_write_json(path, _dump(config))
        except OSError as exc:
            raise StorageError(f"Cannot write {path}: {exc.strerror or exc}") from None
        return path

    def create(
        self,
        name: str,
        *,
        aliases: Iterable[str] = (),
        includes: dict[str, Iterable[str]] | None = None,
        idempotent: bool = False,
    ) -> CreateResult:
        validate_name(name)
        wanted = {
            key: [_require_source(key, p) for p in (includes or {}).get(key, ())]
            for key in INCLUDE_KEYS
        }
        sessions = [_session_entry(e) for e in (includes or {}).get(SESSIONS_KEY, ())]
        if sessions:
            wanted[SESSIONS_KEY] = list(dict.fromkeys(sessions))
        aliases = list(dict.fromkeys(aliases))
        context_file = self.roots.context_file(name)
        if context_file.is_file():
            if not idempotent:
                raise ContextExistsError(f"Context {name!r} already exists ({context_file}).")
            return self._merge_into_existing(name, aliases, wanted)
        claimed = self._claimed_names()
        if name in claimed:
            raise AliasConflictError(f"{name!r} is already an alias of context {claimed[name]!r}.")
        _refuse_look_alike(name, claimed)
        aliases = self._check_aliases(name, aliases, ignore=None)

        index_dir = self.roots.index_dir(name)
        stamp = now_iso()
        config = ContextConfig(
            name=name,
            aliases=aliases,
            includes={key: values for key, values in wanted.items()},
            index={
                "sqlite_path": str(index_dir / "hybrid.db"),
                "chroma_dir": str(index_dir / "chroma"),
            },
            weights=dict(DEFAULT_WEIGHTS),
            created_at=stamp,
            updated_at=stamp,
        )
        context_dir = self.roots.context_dir(name)
        try:
            self.roots.contexts.mkdir(parents=True, exist_ok=True)
            context_dir.mkdir()  # atomic: a concurrent create of the same name fails here
        except FileExistsError:
            if idempotent:
                return self._merge_into_existing(name, aliases, wanted)
            raise ContextExistsError(f"Context {name!r} already exists ({context_dir}).") from None
        except OSError as exc:
            raise StorageError(
                f"Cannot create {context_dir}: {exc.strerror or exc}"
            ) from None
        try:
            index_dir.mkdir(parents=True, exist_ok=True)
            (index_dir / "chroma").mkdir(exist_ok=True)
            from chinvex.storage.db import initialise

            initialise(Path(config.index.sqlite_path))
            path = self.save(config, touch=False)
        except BaseException as exc:
            shutil.rmtree(context_dir, ignore_errors=True)
            if isinstance(exc, OSError):
                raise StorageError(f"Cannot create context {name!r}: {exc.strerror or exc}") from None
            raise
        return CreateResult(config=config, created=True, path=path)

    def _merge_into_existing(
        self, name: str, aliases: list[str], wanted: dict[str, list[str]]
    ) -> CreateResult:
        config = self.load(name)
        notes: list[str] = []
        new_aliases = [a for a in aliases if a not in config.aliases]
        if new_aliases:
            config.aliases = config.aliases + self._check_aliases(name, new_aliases, ignore=name)
            notes.append(f"added aliases: {', '.join(new_aliases)}")
        for key, paths in wanted.items():
            current = list(getattr(config.includes, key))
            added = [p for p in paths if p not in current]
            if added:
                setattr(config.includes, key, current + added)
                notes.append(f"added {key}: {', '.join(added)}")
        path = self.roots.context_file(name)
        if notes:
            path = self.save(config)
        return CreateResult(config=config, created=False, path=path, notes=notes)

    def add_source(self, name_or_alias: str, key: str, directory: str) -> tuple[ContextConfig, bool]:
        if key not in INCLUDE_KEYS and key != SESSIONS_KEY:
            raise UsageError(f"Unknown source kind {key!r}.")
        config = self.resolve(name_or_alias)
        full = _session_entry(directory) if key == SESSIONS_KEY else _require_source(key, directory)
        current = list(getattr(config.includes, key))
        if full in current:
            return config, False
        setattr(config.includes, key, current + [full])
        self.save(config)
        return config, True

    def remove_source(self, name_or_alias: str, directory: str) -> tuple[ContextConfig, list[str]]:
        config = self.resolve(name_or_alias)
        full = absolute(directory)
        removed_from: list[str] = []
        for key in (*INCLUDE_KEYS, SESSIONS_KEY):
            current = list(getattr(config.includes, key))
            kept = [p for p in current if p != full and p != directory
                    and not (key == SESSIONS_KEY and p.partition("=")[2] == full)]
            if len(kept) != len(current):
                setattr(config.includes, key, kept)
                removed_from.append(key)
        if not removed_from:
            raise ChinvexError(
                f"{directory} is not a source of context {config.name!r}.", code="NOT_FOUND"
            )
        self.save(config)
        return config, removed_from

    def rename(self, old: str, new: str) -> ContextConfig:
        config = self.resolve(old)
        validate_name(new)
        current = config.name
        if new == current:
            raise UsageError(f"Context is already called {new!r}.")
        if self.roots.context_file(new).exists() or self.roots.context_dir(new).exists():
            raise ContextExistsError(f"Context {new!r} already exists.")
        claimed = self._claimed_names(ignore=current)
        if new in claimed:
            raise AliasConflictError(f"{new!r} is already used by context {claimed[new]!r}.")
        if name_key(new) != name_key(current):  # renaming `work` to `Work` is the user's own business
            _refuse_look_alike(new, claimed)

        from chinvex.locking import context_lock

        old_index = self.roots.index_dir(current)
        new_index = self.roots.index_dir(new)
        with context_lock(config, wait=False, purpose="rename"):
            moved_index = False
            if old_index.exists():
                if new_index.exists():
                    raise ContextExistsError(f"Index folder {new_index} already exists.")
                try:
                    new_index.parent.mkdir(parents=True, exist_ok=True)
                    os.rename(old_index, new_index)
                except OSError as exc:
                    raise StorageError(f"Cannot move {old_index}: {exc.strerror or exc}") from None
                moved_index = True

            def moved(path: str) -> str:
                p = Path(path)
                if moved_index and (p == old_index or old_index in p.parents):
                    return str(new_index / p.relative_to(old_index))
                return path

            config.name = new
            config.aliases = [a for a in config.aliases if a != new]
            config.index.sqlite_path = moved(config.index.sqlite_path)
            config.index.chroma_dir = moved(config.index.chroma_dir)
            sqlite_path = Path(config.index.sqlite_path)
            if sqlite_path.exists():
                from chinvex.storage.db import rename_context_rows

                rename_context_rows(sqlite_path, current, new)
            old_dir = self.roots.context_dir(current)
            # Write the renamed config into the old folder first, then move the folder:
            # the folder move is the single step that makes the new name visible.
            try:
                atomic_write_json(old_dir / "context.json", _dump(config))
                os.rename(old_dir, self.roots.context_dir(new))
            except OSError as exc:
                raise StorageError(f"Cannot rename {old_dir}: {exc.strerror or exc}") from None
        config.updated_at = now_iso()
        self.save(config, touch=False)
        return config

    def delete(self, name_or_alias: str) -> tuple[ContextConfig, list[str]]:
        config = self.resolve(name_or_alias)
        from chinvex.locking import context_lock

        removed: list[str] = []
        with context_lock(config, wait=False, purpose="delete"):
            index_dir = self.roots.index_dir(config.name)
            sqlite_path = Path(config.index.sqlite_path)
            chroma_dir = Path(config.index.chroma_dir)
            for suffix in ("", "-wal", "-shm"):
                candidate = Path(str(sqlite_path) + suffix)
                if candidate.exists():
                    candidate.unlink()
                    removed.append(str(candidate))
            if chroma_dir.exists():
                shutil.rmtree(chroma_dir)
                removed.append(str(chroma_dir))
            context_dir = self.roots.context_dir(config.name)
            shutil.rmtree(context_dir)
            removed.append(str(context_dir))
        # The lock file lives in the index folder; remove the folder after releasing it.
        if index_dir.exists():
            shutil.rmtree(index_dir, ignore_errors=True)
            removed.append(str(index_dir))
        return config, removed
