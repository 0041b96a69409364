"""What lives as long as one `chinvex ui` run: its secrets, the context it opened on, one warm
`Searcher` (connections, vector stores and the embedder stay loaded between pages, as in the
MCP server) and the ingests it started.

Contexts are looked up in the registry on every request (one small JSON read), so a context
created or edited while the server runs shows up without a restart.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from chinvex.api import Engine
from chinvex.web.jobs import IngestJobs
from chinvex.web.security import RunSecrets

if TYPE_CHECKING:
    from chinvex.models import ContextConfig
    from chinvex.context.registry import ContextEntry
    from chinvex.retrieval.search import Searcher


@dataclass
class UiState:
    run: RunSecrets
    default_context: str | None = None
    """The context pages show when the URL names none (`--context`, else the default rule)."""
    jobs: IngestJobs = field(default_factory=IngestJobs)
    _engine: Engine = field(default_factory=lambda: Engine(server=True))

    @property
    def searcher(self) -> Searcher:
        return self._engine.searcher

    @property
    def engine(self) -> Engine:
        return self._engine

    def entries(self) -> list[ContextEntry]:
        from chinvex.context.registry import Registry

        return Registry().entries()

    def context_names(self) -> list[str]:
        return [e.config.name for e in self.entries() if e.config is not None]

    def config(self, name: str | None) -> ContextConfig:
        """The context a page was asked for (name or alias), else the default one, else the
        first there is. Unknown names raise the registry's CONTEXT_NOT_FOUND."""
        from chinvex.errors import NotFoundError
        from chinvex.context.registry import Registry

        registry = Registry()
        wanted = (name or "").strip() or self.default_context
        if wanted:
            return registry.resolve(wanted)
        for entry in registry.entries():
            if entry.config is not None:
                return entry.config
        raise NotFoundError("There are no contexts yet; create one with 'chinvex context create'.")

    def embedder_for(self, config: ContextConfig) -> Any:
        """The searcher's warm embedder, for ingests started here (no second model load)."""
        return self.searcher.embedder(config)

    def warm_up(self) -> None:
        """Load the default context's index, vector store and embedder in the background, so the
        first search a person makes is as fast as the rest."""
        if not self.default_context:
            return

        def warm() -> None:
            from chinvex.retrieval.search import SearchRequest

            try:
                config = self.config(self.default_context)
                self.searcher.search([config], SearchRequest(query="warm up", k=1))
            except Exception:  # nothing to warm (no index yet, broken store): pages will say so
                pass

        threading.Thread(target=warm, name="chinvex-ui-warm-up", daemon=True).start()

    def close(self) -> None:
        self._engine.close()
