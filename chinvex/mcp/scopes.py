"""RECALL scopes (project, global, all) as the contexts they mean."""

from __future__ import annotations

from typing import Any

from chinvex.context.default import ENV_CONTEXT
from chinvex.mcp import limits
from chinvex.mcp.limits import ToolFailure
from chinvex.mcp.state import ServerState


def scope_contexts(state: ServerState, scope: str) -> tuple[list[Any], list[str]]:
    """RECALL scopes as contexts: project = the default context, global = the context named
    `global`, all = both (whichever exist; an explicitly named project that does not exist is
    an error, never a silent switch to other data)."""
    if scope == "project":
        return [state.project()], []
    glob = state.global_context()
    if scope == "global":
        if glob is None:
            raise ToolFailure(limits.CONTEXT_NOT_FOUND, "No context named 'global' exists: create it with "
                              "'chinvex context create global' to keep cross-project knowledge.")
        return [glob], []
    if scope != "all":
        raise ToolFailure(limits.INVALID_ARGUMENT, f"scope must be project, global or all (got {scope!r}).")
    resolution = state.resolution()
    named = resolution.via in ("--context", ENV_CONTEXT)
    if resolution.config is None and (named or glob is None):
        raise ToolFailure(limits.CONTEXT_NOT_FOUND, resolution.error or "No default context.")
    configs = [c for c in (resolution.config, glob) if c is not None]
    configs = list({c.name: c for c in configs}.values())
    warnings = []
    if resolution.config is None:
        warnings.append(f"no project context ({resolution.error}); searched 'global' only")
    elif glob is None:
        warnings.append("no 'global' context exists; searched the project only")
    return configs, warnings


def lookup_contexts(state: ServerState) -> list[Any]:
    configs, _ = scope_contexts(state, "all")
    return configs
