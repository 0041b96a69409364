"""Which context a command means when it names none: one rule for the CLI and the MCP server.

The order is: the name given (`--context`), else `CHINVEX_CONTEXT`, else the context one of
whose source folders (any include kind: repos, note roots, chat roots, Codex and Claude Code
session roots) contains the working directory, else `EDI_PROJECT_PATH` (EDI sets it for the
agents it starts, which may run elsewhere). When several roots contain the directory, the
deepest one wins, so a context over `~/code/app/docs` beats one over `~/code/app`; two contexts
with the same deepest root are an error, because picking one would answer from the wrong project
half of the time. A name that was given but does not resolve is an error too, never a reason to
fall back to some other context.

Kept free of heavy imports: the MCP server calls it while answering its first tools.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from chinvex.errors import ChinvexError
    from chinvex.models import ContextConfig
    from chinvex.context.registry import Registry

ENV_CONTEXT = "CHINVEX_CONTEXT"
ENV_PROJECT_PATH = "EDI_PROJECT_PATH"
FLAG = "--context"
VIA_CWD = "cwd"

Problem = Literal["unknown", "none", "ambiguous"]


@dataclass(frozen=True)
class DefaultResolution:
    """The context and how it was found (`--context`, `CHINVEX_CONTEXT`, `cwd`,
    `EDI_PROJECT_PATH`), or why there is none: `problem` is `unknown` (a given name does not
    resolve; `cause` is the registry's error), `none` (nothing contains the directory) or
    `ambiguous` (two contexts claim it equally); `error` says so in one sentence."""

    config: ContextConfig | None
    via: str | None
    error: str | None = None
    problem: Problem | None = None
    cause: ChinvexError | None = None


def _inside(path: str, root: str) -> bool:
    root = root.rstrip(os.sep) or os.sep
    return path == root or path.startswith(root + os.sep)


def _forms(path: str) -> set[str]:
    """A path as given and with symlinks resolved: a repo registered through a symlink still
    contains the working directory an agent reports."""
    forms = {os.path.abspath(path)}
    try:
        forms.add(os.path.realpath(path))
    except OSError:
        pass
    return forms


def source_roots(config: ContextConfig) -> list[str]:
    """Every source folder of a context, whatever its kind."""
    from chinvex.models import INCLUDE_KEYS

    return [root for key in INCLUDE_KEYS for root in getattr(config.includes, key)]


def contexts_containing(configs: Iterable[ContextConfig], place: str) -> list[ContextConfig]:
    """The contexts whose deepest source root containing `place` is the deepest of all: one
    context normally, several on a tie, none when no root contains it."""
    wanted = _forms(place)
    best_depth = -1
    best: dict[str, ContextConfig] = {}
    for config in configs:
        for root in source_roots(config):
            for form in _forms(root):
                if not any(_inside(w, form) for w in wanted):
                    continue
                depth = len(Path(form).parts)
                if depth > best_depth:
                    best_depth, best = depth, {config.name: config}
                elif depth == best_depth:
                    best[config.name] = config
    return [best[name] for name in sorted(best)]


def context_names(registry: Registry) -> list[str]:
    """Names of every context on disk (broken ones by folder name), for error messages."""
    return [entry.config.name if entry.config else entry.dir_name for entry in registry.entries()]


def resolve_default(
    registry: Registry,
    *,
    given: str | None,
    env: Mapping[str, str],
    cwd: str,
    advice: str,
    lead: str = "No context given",
    given_via: str = FLAG,
) -> DefaultResolution:
    """The context a command means (see the module docstring). `advice` says how the caller's
    user names one (e.g. "pass --context NAME or set CHINVEX_CONTEXT"); `lead` opens the message
    when nothing was found."""
    from chinvex.errors import ChinvexError

    for value, via in ((given, given_via), (env.get(ENV_CONTEXT, ""), ENV_CONTEXT)):
        value = (value or "").strip()
        if not value:
            continue
        try:
            return DefaultResolution(registry.resolve(value), via)
        except ChinvexError as exc:
            return DefaultResolution(None, via, f"{exc.message} (given by {via})", "unknown", exc)
    places = [cwd]
    project_path = env.get(ENV_PROJECT_PATH, "").strip()
    if project_path and project_path not in places:
        places.append(project_path)
    configs = [entry.config for entry in registry.entries() if entry.config is not None]
    for place in places:
        found = contexts_containing(configs, place)
        via = VIA_CWD if place == cwd else ENV_PROJECT_PATH
        if len(found) > 1:
            names = ", ".join(c.name for c in found)
            return DefaultResolution(
                None, via, f"{place} is inside sources of several contexts ({names}); {advice}.",
                "ambiguous")
        if found:
            return DefaultResolution(found[0], via)
    names = ", ".join(context_names(registry)) or "none yet (create one with 'chinvex context create')"
    return DefaultResolution(
        None, None, f"{lead} and none contains {' or '.join(places)}; {advice}. Contexts: {names}",
        "none")
