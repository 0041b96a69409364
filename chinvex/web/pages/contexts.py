"""Contexts: every context's sources, what its index holds, when it was last ingested, whether
its sources changed since (stale), which ones fail, and how many chunks have a vector.

The figures are those of `chinvex stats` (`chinvex.ingest.stats.collect_stats`) and of `chinvex
doctor`'s source checks (`check_stale_sources`, `check_failed_sources`); the vector coverage is
the figure search reads (`chinvex.storage.coverage.current_coverage`).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from chinvex import fmt
from chinvex.models import ContextConfig
from chinvex.web.pages.common import reading, text_param, ui
from chinvex.web.render import render


def context_panel(config: ContextConfig) -> dict[str, Any]:
    """Everything the page shows about one context."""
    from chinvex.context.registry import SOURCE_LABELS
    from chinvex.doctor import check_failed_sources, check_stale_sources
    from chinvex.ingest.stats import collect_stats
    from chinvex.storage.coverage import current_coverage

    panel: dict[str, Any] = {
        "name": config.name, "aliases": config.aliases,
        "includes": [(SOURCE_LABELS.get(key, key), list(values)) for key, values in config.includes.entries()
                     if values],
        "ingested": Path(config.index.sqlite_path).exists(),
    }
    if not panel["ingested"]:
        return panel
    # The counts (one SQLite aggregate, which releases the GIL) run beside the stale check (a
    # stat per indexed file): at 100k chunks each takes tens of milliseconds.
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="chinvex-ui-stats") as pool:
        stats = pool.submit(collect_stats, config)
        with reading(config) as conn:
            assert conn is not None
            panel["stale"] = check_stale_sources(conn, config)
            panel["failed"] = check_failed_sources(conn, config)
            coverage = current_coverage(config, conn)
        panel["stats"] = stats.result()
    if coverage is not None:
        panel["coverage"] = {"ratio": coverage.ratio, "chunks": coverage.chunks, "with_vector": coverage.with_vector,
                             "checked_at": coverage.checked_at, "lost": coverage.store_lost,
                             "replaced": coverage.store_replaced}
    run = panel["stats"].get("last_run") or {}
    flags = []
    if panel["stale"].status != "ok":
        flags.append(f"stale: {fmt.counted(panel['stale'].count, 'source')} changed since the last ingest")
    if panel["failed"].status != "ok":
        flags.append(f"{fmt.counted(panel['failed'].count, 'source')} failing")
    if run and run.get("status") not in ("completed", None):
        flags.append(f"last ingest {run.get('status')}")
    if coverage is not None and (coverage.ratio < 1 or coverage.store_lost or coverage.store_replaced):
        flags.append("vectors missing for part of the index")
    if not run:
        flags.append("never ingested")
    panel["flags"] = flags
    return panel


def contexts_page(request: Request) -> Response:
    """GET /: every context (or only `?context=`); a broken context.json is shown with its error."""
    state = ui(request)
    only = text_param(request, "context", limit=200)
    if only:
        only = state.config(only).name  # an unknown name is a 404 naming it, not an empty page
    panels: list[dict[str, Any]] = []
    for entry in state.entries():
        if entry.config is None:
            panels.append({"name": entry.dir_name, "error": entry.error})
        elif not only or only == entry.config.name or only in entry.config.aliases:
            panels.append(context_panel(entry.config))
    current = only or state.default_context
    return render(request, "contexts.html", page="contexts", context=current, panels=panels)


def routes() -> list[Route]:
    return [Route("/", contexts_page)]
