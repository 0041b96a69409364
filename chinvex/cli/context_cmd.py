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
    "sessions": ("--sessions", "Agents' session stores: 'auto' (every store found under your home "
                 "folder, looked up again at each ingest) or KIND=PATH; see 'chinvex sessions detect'."),
}


def _registry():
    from chinvex.context.registry import Registry

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
    sessions: list[str] = typer.Option([], "--sessions", help=_SOURCE_FLAGS["sessions"][1]),
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
            "sessions": sessions,
        },
        idempotent=idempotent,
    )
    verb = "Created" if result.created else "Exists"
    notes = "".join(f"\n  {note}" for note in result.notes)
    includes = result.config.includes
    has_sources = any(values for _key, values in includes.entries() if isinstance(values, list))
    name = result.config.name
    step = (f"\nIndex it with: chinvex ingest --context {name}" if has_sources else
            f"\nAdd sources with 'chinvex context add-source {name} --repo DIR' (or --note-root, "
            f"--chat-root, --sessions auto), then 'chinvex ingest --context {name}'")
    emit(
        {"created": result.created, "path": str(result.path), "notes": result.notes,
         "context": _config_dict(result.config)},
        json_mode=json_out,
        human=f"{verb} context {name} ({result.path}){notes}{step if result.created else ''}",
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
    from chinvex import fmt

    width = max(4, *(len(r["name"]) for r in rows)) + 2
    alias_texts = [", ".join(r["aliases"]) or fmt.MISSING for r in rows]
    alias_width = max(7, *(len(a) for a in alias_texts)) + 2
    lines = [f"{'NAME':<{width}}{'ALIASES':<{alias_width}}UPDATED"]
    for row, aliases in zip(rows, alias_texts):
        updated = fmt.when(row["updated_at"]) if row["updated_at"] else f"(broken: {row['error']})"
        lines.append(f"{row['name']:<{width}}{aliases:<{alias_width}}{updated}")
    emit({}, json_mode=False, human=escape("\n".join(lines)))


@app.command("show")
def show(
    name: Optional[str] = typer.Argument(
        None, help="Context name or alias (default: CHINVEX_CONTEXT, else the context whose source "
        "folders contain the current directory)."),
    json_out: bool = JSON_OPTION,
) -> None:
    """Show a context's settings (--json: its context.json as stored)."""
    from rich.markup import escape

    from chinvex.cli.context_choice import context_config

    registry = _registry()
    config = context_config(name, json_mode=json_out)
    data = _config_dict(config)
    path = registry.roots.context_file(config.name)
    emit({"path": str(path), "context": data}, json_mode=json_out,
         human=escape(format_config(data, str(path))))


_SHOWN = {"schema_version", "name", "aliases", "includes", "excludes", "weights", "embedding",
          "index", "created_at", "updated_at"}


def _value(value) -> str:
    """A setting's value on one line: lists space-separated, booleans as in JSON."""
    from chinvex import fmt

    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return " ".join(_value(v) for v in value) or "[]"
    if isinstance(value, dict):
        return ", ".join(f"{k}={_value(v)}" for k, v in value.items() if v is not None) or "{}"
    return fmt.text(value)


def format_config(data: dict, path: str) -> str:
    """A context.json (as stored, unknown keys included) for a person: sources by kind, the
    settings that are set, readable dates; nothing printed as None."""
    from chinvex import fmt
    from chinvex.context.registry import SOURCE_LABELS

    aliases = f"  (aliases: {', '.join(data['aliases'])})" if data.get("aliases") else ""
    lines = [f"{data.get('name', '?')}{aliases}", f"  {'file':<17}{path}"]
    includes = data.get("includes") or {}
    sources = [(SOURCE_LABELS.get(key, key), root) for key, roots in includes.items()
               if isinstance(roots, list) for root in roots]
    if sources:
        for label, root in sources:
            lines.append(f"  {label:<17}{root}")
    else:
        lines.append(f"  {'sources':<17}none yet (add one with 'chinvex context add-source')")
    if data.get("excludes"):
        lines.append(f"  {'excludes':<17}{', '.join(data['excludes'])}")
    if data.get("weights"):
        lines.append(f"  {'weights':<17}" + " · ".join(f"{k} {fmt.number(v)}" for k, v in data["weights"].items()))
    embedding = data.get("embedding") or {}
    extra = {k: v for k, v in embedding.items() if k != "provider"}
    lines.append(f"  {'embedding':<17}{embedding.get('provider', 'builtin')}" + (f" ({_value(extra)})" if extra else ""))
    index = data.get("index") or {}
    vectors = f"chroma server {index['chroma_url']}" if index.get("chroma_url") else f"chroma {fmt.text(index.get('chroma_dir'))}"
    lines.append(f"  {'index':<17}{fmt.text(index.get('sqlite_path'))} · {vectors}")
    for key, value in data.items():
        if key not in _SHOWN and value is not None:
            lines.append(f"  {key:<17}{_value(value)}")
    lines.append(f"  {'created':<17}{fmt.when(data.get('created_at'), missing=fmt.MISSING)} · "
                 f"updated {fmt.when(data.get('updated_at'), missing=fmt.MISSING)}")
    return "\n".join(lines)


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
    sessions: Optional[str] = typer.Option(None, "--sessions", help=_SOURCE_FLAGS["sessions"][1]),
    json_out: bool = JSON_OPTION,
) -> None:
    """Add one source folder (or agents' session stores) to a context (indexed on the next ingest)."""
    from chinvex.errors import UsageError

    given = {
        key: value
        for key, value in {
            "repos": repo, "chat_roots": chat_root, "codex_session_roots": codex_sessions,
            "claude_session_roots": claude_sessions, "note_roots": note_root, "sessions": sessions,
        }.items()
        if value is not None
    }
    if len(given) != 1:
        flags = "|".join(flag for flag, _ in _SOURCE_FLAGS.values())
        raise UsageError(f"Give exactly one of {flags} with a folder (--sessions: auto or KIND=PATH).")
    (key, directory), = given.items()
    config, added = _registry().add_source(name, key, directory)
    from chinvex.context.registry import SOURCE_LABELS

    label = SOURCE_LABELS.get(key, key)
    stored = getattr(config.includes, key)[-1] if added else directory  # absolute, as context.json holds it
    message = (f"Added {stored} to {config.name} ({label}); it is indexed on the next ingest" if added
               else f"{directory} is already in {config.name} ({label})")
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
