"""`chinvex pack`: the best chunks for a task, fitted into a token budget, to paste into an
agent's prompt (the Recall design's context assembly; `chinvex.pack`)."""

from __future__ import annotations

from typing import Optional

import typer

from chinvex.cli.app import app
from chinvex.cli.options import FILTER_HELP, JSON_OPTION, checked_filter
from chinvex.cli.output import emit


@app.command("pack")
def pack_command(
    task: str = typer.Argument(..., help="The task or question the pack is for."),
    context: Optional[list[str]] = typer.Option(
        None, "--context", help="Context name or alias (repeat for several); default: CHINVEX_CONTEXT, "
        "else the context whose source folders contain the current directory."),
    budget_tokens: int = typer.Option(2000, "--budget-tokens", help="Hard limit on the pack's size, in "
                                      "tokens of the built-in embedder's tokenizer (headers included)."),
    diversity: Optional[int] = typer.Option(None, "--diversity", help="At most this many chunks from one document."),
    source_types: str = typer.Option(None, "--source-types", help="Comma-separated: repo,codex_session,chat,note,agent_session,memory."),
    filter_expression: Optional[str] = typer.Option(None, "--filter", help=FILTER_HELP),
    json_out: bool = JSON_OPTION,
) -> None:
    """Ranked chunks packed into a token budget, deterministically, each with its provenance."""
    from chinvex.cli.commands import _resolve_many, _split_types
    from chinvex.errors import UsageError
    from chinvex.pack.service import MAX_BUDGET, build_pack
    from chinvex.retrieval.search import InvalidFilterError, prefetch_vector_store

    if not task.strip():
        raise UsageError("TASK is empty.")
    if not 1 <= budget_tokens <= MAX_BUDGET:
        raise UsageError(f"--budget-tokens {budget_tokens}: expected 1 to {MAX_BUDGET}")
    if diversity is not None and diversity < 1:
        raise UsageError(f"--diversity {diversity}: expected 1 or more")
    expression = checked_filter(filter_expression)
    configs = _resolve_many(context, json_out=json_out)
    from chinvex.relay.client import ask

    relayed = ask("pack", {"contexts": [c.name for c in configs], "task": task, "budget": budget_tokens,
                           "diversity": diversity, "source_types": _split_types(source_types),
                           "filter_expression": expression})
    if relayed is not None:
        from chinvex.models.responses import PackResponse

        response = PackResponse.model_validate(relayed)
    else:
        prefetch_vector_store(configs)
        try:
            response = build_pack(configs, task, budget=budget_tokens, diversity=diversity,
                                  source_types=_split_types(source_types), filter_expression=expression)
        except InvalidFilterError as exc:
            raise UsageError(f"--source-types: {exc.message}") from None
    if json_out:
        emit(response, json_mode=True)
        return
    from rich.markup import escape

    from chinvex.cli.output import warn

    from chinvex.fmt import counted

    cut = "; cut to fit" if response.truncated else ""
    summary = (f"[dim]{response.used_tokens} of {response.budget_tokens} tokens, "
               f"{counted(len(response.chunks), 'chunk')}{cut} ({escape(response.tokenizer)})[/dim]")
    # A larger budget only helps when something was found that did not fit.
    empty = ("Nothing relevant fits; try a larger --budget-tokens." if response.considered
             else f"Nothing in {escape(', '.join(response.contexts))} matches the task.")
    emit({}, json_mode=False, human=escape(response.text.rstrip()) + "\n\n" + summary
         if response.chunks else empty + "\n" + summary)
    for warning in response.warnings:
        warn(warning, json_mode=False)
