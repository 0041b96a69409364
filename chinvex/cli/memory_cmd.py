"""`chinvex memory`: the memories (`recall_add`) of a context, and promotion of a
project's memory to the `global` context (`chinvex.memory.scope`)."""

from __future__ import annotations

from typing import Optional

import typer

from chinvex.cli.app import app
from chinvex.cli.options import JSON_OPTION
from chinvex.cli.output import emit

memory_app = typer.Typer(help="Knowledge items added with recall_add, by scope; promotion to global.",
                         no_args_is_help=True, rich_markup_mode=None)
app.add_typer(memory_app, name="memory")


def _contexts(context: Optional[str], scope: str, *, json_out: bool):
    from chinvex.cli.commands import _resolve
    from chinvex.context.registry import Registry
    from chinvex.errors import UsageError
    from chinvex.memory.scope import GLOBAL

    if scope not in ("project", "global", "all"):
        raise UsageError(f"--scope {scope!r}: expected project, global or all")
    registry = Registry()
    has_global = registry.exists(GLOBAL)
    configs = []
    if scope in ("project", "all"):
        configs.append(_resolve(context, json_out=json_out))
    if scope in ("global", "all"):
        if not has_global:
            if scope == "global":
                from chinvex.errors import ContextNotFoundError

                raise ContextNotFoundError("no context named 'global'; create it with 'chinvex context create global'")
        else:
            configs.append(registry.resolve(GLOBAL))
    return list({c.name: c for c in configs}.values())


@memory_app.command("list")
def memory_list(
    context: Optional[str] = typer.Option(None, "--context", help="The project context (default: as for search)."),
    scope: str = typer.Option("all", "--scope", help="project, global or all."),
    promoted: bool = typer.Option(False, "--promoted", help="Also list the pointers left by promotions."),
    json_out: bool = JSON_OPTION,
) -> None:
    """Knowledge items, newest first, each with its scope label."""
    from pathlib import Path

    from chinvex.api import open_index
    from chinvex.memory.items import list_memories
    from chinvex.memory.scope import scope_label

    rows = []
    for config in _contexts(context, scope, json_out=json_out):
        path = Path(config.index.sqlite_path)
        if not path.exists():
            continue
        conn = open_index(config)
        try:
            for item in list_memories(conn, include_promoted=promoted):
                rows.append({"id": item.item_id, "type": item.type, "title": item.title, "context": config.name,
                             "scope": "promoted" if item.scope == "promoted" else scope_label(config),
                             "tags": item.tags, "updated_at": item.updated_at,
                             **({"promoted_to": item.metadata.get("promoted_to")} if item.scope == "promoted" else {})})
        finally:
            conn.close()
    rows.sort(key=lambda r: (r["updated_at"] or "", r["id"]), reverse=True)
    if json_out:
        emit({"items": rows}, json_mode=True)
        return
    from rich.markup import escape

    lines = [escape(f"{r['id']}  [{r['scope']}] {r['type']}: {r['title']}  ({r['context']}, {r['updated_at'][:10]})")
             for r in rows]
    emit({}, json_mode=False, human="\n".join(lines) if lines else "No knowledge items.")


@memory_app.command("promote")
def memory_promote(
    item_id: str = typer.Argument(..., help="The item's id (e.g. D-1a2b3c4d), from 'chinvex memory list'."),
    context: Optional[str] = typer.Option(None, "--context", help="The project context holding it."),
    json_out: bool = JSON_OPTION,
) -> None:
    """Move a project's knowledge item to the global context; the project keeps a pointer, so
    its id still resolves."""
    from chinvex.cli.commands import _resolve
    from chinvex.context.registry import Registry
    from chinvex.errors import ChinvexError, ContextNotFoundError
    from chinvex.memory.scope import GLOBAL, promote

    project = _resolve(context, json_out=json_out)
    registry = Registry()
    if not registry.exists(GLOBAL):
        raise ChinvexError("No context named 'global' to promote to; create it with "
                           "'chinvex context create global'", code=ContextNotFoundError.code)
    moved = promote(project, registry.resolve(GLOBAL), item_id.strip())
    emit(moved, json_mode=json_out,
         human=f"{moved['id']} ({moved['title']}) moved from {moved['from']} to {moved['to']}; "
               f"{moved['from']} keeps a pointer")
