"""Ingest: the history of a context's ingest runs (`ingest_runs`, as `chinvex stats` reads its
last one) with durations, counts, errors and skipped files by reason; an "ingest now" button
(a POST with the CSRF token) that starts `run_ingest` in the background (`chinvex.web.jobs`); and
a small JSON endpoint the page polls to move its progress bar.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from chinvex.web.pages.common import int_param, reading, selected_config, text_param, ui
from chinvex.web.render import render, url


def with_skip_words(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each run with `skipped_words`: its files not indexed by reason, in the words `chinvex
    ingest` uses (`5 in excluded folders, 1 not a supported format`), '' when none."""
    from chinvex.ingest.summary import skipped_in_words

    for run in runs:
        skipped = ((run.get("stats") or {}).get("sources") or {}).get("skipped")
        run["skipped_words"] = skipped_in_words(skipped) if isinstance(skipped, dict) else ""
    return runs


def ingest_page(request: Request) -> Response:
    """GET /ingest?job=: the history, and the run this server started (or is running) for the
    context, whose progress the page's script follows."""
    from chinvex.storage.runs import iter_runs

    config = selected_config(request)
    state = ui(request)
    limit = int_param(request, "runs", 30, low=1, high=500)
    runs: list[dict[str, Any]] = []
    with reading(config) as conn:
        if conn is not None:
            runs = with_skip_words(list(iter_runs(conn, limit)))
    job_id = text_param(request, "job", limit=40)
    job = state.jobs.get(job_id) if job_id else None
    if job is not None and job.context != config.name:
        job = None
    job = job or state.jobs.running(config.name)
    return render(request, "ingest.html", page="ingest", context=config.name, runs=runs,
                  job=job.as_json() if job else None, limit=limit)


async def ingest_start(request: Request) -> Response:
    """POST: start an ingest of the form's context (or join the one running) and show it."""
    form = await request.form()
    state = ui(request)
    config = state.config(str(form.get("context") or "") or None)
    job = state.jobs.start(config, embedder_factory=lambda: state.embedder_for(config))
    return RedirectResponse(url("/ingest", context=config.name, job=job.job_id), status_code=303)


def ingest_status(request: Request) -> Response:
    """GET /api/ingest/{job_id}: the run's figures as JSON (a GET: reading them changes nothing)."""
    job = ui(request).jobs.get(request.path_params["job_id"])
    if job is None:
        return JSONResponse({"error": "no such ingest job"}, status_code=404)
    return JSONResponse(job.as_json())


def routes() -> list[Route]:
    return [Route("/ingest", ingest_page), Route("/ingest", ingest_start, methods=["POST"]),
            Route("/api/ingest/{job_id}", ingest_status)]
