"""`chinvex answer`: a grounded, cited answer from a context (seed spec §3, §6).

With --json stdout is exactly the response schema v1 document (errors included, nothing added);
the outcome is also in the exit status: 0 answered (or --no-grounded), 1 grounding failed /
unknown context / unreadable index / generator error, 2 empty query, bad flag, or no --context
where none can be inferred (CONTEXT_NOT_FOUND in the response, with the list of contexts).
"""

from __future__ import annotations

from typing import Any, Optional

import typer

from chinvex.cli.app import app
from chinvex.cli.options import CONTEXT_HELP, FILTER_HELP, JSON_OPTION, checked_filter
from chinvex.errors import EXIT_FAILURE, EXIT_OK, EXIT_USAGE

_EXIT_FOR = {
    "EMPTY_QUERY": EXIT_USAGE,
    "CONTEXT_NOT_FOUND": EXIT_FAILURE,
    "RETRIEVAL_ERROR": EXIT_FAILURE,
    "GENERATOR_ERROR": EXIT_FAILURE,
}


@app.command("answer")
def answer_command(
    query: str = typer.Argument(..., help="The question, in plain words."),
    context: Optional[str] = typer.Option(None, "--context", help=CONTEXT_HELP),
    grounded: bool = typer.Option(
        True, "--grounded/--no-grounded",
        help="Refuse unless every paragraph cites the evidence (default); --no-grounded returns "
        "the generator's answer anyway, marked grounded=false if it does not pass."),
    k: int = typer.Option(8, "--k", help="Chunks of evidence to retrieve (1-200)."),
    source_types: str = typer.Option(
        None, "--source-types", help="Comma-separated: repo,codex_session,chat,note,agent_session,memory."),
    generator: str = typer.Option(
        None, "--generator",
        help="auto (an LLM the context names in answer.model when it can be used, else extractive), "
             "extractive (offline), anthropic or ollama; default: context.json answer.generator, else auto."),
    model: Optional[str] = typer.Option(
        None, "--model", help="The model of an anthropic or ollama generator; default: context.json answer.model."),
    filter_expression: Optional[str] = typer.Option(None, "--filter", help=FILTER_HELP),
    min_confidence: Optional[float] = typer.Option(
        None, "--min-confidence",
        help="Refuse an answer whose confidence (0-1, the calibrated gate's probability that it is right) is "
        "below this; default: context.json answer.min_confidence, else the built-in default."),
    json_out: bool = JSON_OPTION,
) -> None:
    """Answer a question from a context's index, citing the chunks it rests on."""
    from chinvex.errors import ChinvexError, ContextNotFoundError, UsageError
    from chinvex.models import AnswerError, AnswerResponse, Retrieval

    if not 1 <= k <= 200:
        raise UsageError(f"--k must be between 1 and 200 (got {k})")
    if min_confidence is not None and not 0.0 <= min_confidence <= 1.0:
        raise UsageError(f"--min-confidence must be between 0 and 1 (got {min_confidence})")
    types = [t.strip() for t in (source_types or "").split(",") if t.strip()] or None
    expression = checked_filter(filter_expression)

    def failure(code: str, detail: str, exit_status: int | None = None) -> None:
        response = AnswerResponse(
            context=context or "", query=query, grounded=False, answer="",
            retrieval=Retrieval(k=k, filters={"source_types": types} if types else {}, generator=generator),
            errors=[AnswerError(code=code, detail=detail)],  # type: ignore[arg-type]
        )
        _finish(response, json_out=json_out, grounded=grounded, exit_status=exit_status)

    if not query.strip():
        failure("EMPTY_QUERY", "The query is empty or whitespace only.")
        return
    from chinvex.cli.context_choice import context_config

    try:
        config = context_config(context, json_mode=json_out)
    except ContextNotFoundError as exc:
        failure("CONTEXT_NOT_FOUND", exc.message)
        return
    except ChinvexError as exc:
        if context is not None:
            raise
        # No --context and no default: the v1 response still says why (exit 2, as for any
        # command without a context; 1 when CHINVEX_CONTEXT names a missing one).
        failure("CONTEXT_NOT_FOUND", exc.message, exc.exit_code)
        return
    response = _answer(config, query, k=k, grounded=grounded, types=types, generator=generator, model=model,
                       expression=expression, min_confidence=min_confidence)
    _finish(response, json_out=json_out, grounded=grounded)


