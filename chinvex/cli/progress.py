"""Progress display for long commands: a rich bar on a terminal, nothing when piped."""

from __future__ import annotations

import sys

from chinvex.ingest.summary import Decision


class RichProgress:
    def __init__(self, *, verbose: bool, show_bar: bool):
        from rich.console import Console

        self.verbose = verbose
        self.console = Console(stderr=True)
        self.out = Console(highlight=False, soft_wrap=True)
        self.show_bar = show_bar and self.console.is_terminal
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
        target.print(escape(line), highlight=False, soft_wrap=True)

    def finish(self) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None


def is_terminal() -> bool:
    return sys.stderr.isatty()
