"""MCP tool `chinvex_list_contexts`: the contexts and what each holds."""

from __future__ import annotations

from typing import Any

from chinvex.mcp.state import ServerState


def chinvex_list_contexts(state: ServerState) -> dict[str, Any]:
    from chinvex.models import INCLUDE_KEYS

    registry = state.registry()
    resolution = state.resolution()
    default = resolution.config.name if resolution.config else None
    rows = []
    for entry in registry.entries():
        config = entry.config
        if config is None:
            rows.append({"name": entry.dir_name, "aliases": [], "updated_at": None, "sources": {},
                         "default": False, "global": False, "error": entry.error})
            continue
        rows.append({
            "name": config.name,
            "aliases": list(config.aliases),
            "updated_at": config.updated_at,
            "sources": {key: len(getattr(config.includes, key)) for key in INCLUDE_KEYS},
            "default": config.name == default,
            "global": config.name == "global",
            "error": None,
        })
    return {
        "contexts": rows,
        "default_context": default,
        "default_resolved_by": resolution.via if default else None,
        "default_error": resolution.error,
        "global_context": "global" if any(r["name"] == "global" for r in rows) else None,
        "session_id": state.session_id,
    }