def _answer(config: Any, query: str, *, k: int, grounded: bool, types: list[str] | None, generator: str | None,
            model: str | None, expression: str | None, min_confidence: float | None) -> Any:
    """The answer from a running chinvex process (the relay) when it can give the same one,
    else computed here."""
    from chinvex.answer.generators import generator_name, generator_warnings
    from chinvex.models import AnswerResponse

    name = generator_name(generator, config, model)  # a bad --generator is a usage error, before any work
    relayed = None
    if name == "extractive" and min_confidence is None:
        # a remote model's answer may depend on this shell's keys, and the relay takes no refusal
        # point (a running process answers at the context's): both computed here
        from chinvex.relay.client import ask

        relayed = ask("answer", {"context": config.name, "query": query, "k": k, "grounded": grounded,
                                 "source_types": types, "generator": name, "model": model,
                                 "filter_expression": expression})
    if relayed is not None:  # chosen here: why auto answered extractively is this shell's to say
        response = AnswerResponse.model_validate(relayed)
        response.retrieval.warnings += generator_warnings(generator, config, model)
        return response
    from chinvex.answer.service import answer
    from chinvex.retrieval.search import prefetch_vector_store

    prefetch_vector_store([config])
    return answer(config, query, k=k, grounded=grounded, source_types=types, generator=generator,
                  model=model, filter_expression=expression, min_confidence=min_confidence)


def exit_code(response, *, grounded: bool) -> int:
    """DESIGN.md §10: 0 success, 1 failure (nothing found where something must be), 2 usage."""
    codes = [e.code for e in response.errors]
    for code in codes:
        if code in _EXIT_FOR:
            return _EXIT_FOR[code]
    if "GROUNDING_FAILED" in codes and grounded:
        return EXIT_FAILURE
    return EXIT_OK


def _finish(response, *, json_out: bool, grounded: bool, exit_status: int | None = None) -> None:
    from chinvex.cli.output import print_json

    if json_out:
        print_json(response)
    else:
        _print_human(response)
    code = exit_code(response, grounded=grounded) if exit_status is None else exit_status
    if code != EXIT_OK:
        raise typer.Exit(code)


def _print_human(response) -> None:
    """The answer first (its `[chunk:id]` markers shown as numbered source references), then the
    numbered sources with the words each answer rests on, then one line saying why when the answer was refused."""
    import sys

    from rich.markup import escape

    from chinvex import fmt
    from chinvex.answer.grounding import cited_ids
    from chinvex.cli.output import console

    errors = {e.code: e.detail for e in response.errors}
    for code in ("EMPTY_QUERY", "CONTEXT_NOT_FOUND", "RETRIEVAL_ERROR", "GENERATOR_ERROR"):
        if code in errors:
            sys.stderr.write(f"error: {fmt.visible_controls(errors[code])}\n")
            return
    chunks = {c.chunk_id: c for c in response.evidence_pack.chunks}
    numbers = {c.chunk_id: n for n, c in enumerate(response.citations, start=1)}
    answer = response.answer
    if numbers:
        import re

        def renumber(match: re.Match[str]) -> str:
            refs = [f"[{numbers[i]}]" for i in cited_ids(match.group(0)) if i in numbers]
            return "".join(refs) or match.group(0)

        answer = re.sub(r"\[\s*chunk\s*:[^\]\n]{1,400}\]", renumber, answer, flags=re.IGNORECASE)
    lines = [escape(answer)]
    if response.citations:
        lines.append("")
        lines.append("[bold]Sources[/bold]")
        for n, citation in enumerate(response.citations, start=1):
            said = f" — {citation.quote}" if citation.quote else ""
            lines.append("  " + escape(f"[{n}] {_where(citation, chunks.get(citation.chunk_id))}{said}"))
    if "GROUNDING_FAILED" in errors:
        lines.append("")
        lines.append(f"[yellow]refused:[/yellow] {escape(errors['GROUNDING_FAILED'])}")
        if response.evidence_pack.chunks and not response.citations:
            best = ", ".join(_where(None, c) for c in response.evidence_pack.chunks[:3])
            lines.append(f"[dim]closest retrieved: {escape(best)}[/dim]")
    if response.confidence is not None:
        lines.append(f"confidence {response.confidence:.2f}")
    r = response.retrieval
    status = "grounded" if response.grounded else "not grounded"
    model = f" ({r.model})" if r.model else ""
    lines.append(f"[dim]{status} · {r.generator}{model} · {len(response.evidence_pack.chunks)} chunks "
                 f"searched ({r.mode or 'no retrieval'}) · {fmt.duration_ms(r.took_ms)}[/dim]")
    for warning in r.warnings:
        lines.append(f"[yellow]warning:[/yellow] {escape(warning)}")
    console().print("\n".join(lines))


def _where(citation, chunk) -> str:
    """`path:start-end` or a conversation's title and turns, marked when the source changed."""
    meta = chunk.metadata if chunk is not None else {}
    where = (citation.where if citation is not None else None) or _place(meta)
    fresh = meta.get("freshness") or {}
    if fresh.get("stale"):
        where += f" [changed since indexing: {fresh.get('reason')}]"
    return where


def _place(meta: dict) -> str:
    where = str(meta.get("path") or meta.get("source_uri") or "")
    if meta.get("turn_start") is not None:
        title = meta.get("title") or where
        return f"“{title}” turns {meta['turn_start']}-{meta.get('turn_end', meta['turn_start'])}"
    if meta.get("line_start") is not None:
        return f"{where}:{meta['line_start']}-{meta.get('line_end', meta['line_start'])}"
    return where
