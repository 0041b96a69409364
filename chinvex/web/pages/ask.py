"""Ask: a grounded answer from `chinvex.answer.service.answer` (the function behind `chinvex
answer` and MCP `chinvex_answer`), its `[chunk:id]` citations turned into numbered links that
open the exact lines or turns, its confidence (the calibrated gate's probability that it is right),
the sources listed under it, and, when the grounding gate refused, why, with the evidence that was
retrieved.
"""

from __future__ import annotations

import re
from typing import Any

from markupsafe import Markup, escape
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from chinvex.errors import UsageError
from chinvex.web.links import chunk_link
from chinvex.web.pages.common import int_param, selected_config, text_param, ui
from chinvex.web.render import render

_BRACKETS = re.compile(r"\[[^\[\]\n]{1,400}\]")
_FENCE = re.compile(r"^(?:```|~~~)[^\n]*\n(.*?)\n(?:```|~~~)\s*$", re.M | re.S)


def linked_answer(text: str, numbers: dict[str, int], links: dict[str, str]) -> Markup:
    """The answer escaped, in paragraphs, each citation group (`[chunk:a, chunk:b]`) replaced by
    numbered links `[1][2]` to the cited places (which ids a group cites is decided by
    `chinvex.answer.grounding.cited_ids`, as the CLI's renumbering does)."""
    from chinvex.answer.grounding import cited_ids

    def one(paragraph: str) -> Markup:
        parts: list[Markup] = []
        last = 0
        for match in _BRACKETS.finditer(paragraph):
            ids = [i for i in cited_ids(match.group(0)) if i in numbers]
            if not ids:
                continue
            parts.append(escape(paragraph[last:match.start()]))
            parts.extend(Markup('<a class="cite" href="{}" title="{}">[{}]</a>').format(links[i], i, numbers[i])
                         for i in ids)
            last = match.end()
        parts.append(escape(paragraph[last:]))
        return Markup("").join(parts)

    def block(paragraph: str) -> Markup:
        # an answer line may carry the fenced block it quotes ("add to config.toml:" + the block)
        fence = _FENCE.search(paragraph)
        if fence is None:
            return Markup("<p>{}</p>").format(one(paragraph))
        before = paragraph[:fence.start()].strip()
        lead = Markup("<p>{}</p>").format(one(before)) if before else Markup("")
        return lead + Markup('<pre class="snippet">{}</pre>').format(fence.group(1))

    paragraphs = [p for p in re.split(r"\n\s*\n", text.strip()) if p.strip()]
    return Markup("").join(block(p) for p in paragraphs)


def answer_view(response: Any) -> dict[str, Any]:
    context = response.context
    evidence = {c.chunk_id: c for c in response.evidence_pack.chunks}
    links = {}
    for chunk_id, chunk in evidence.items():
        meta = chunk.metadata
        links[chunk_id] = chunk_link(context=context, doc_id=str(meta.get("doc_id")), chunk_id=chunk_id,
                                     metadata=meta, line_start=meta.get("line_start"), query=response.query)
    numbers = {c.chunk_id: n for n, c in enumerate(response.citations, start=1)}
    citations = [{"n": numbers[c.chunk_id], "where": c.where or c.source_uri, "link": links.get(c.chunk_id),
                  "chunk_id": c.chunk_id, "quote": c.quote,
                  "stale": (evidence[c.chunk_id].metadata.get("freshness") or {}).get("stale") if c.chunk_id in evidence else False}
                 for c in response.citations]
    errors = {e.code: e.detail for e in response.errors}
    return {
        "html": linked_answer(response.answer, numbers, links) if response.answer else Markup(""),
        "citations": citations,
        "evidence": [{"chunk": c, "link": links[c.chunk_id]} for c in response.evidence_pack.chunks],
        "errors": errors, "refused": "GROUNDING_FAILED" in errors, "confidence": response.confidence,
    }


def ask_page(request: Request) -> Response:
    """GET /ask?q=&k=: a question changes nothing, so it is a GET (a link to an answer can be
    shared); the generator is the context's (`answer.generator` in context.json)."""
    from chinvex.answer.service import answer

    config = selected_config(request)
    question = text_param(request, "q")
    k = int_param(request, "k", 8, low=1, high=50)
    response = view = None
    error: str | None = None
    if question:
        try:
            response = answer(config, question, k=k, searcher=ui(request).searcher)
        except UsageError as exc:
            error = exc.message
        else:
            view = answer_view(response)
    return render(request, "ask.html", page="ask", context=config.name, question=question, k=k,
                  response=response, view=view, error=error, status=400 if error else 200)


def routes() -> list[Route]:
    return [Route("/ask", ask_page)]
