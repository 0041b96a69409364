"""Progress display for long commands: a rich bar on a terminal, nothing when piped."""

from __future__ import annotations

import sys

from chinvex.ingest.summary import Decision


class RichProgress:
    """The bar is drawn on stderr only when stderr really is a terminal: rich also treats a pipe
    as one under FORCE_COLOR (set in many CI set-ups for colours), and a live bar written into
    a log is a stream of cursor movements. `--json` turns it off (`show_bar=False`), so that a
    script reading stdout on a terminal gets one JSON document and nothing else."""

    def __init__(self, *, verbose: bool, show_bar: bool):
        from rich.console import Console

        self.verbose = verbose
        self.console = Console(stderr=True)
        from chinvex.cli.output import console

        self.out = console()
        self.show_bar = show_bar and is_terminal() and self.console.is_terminal
        self._progress = None
        self._task = None
        self._embedded = 0

    def start(self, total: int) -> None:
        if not self.show_bar:
            return
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self._progress = Progress(
            TextColumn("[bold]ingest"), BarColumn(), MofNCompleteColumn(),
            TextColumn("sources · {task.fields[embedded]} chunks embedded"), TimeElapsedColumn(),
            console=self.console, transient=True,
        )
        self._task = self._progress.add_task("ingest", total=total, embedded=0)
        self._progress.start()

    def advance(self, label: str) -> None:
        if self._progress is not None:
            self._progress.update(self._task, advance=1)

    def embedded(self, count: int) -> None:
        self._embedded += count
        if self._progress is not None:
            self._progress.update(self._task, embedded=self._embedded)

    def decision(self, decision: Decision) -> None:
        if not self.verbose:
            return
        from rich.markup import escape

        detail = f" ({decision.detail})" if decision.detail else ""
        line = f"{decision.action}: {decision.reason}  {decision.source_uri}{detail}"
        target = self._progress.console if self._progress is not None else self.out
        from chinvex.fmt import visible_controls

        target.print(escape(visible_controls(line)), highlight=False, soft_wrap=True)

    def finish(self) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None


def is_terminal() -> bool:
    """Whether stderr, where the bar is drawn, is an actual terminal."""
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):  # replaced or closed stderr
        return False
