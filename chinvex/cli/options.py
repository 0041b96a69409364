"""Options shared by every command."""

import typer

JSON_OPTION = typer.Option(False, "--json", help="Print one JSON document on stdout.")
CONTEXT_HELP = ("Context name or alias (default: CHINVEX_CONTEXT, else the context whose source "
                "folders contain the current directory).")


FILTER_HELP = ("Exact predicate (filter expression language), e.g. \"doc.source_type = 'codex_session' "
               "AND doc.mtime >= '2026-03-01' AND chunk.text LIKE '%auth.py%'\"; see docs/DESIGN.md.")


def checked_filter(expression: str | None) -> str | None:
    """`--filter` parsed before any work: a mistake is a usage error naming the column."""
    if expression is None or not expression.strip():
        return None
    from chinvex.errors import UsageError
    from chinvex.retrieval import fel

    try:
        fel.parse(expression)
    except fel.FilterError as exc:
        raise UsageError(str(exc)) from None
    return expression
