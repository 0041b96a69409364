"""`chinvex doctor`: check a context's index for damage and inconsistency; `--repair` fixes
what it can and says what it cannot."""

from __future__ import annotations

from typing import Optional

import typer

from chinvex.cli.app import app
from chinvex.cli.options import CONTEXT_HELP, JSON_OPTION
from chinvex.cli.output import emit


@app.command("doctor")
def doctor(
    context: Optional[str] = typer.Option(None, "--context", help=CONTEXT_HELP),
    repair: bool = typer.Option(False, "--repair", help="Fix what can be fixed (takes the context's lock)."),
    wait: bool = typer.Option(False, "--wait", help="Wait for a running ingest to finish instead of "
                              "failing (--repair) or reporting its batch in flight."),
    json_out: bool = JSON_OPTION,
) -> None:
    """Check SQLite, the full-text index, vectors, fingerprints and sources; exit 1 while
    problems remain."""
    from chinvex.cli.context_choice import context_name
    from chinvex.doctor import diagnose, format_report

    from chinvex.cli.progress import Ticker

    name = context_name(context, json_mode=json_out)
    with Ticker(f"doctor --repair {name}", enabled=repair and not json_out) as ticker:
        report = diagnose(name, repair=repair, wait=wait, progress=ticker.add)
    emit(report.as_json(), json_mode=json_out, human=format_report(report))
    if not report.ok:
        raise typer.Exit(1)
