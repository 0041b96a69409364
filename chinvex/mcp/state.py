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
from pathlib import Path
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from chinvex.context.default import DefaultResolution, resolve_default
from chinvex.mcp.limits import CONTEXT_NOT_FOUND, RETRIEVAL_ERROR, ToolFailure
from chinvex.api import Engine

if TYPE_CHECKING:
    from chinvex.models import ContextConfig
    from chinvex.context.registry import Registry
    from chinvex.retrieval.search import Searcher

GLOBAL_CONTEXT = "global"
"""RECALL's `global` scope is the context of this exact name (when it exists)."""

ENV_SESSION = "EDI_SESSION_ID"
ENV_WARM = "CHINVEX_MCP_WARM"

NAME_ADVICE = ("pass a context name, start the server with 'chinvex mcp --context NAME', "
               "or set CHINVEX_CONTEXT")


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
        self._engine = Engine(server=True)
        self.indexing: set[str] = set()
        """Knowledge items a call is indexing right now (others leave them alone)."""
        self.indexing_lock = threading.Lock()

    # -- warm resources ---------------------------------------------------------------------

    @property
    def searcher(self) -> Searcher:
        return self._engine.searcher

    @property
    def engine(self) -> Engine:
        return self._engine

    def handle(self, config: ContextConfig) -> Any:
        """The searcher's warm handle of a context (its connection and the lock guarding it)."""
        from chinvex.errors import ChinvexError

        try:
            return self.searcher.handle(config)
        except ChinvexError as exc:
            raise ToolFailure(RETRIEVAL_ERROR, exc.message) from None

    def embedder(self, config: ContextConfig) -> Any:
        return self.searcher.embedder(config)

    def warm(self) -> None:
        """Load the project context's search stack in the background (see `Engine.warm`), so the
        first `chinvex_search` does not wait for the model. CHINVEX_MCP_WARM=0 turns it off."""
        if self.env.get(ENV_WARM, "1").strip() == "0":
            return
        try:
            found = self.resolution()
        except Exception:  # noqa: BLE001  (a broken registry is reported by the first tool call)
            return
        if found.config is not None and Path(found.config.index.sqlite_path).exists():
            self._engine.warm([found.config])

    def close(self) -> None:
        self._engine.close()

    # -- contexts ---------------------------------------------------------------------------

    def registry(self) -> Registry:
        from chinvex.context.registry import Registry

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
        """The project context: --context, else CHINVEX_CONTEXT, else the context with the
        deepest source folder containing the working directory (or EDI_PROJECT_PATH); the same
        rule as the CLI's (`chinvex.context.default`)."""
        return resolve_default(self.registry(), given=self.flag_context, env=self.env, cwd=self.cwd,
                               advice=NAME_ADVICE, lead="No default context: no context was named")

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
