"""Memories: what agents added with `recall_add` (`chinvex memory list`), each
with its usage and feedback figures (`recall_feedback`'s counts and usefulness rate) and the
latest feedback notes; buttons record feedback from the person reading them, through the same
`record_feedback` the MCP tool uses (a POST with the run's CSRF token).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from chinvex.errors import NotFoundError, UsageError
from chinvex.web.pages.common import reading, selected_config, ui
from chinvex.web.render import render, url

SESSION_ID = "chinvex-ui"
"""The session a person's feedback from the UI is recorded under."""
RECENT_FEEDBACK = 5


def memories_page(request: Request) -> Response:
    """GET /memories: every item of the context, promoted pointers included (they say where
    the item went)."""
    from chinvex.memory.feedback import FEEDBACK_KINDS, memory_stats, recent_feedback
    from chinvex.memory.items import list_memories

    config = selected_config(request)
    items: list[dict[str, Any]] = []
    with reading(config) as conn:
        if conn is not None:
            for item in list_memories(conn, include_promoted=True):
                notes = recent_feedback(conn, item.item_id, RECENT_FEEDBACK)
                items.append({"item": item, "stats": memory_stats(conn, item.item_id), "feedback": notes})
    return render(request, "memories.html", page="memories", context=config.name, items=items, kinds=FEEDBACK_KINDS)


async def memory_feedback(request: Request) -> Response:
    """POST: record one feedback on an item (the guard has checked origin and CSRF token)."""
    form = await request.form()
    context = str(form.get("context") or "")
    item_id = str(form.get("item_id") or "").strip()
    kind = str(form.get("feedback") or "").strip()
    note = str(form.get("note") or "").strip()[:2000] or None
    from starlette.concurrency import run_in_threadpool

    config = ui(request).config(context or None)
    await run_in_threadpool(_record, config, item_id, kind, note)
    return RedirectResponse(url("/memories", context=config.name) + f"#item-{item_id}", status_code=303)


def _record(config: Any, item_id: str, kind: str, note: str | None) -> None:
    from chinvex.api import open_index
    from chinvex.memory.feedback import FEEDBACK_KINDS, record_feedback
    from chinvex.memory.items import get_memory, redactor_for

    if kind not in FEEDBACK_KINDS:
        raise UsageError(f"feedback {kind!r}: expected one of {', '.join(FEEDBACK_KINDS)}")
    path = Path(config.index.sqlite_path)
    if not path.exists():
        raise NotFoundError(f"Context {config.name} has no index yet.")
    conn = open_index(config)
    try:
        if get_memory(conn, item_id) is None:
            raise NotFoundError(f"No knowledge item {item_id!r} in context {config.name}.")
        record_feedback(conn, item_id=item_id, session_id=SESSION_ID, kind=kind, context=note,
                        duplicate_of=None, redactor=redactor_for(config))
    finally:
        conn.close()


def routes() -> list[Route]:
    return [Route("/memories", memories_page), Route("/memories/feedback", memory_feedback, methods=["POST"])]
