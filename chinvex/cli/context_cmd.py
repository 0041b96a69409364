"""`chinvex context ...`: create, inspect and edit contexts (DESIGN.md §3, §10)."""

from __future__ import annotations

from typing import Optional

import typer

from chinvex.cli.options import JSON_OPTION
from chinvex.cli.output import emit

app = typer.Typer(
    help="Create, list and edit contexts (named groups of sources).",
    no_args_is_help=True,
    rich_markup_mode=None,
)

_SOURCE_FLAGS = {
    "repos": ("--repo", "A git repository or code folder."),
    "chat_roots": ("--chat-root", "A folder of chat exports (ChatGPT conversations.json/zip, markdown chats)."),
    "codex_session_roots": ("--codex-sessions", "A Codex home or sessions folder (e.g. ~/.codex)."),
    "claude_session_roots": ("--claude-sessions", "A Claude Code projects folder (e.g. ~/.claude/projects)."),
    "note_roots": ("--note-root", "A folder of markdown / text notes (e.g. an Obsidian vault)."),
}


def _registry():
    from chinvex.registry import Registry

    return Registry()


def _config_dict(config) -> dict:
    return config.model_dump(mode="json", exclude_unset=True)


@app.command("create")
def create(
    name: str = typer.Argument(..., help="Context name (at most 64 characters, no path separators)."),
    alias: list[str] = typer.Option([], "--alias", help="Another name for the context (repeatable)."),
    repo: list[str] = typer.Option([], "--repo", help=_SOURCE_FLAGS["repos"][1]),
    chat_root: list[str] = typer.Option([], "--chat-root", help=_SOURCE_FLAGS["chat_roots"][1]),
    codex_sessions: list[str] = typer.Option([], "--codex-sessions", help=_SOURCE_FLAGS["codex_session_roots"][1]),
    claude_sessions: list[str] = typer.Option([], "--claude-sessions", help=_SOURCE_FLAGS["claude_session_roots"][1]),
    note_root: list[str] = typer.Option([], "--note-root", help=_SOURCE_FLAGS["note_roots"][1]),
    idempotent: bool = typer.Option(False, "--idempotent", help="Succeed if it exists (adds any new aliases and sources)."),
    json_out: bool = JSON_OPTION,
) -> None:
    """Create a context and initialise its index. Exit 0 created, 1 exists, 2 invalid name."""
    result = _registry().create(
        name,
        aliases=alias,
        includes={
            "repos": repo,
            "chat_roots": chat_root,
            "codex_session_roots": codex_sessions,
            "claude_session_roots": claude_sessions,
            "note_roots": note_root,
        },
        idempotent=idempotent,
    )
    verb = "Created" if result.created else "Exists"
    notes = "".join(f"\n  {note}" for note in result.notes)
    emit(
        {"created": result.created, "path": str(result.path), "notes": result.notes,
         "context": _config_dict(result.config)},
        json_mode=json_out,
        human=f"{verb} context {result.config.name} ({result.path}){notes}",
    )


@app.command("list")
def list_contexts(json_out: bool = JSON_OPTION) -> None:
    """List contexts, most recently updated first."""
    from rich.markup import escape

    entries = _registry().entries()
    rows = []
    for entry in entries:
        if entry.config is not None:
            rows.append({
                "name": entry.config.name,
                "aliases": entry.config.aliases,
                "updated_at": entry.config.updated_at,
                "path": str(entry.path),
                "error": None,
            })
        else:
            rows.append({"name": entry.dir_name, "aliases": [], "updated_at": None,
                         "path": str(entry.path), "error": entry.error})
    rows.sort(key=lambda r: (r["updated_at"] or ""), reverse=True)
    if json_out:
        emit({"contexts": rows}, json_mode=True)
        return
    if not rows:
        emit({}, json_mode=False, human="No contexts yet. Create one with 'chinvex context create NAME'.")
        return
    width = max(4, *(len(r["name"]) for r in rows)) + 2
    alias_texts = [", ".join(r["aliases"]) or "-" for r in rows]
    alias_width = max(7, *(len(a) for a in alias_texts)) + 2
    lines = [f"{'NAME':<{width}}{'ALIASES':<{alias_width}}UPDATED"]
    for row, aliases in zip(rows, alias_texts):
        updated = row["updated_at"] or f"(broken: {row['error']})"
        lines.append(f"{row['name']:<{width}}{aliases:<{alias_width}}{updated}")
    emit({}, json_mode=False, human=escape("\n".join(lines)))


