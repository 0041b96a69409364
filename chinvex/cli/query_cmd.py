"""`chinvex query --rql`: exact, repeatable questions in the Recall Query Language
(chinvex.retrieval.rql parses and plans, chinvex.retrieval.rql_run runs)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import typer

from chinvex.cli.app import app
from chinvex.cli.options import CONTEXT_HELP, JSON_OPTION
from chinvex.cli.output import emit

TEXT_LINES = 6
"""Lines of `chunk.text` shown per row in human output (all of it with --json)."""
CELL_WIDTH = 60


@app.command("query")
def query_command(
    rql_text: str = typer.Option(..., "--rql", help="An RQL statement, or @FILE to read it from FILE: SELECT "
                                 "<columns> FROM doc|chunk [USING semantic('...')[, lexical('...')]] "
                                 "[FILTER <filter expression>] [ORDER BY <column> [ASC|DESC], ...] "
                                 "[LIMIT n [OFFSET m]]; see docs/DESIGN.md."),
    context: Optional[str] = typer.Option(None, "--context", help=CONTEXT_HELP),
    explain: bool = typer.Option(False, "--explain", help="Also print the plan: the search legs, the filter, "
                                 "the whole order with its tie-breaks, and the SQL with its parameters."),
    json_out: bool = JSON_OPTION,
) -> None:
    """Run a Recall Query Language statement: exact rows of documents or chunks, optionally
    ranked by search."""
    from chinvex.cli.commands import _resolve
    from chinvex.retrieval import rql
    from chinvex.retrieval.search import prefetch_vector_store

    plan = rql.parse(_statement(rql_text))  # a mistake is a usage error before any work
    config = _resolve(context, json_out=json_out)
    if plan.mode in ("vector", "hybrid"):
        prefetch_vector_store([config])
    from chinvex.retrieval.rql_run import run

    result = run(config, plan)
    if json_out:
        emit(result.as_json(explain=explain), json_mode=True)
        return
    from chinvex.cli.output import warn

    lines = _explain_lines(rql.explain(plan, config.name)) if explain else []
    emit({}, json_mode=False, human="\n".join(lines + _table(result)))
    for warning in result.warnings:  # on stderr: stdout holds the rows only
        warn(warning, json_mode=False)


def _statement(value: str) -> str:
    """`--rql` itself, or the contents of the file `@FILE` names (a missing or unreadable file
    is a usage error naming it)."""
    from chinvex.errors import UsageError

    if not value.startswith("@"):
        return value
    path = Path(value[1:]).expanduser()
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UsageError(f"--rql @{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"--rql @{path}: cannot read it ({type(exc).__name__}: {exc})") from None


def _cell(column: str, value: Any) -> str:
    """A value as a person reads it: scores with 3 decimals, dates as `2026-11-24 14:03 UTC`
    (--json keeps the ISO stamps), long text cut with an ellipsis."""
    from chinvex import fmt
    from chinvex.retrieval.fel import FIELDS

    if value is None:
        return fmt.MISSING
    if column == "score":
        return fmt.score(value)
    field = FIELDS.get(column)
    if field is not None and field.kind == "date":
        return fmt.when(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ", ".join(str(v) for v in value) or fmt.MISSING
    text = " ".join(str(value).split())
    if len(text) <= CELL_WIDTH:
        return text
    if column in ("doc.path", "doc.source"):  # the file name says most: keep the end
        return "…" + text[-(CELL_WIDTH - 1):]
    return text[:CELL_WIDTH - 1] + "…"


def _table(result: Any) -> list[str]:
    """Aligned columns, one line per row; a selected chunk text follows its row, indented."""
    from rich.markup import escape

    from chinvex import fmt

    columns = [c for c in result.plan.columns if c != "chunk.text"]
    shows_text = "chunk.text" in result.plan.columns
    cells = [[_cell(c, row[c]) for c in columns] for row in result.rows]
    widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(columns)]
    lines: list[str] = []
    if columns:
        lines.append("[bold]" + escape("  ".join(c.ljust(w) for c, w in zip(columns, widths)).rstrip()) + "[/bold]")
    for row, line in zip(result.rows, cells):
        if columns:
            lines.append(escape("  ".join(v.ljust(w) for v, w in zip(line, widths)).rstrip()))
        if shows_text:
            text = [l for l in (row["chunk.text"] or "").splitlines() if l.strip()]
            lines.extend("    " + escape(l[:160]) for l in text[:TEXT_LINES])
            if len(text) > TEXT_LINES:
                lines.append(f"[dim]    … {len(text) - TEXT_LINES} more lines (--json has all)[/dim]")
    plan = result.plan
    if not result.rows:
        lines.append("No rows.")
    how = "sql" if result.mode == "sql" else f"{result.mode} search, {result.search_hits} hits ranked"
    more = ""
    if not plan.limit_given and len(result.rows) == plan.limit:
        more = f"; LIMIT {plan.limit} by default, use LIMIT/OFFSET for more"
    count = f"{len(result.rows)} row" + ("" if len(result.rows) == 1 else "s")
    lines.append(f"[dim]{count} ({escape(how)}, {fmt.duration_ms(result.took_ms)}){escape(more)}[/dim]")
    return lines


def _explain_lines(plan: dict[str, Any]) -> list[str]:
    from rich.markup import escape

    legs = "; ".join(f"{l['leg']} leg: {l['function']}({l['text']!r})" for l in plan["legs"])
    how = (f"{plan['mode']} search of the {plan['search_depth']} best chunks ({legs})"
           if plan["legs"] else "SQL only (no USING)")
    order = ", ".join(f"{k['key']} {k['direction']}" + (" (default)" if k["tie_break"] else "")
                      for k in plan["order"])
    limit = f"{plan['limit']}" + (" (default)" if plan["limit_default"] else "")
    text = [f"plan: FROM {plan['table']}: {how}",
            f"filter: {plan['filter'] or '(none)'}",
            f"columns: {', '.join(plan['columns'])}",
            f"order: {order}",
            f"limit: {limit}, offset: {plan['offset']}",
            "sql:"] + ["  " + line for line in plan["sql"].splitlines()] + [f"params: {plan['params']!r}", ""]
    return [f"[dim]{escape(line)}[/dim]" if line else "" for line in text]
