"""What one `chinvex mcp` process keeps for its lifetime: which context is "the project", and one
warm `Searcher` (connections, vector stores, embedders) shared by every tool and every context.

Nothing heavy happens at construction: the MCP handshake must not wait for a model or for
Chroma. The searcher and everything it holds are created on the first tool call that needs
them, and stay warm afterwards.
"""

from __future__ import annotations

import os
import threading
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from chinvex.mcp.limits import CONTEXT_NOT_FOUND, RETRIEVAL_ERROR, ToolFailure

if TYPE_CHECKING:
    from chinvex.models import ContextConfig
    from chinvex.registry import Registry
    from chinvex.retrieval.search import Searcher

GLOBAL_CONTEXT = "global"
"""RECALL's `global` scope is the context of this exact name (when it exists)."""

ENV_CONTEXT = "CHINVEX_CONTEXT"
ENV_SESSION = "EDI_SESSION_ID"
ENV_PROJECT_PATH = "EDI_PROJECT_PATH"


@dataclass(frozen=True)
class DefaultResolution:
    """The project context and how it was found (flag, env, cwd), or why there is none."""

    config: ContextConfig | None
    via: str | None
    error: str | None = None


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


class ServerState:
    def __init__(
        self,
        default_context: str | None = None,
        *,
        cwd: str | os.PathLike[str] | None = None,
        env: Mapping[str, str] | None = None,
    ):
        self.flag_context = default_context or None
        self.cwd = os.fspath(cwd) if cwd is not None else os.getcwd()
        self.env: dict[str, str] = dict(os.environ if env is None else env)
        self.session_id = self.env.get(ENV_SESSION, "").strip() or f"mcp-{uuid.uuid4().hex[:12]}"
        """Flight-recorder entries of one server run share this id (EDI's session when set)."""
        self._lock = threading.Lock()
        self._searcher: Searcher | None = None
        self.indexing: set[str] = set()
        """Knowledge items a call is indexing right now (others leave them alone)."""
        self.indexing_lock = threading.Lock()

    # -- warm resources ---------------------------------------------------------------------

    @property
    def searcher(self) -> Searcher:
        with self._lock:
            if self._searcher is None:
                from chinvex.retrieval.search import Searcher

                self._searcher = Searcher()
            return self._searcher

    def handle(self, config: ContextConfig) -> Any:
        """The searcher's warm handle of a context (its connection and the lock guarding it)."""
        from chinvex.errors import ChinvexError

        try:
            return self.searcher.handle(config)
        except ChinvexError as exc:
            raise ToolFailure(RETRIEVAL_ERROR, exc.message) from None

    def embedder(self, config: ContextConfig) -> Any:
        return self.searcher.embedder(config)

    def close(self) -> None:
        with self._lock:
            if self._searcher is not None:
                self._searcher.close()

    # -- contexts ---------------------------------------------------------------------------

    def registry(self) -> Registry:
        from chinvex.registry import Registry

        return Registry()

    def resolve(self, name: str) -> ContextConfig:
        from chinvex.errors import ChinvexError, ContextNotFoundError

        try:
            return self.registry().resolve(name)
        except ContextNotFoundError as exc:
            raise ToolFailure(CONTEXT_NOT_FOUND, exc.message) from None
        except ChinvexError as exc:
            raise ToolFailure(exc.code, exc.message) from None

    def resolution(self) -> DefaultResolution:
        """The project context: --context, else CHINVEX_CONTEXT, else the context one of whose
        repos or note roots contains the working directory. A name that was given but does not
        resolve is an error, never a reason to fall back to some other context."""
        for value, via in ((self.flag_context, "--context"), (self.env.get(ENV_CONTEXT, "").strip(), ENV_CONTEXT)):
            if value:
                try:
                    return DefaultResolution(self.resolve(value), via)
                except ToolFailure as exc:
                    return DefaultResolution(None, via, f"{exc.message} (given by {via})")
        places = [self.cwd]
        project_path = self.env.get(ENV_PROJECT_PATH, "").strip()
        if project_path and project_path not in places:
            places.append(project_path)
        for place in places:
            found = self._context_containing(place)
            if isinstance(found, str):
                return DefaultResolution(None, "cwd", found)
            if found is not None:
                return DefaultResolution(found, "cwd" if place == self.cwd else ENV_PROJECT_PATH)
        return DefaultResolution(
            None, None,
            f"No default context: the working directory {self.cwd} is not inside any context's "
            "repos or note roots. Pass a context name, start the server with "
            "'chinvex mcp --context NAME', or set CHINVEX_CONTEXT.",
        )

    def _context_containing(self, place: str) -> ContextConfig | str | None:
        """The context with the deepest repo / note root containing `place`; a message when two
        contexts tie (picking one would answer from the wrong project half of the time)."""
        wanted = _forms(place)
        best_depth = -1
        best: dict[str, ContextConfig] = {}
        for entry in self.registry().entries():
            config = entry.config
            if config is None:
                continue
            roots = list(config.includes.repos) + list(config.includes.note_roots)
            for root in roots:
                for form in _forms(root):
                    if any(_inside(w, form) for w in wanted):
                        depth = len(Path(form).parts)
                        if depth > best_depth:
                            best_depth, best = depth, {config.name: config}
                        elif depth == best_depth:
                            best[config.name] = config
        if len(best) > 1:
            names = ", ".join(sorted(best))
            return (f"The working directory {place} belongs to several contexts ({names}); "
                    "pass a context name or start the server with 'chinvex mcp --context NAME'.")
        return next(iter(best.values()), None)

    def project(self) -> ContextConfig:
        found = self.resolution()
        if found.config is None:
            raise ToolFailure(CONTEXT_NOT_FOUND, found.error or "No default context.")
        return found.config

    def global_context(self) -> ContextConfig | None:
        registry = self.registry()
        if not registry.roots.context_file(GLOBAL_CONTEXT).is_file():
            return None
        from chinvex.errors import ChinvexError

        try:
            return registry.load(GLOBAL_CONTEXT)
        except ChinvexError as exc:
            raise ToolFailure(exc.code, exc.message) from None

    def context_or_project(self, name: str | None) -> ContextConfig:
        if name is not None and name.strip():
            return self.resolve(name.strip())
        return self.project()