@app.command("show")
def show(name: str = typer.Argument(..., help="Context name or alias."), json_out: bool = JSON_OPTION) -> None:
    """Print a context's context.json."""
    from rich.markup import escape

    from chinvex.jsonio import dumps

    registry = _registry()
    config = registry.resolve(name)
    data = _config_dict(config)
    path = registry.roots.context_file(config.name)
    emit({"path": str(path), "context": data}, json_mode=json_out,
         human=escape(dumps(data, pretty=True).decode()))


@app.command("exists")
def exists(name: str = typer.Argument(..., help="Context name or alias."), json_out: bool = JSON_OPTION) -> None:
    """Exit 0 if the context exists, 1 if not (never creates it)."""
    from chinvex.errors import ContextNotFoundError

    try:
        config = _registry().resolve(name)
    except ContextNotFoundError:
        emit({"exists": False, "name": name}, json_mode=json_out, human=f"{name}: no such context")
        raise typer.Exit(1)
    emit({"exists": True, "name": config.name}, json_mode=json_out, human=f"{config.name}: exists")


@app.command("rename")
def rename(
    old: str = typer.Argument(..., help="Current name or alias."),
    new: str = typer.Argument(..., help="New name."),
    json_out: bool = JSON_OPTION,
) -> None:
    """Rename a context; its index folder moves with it."""
    config = _registry().rename(old, new)
    emit({"context": _config_dict(config)}, json_mode=json_out,
         human=f"Renamed {old} to {config.name}")


@app.command("delete")
def delete(
    name: str = typer.Argument(..., help="Context name or alias."),
    yes: bool = typer.Option(False, "--yes", help="Confirm deletion of the context and its index."),
    json_out: bool = JSON_OPTION,
) -> None:
    """Delete a context and its index (sources are never touched)."""
    from chinvex.errors import UsageError

    registry = _registry()
    config = registry.resolve(name)
    if not yes:
        raise UsageError(f"Refusing to delete context {config.name!r} without --yes.")
    config, removed = registry.delete(name)
    emit({"deleted": config.name, "removed": removed}, json_mode=json_out,
         human=f"Deleted context {config.name}")


@app.command("add-source")
def add_source(
    name: str = typer.Argument(..., help="Context name or alias."),
    repo: Optional[str] = typer.Option(None, "--repo", help=_SOURCE_FLAGS["repos"][1]),
    chat_root: Optional[str] = typer.Option(None, "--chat-root", help=_SOURCE_FLAGS["chat_roots"][1]),
    codex_sessions: Optional[str] = typer.Option(None, "--codex-sessions", help=_SOURCE_FLAGS["codex_session_roots"][1]),
    claude_sessions: Optional[str] = typer.Option(None, "--claude-sessions", help=_SOURCE_FLAGS["claude_session_roots"][1]),
    note_root: Optional[str] = typer.Option(None, "--note-root", help=_SOURCE_FLAGS["note_roots"][1]),
    json_out: bool = JSON_OPTION,
) -> None:
    """Add one source folder to a context (indexed on the next ingest)."""
    from chinvex.errors import UsageError

    given = {
        key: value
        for key, value in {
            "repos": repo, "chat_roots": chat_root, "codex_session_roots": codex_sessions,
            "claude_session_roots": claude_sessions, "note_roots": note_root,
        }.items()
        if value is not None
    }
    if len(given) != 1:
        flags = "|".join(flag for flag, _ in _SOURCE_FLAGS.values())
        raise UsageError(f"Give exactly one of {flags} with a folder.")
    (key, directory), = given.items()
    config, added = _registry().add_source(name, key, directory)
    message = f"Added {directory} to {config.name} as {key}" if added else f"{directory} is already in {config.name}"
    emit({"added": added, "key": key, "context": _config_dict(config)}, json_mode=json_out, human=message)


@app.command("remove-source")
def remove_source(
    name: str = typer.Argument(..., help="Context name or alias."),
    directory: str = typer.Argument(..., help="The source folder to remove."),
    json_out: bool = JSON_OPTION,
) -> None:
    """Remove a source folder; its chunks leave the index on the next ingest."""
    config, removed_from = _registry().remove_source(name, directory)
    emit({"removed_from": removed_from, "context": _config_dict(config)}, json_mode=json_out,
         human=f"Removed {directory} from {config.name}; its chunks leave the index on the next ingest")
