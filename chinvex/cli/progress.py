"""Progress of an ingest, shown however the user is watching.

On a terminal, a rich bar on stderr (sources done, chunks embedded, chunks/s, elapsed, ETA).
Piped or logged, a plain line on stderr every few seconds, so a long ingest (the demo embeds
thousands of chunks) is never silent. With `--json`, nothing unless `--progress` is given, and
then one JSON object per line on stderr, so stdout stays one JSON document.

rich also treats a pipe as a terminal under FORCE_COLOR (set in many CI set-ups), and a live bar
written into a log is a stream of cursor movements: the bar is drawn only when stderr really is
a terminal.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from typing import Literal

import orjson

from chinvex.cli.ingest_report import absolute
from chinvex.ingest.summary import Decision

Mode = Literal["bar", "lines", "json", "off"]
ENV_EVERY = "CHINVEX_PROGRESS_EVERY"
DEFAULT_EVERY_S = 10.0


def choose_mode(flag: bool | None, *, json_out: bool, quiet: bool) -> Mode:
    """`--progress/--no-progress` when given, else a bar on a terminal and lines otherwise;
    `--json` and `--quiet` show nothing unless `--progress` asks."""
    if flag is False or (quiet and flag is None):
        return "off"
    if json_out:
        return "json" if flag else "off"
    return "bar" if is_terminal() else "lines"


def every_s() -> float:
    """Seconds between two progress lines (CHINVEX_PROGRESS_EVERY, for logs that want more or less)."""
    try:
        return max(0.05, float(os.environ.get(ENV_EVERY, DEFAULT_EVERY_S)))
    except ValueError:
        return DEFAULT_EVERY_S


def duration(seconds: float) -> str:
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {seconds:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


class Counters:
    """What an ingest has done so far, and what that says about the rest."""

    def __init__(self) -> None:
        self.started = time.monotonic()
        self.total = 0
        self.done = 0
        self.embedded = 0
        self.last = ""

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def rate(self) -> float:
        return self.embedded / self.elapsed if self.elapsed > 0 else 0.0

    def eta(self) -> float | None:
        """Seconds left at the pace so far, by sources; None until one source is done."""
        if not self.done or self.done >= self.total:
            return None
        return self.elapsed / self.done * (self.total - self.done)

    def line(self, context: str) -> str:
        parts = [f"ingest {context}: {self.done}/{self.total} sources",
                 f"{self.embedded:,} chunks embedded ({self.rate():.0f}/s)", f"{duration(self.elapsed)} elapsed"]
        eta = self.eta()
        if eta is not None:
            parts.append(f"about {duration(eta)} left")
        if self.total and self.done >= self.total:
            # Every source is read; the last batch is still being embedded and written.
            parts.append("finishing: embedding the last batch")
        elif self.last:
            parts.append(f"last: {self.last}")
        return " · ".join(parts)

    def event(self, context: str) -> dict[str, object]:
        eta = self.eta()
        return {"event": "progress", "context": context, "sources_done": self.done, "sources_total": self.total,
                "chunks_embedded": self.embedded, "chunks_per_s": round(self.rate(), 1),
                "elapsed_s": round(self.elapsed, 1), "eta_s": None if eta is None else round(eta, 1),
                "last_source": self.last or None}


class IngestProgress:
    """The ingest pipeline's progress sink (`chinvex.ingest.pipeline.ProgressSink`)."""

    def __init__(self, context: str, *, mode: Mode, verbose: bool, every: float | None = None,
                 named: frozenset[str] = frozenset()):
        """`named`: the sources the context names (absolute paths); one of them skipped is kept
        in `named_skips`, so the summary can say why without --verbose."""
        from rich.console import Console

        from chinvex.cli.output import console

        self.context = context
        self.mode = mode
        self.verbose = verbose
        self.every = every if every is not None else every_s()
        self.counters = Counters()
        self.console = Console(stderr=True)
        self.out = console()
        self._bar = None
        self._task = None
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None
        self.named = named
        self.named_skips: list[Decision] = []

    def start(self, total: int) -> None:
        self.counters = Counters()
        self.counters.total = total
        if self.mode == "bar":
            self._start_bar(total)
        elif self.mode in ("lines", "json"):
            self._ticker = threading.Thread(target=self._tick, name="chinvex-progress", daemon=True)
            self._ticker.start()

    def _start_bar(self, total: int) -> None:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self._bar = Progress(
            TextColumn("[bold]ingest"), BarColumn(), MofNCompleteColumn(),
            TextColumn("sources · {task.fields[embedded]} chunks embedded ({task.fields[rate]}/s) {task.fields[eta]}"),
            TimeElapsedColumn(), console=self.console, transient=True,
        )
        self._task = self._bar.add_task("ingest", total=total, embedded=0, rate=0, eta="")
        self._bar.start()

    def _refresh_bar(self, advance: int = 0) -> None:
        if self._bar is not None:
            eta = self.counters.eta()
            self._bar.update(self._task, advance=advance, embedded=f"{self.counters.embedded:,}",
                             rate=f"{self.counters.rate():.0f}", eta=f"· about {duration(eta)} left" if eta else "")

    def _tick(self) -> None:
        while not self._stop.wait(self.every):
            self._emit()

    def _emit(self) -> None:
        if self.mode == "json":
            sys.stderr.write(orjson.dumps(self.counters.event(self.context)).decode() + "\n")
        else:
            from chinvex.fmt import visible_controls

            sys.stderr.write(visible_controls(self.counters.line(self.context)) + "\n")
        sys.stderr.flush()

    def advance(self, label: str) -> None:
        self.counters.done += 1
        self.counters.last = label
        self._refresh_bar(advance=1)

    def embedded(self, count: int) -> None:
        self.counters.embedded += count
        self._refresh_bar()

    def decision(self, decision: Decision) -> None:
        if decision.action == "excluded" and self.named and absolute(decision.source_uri) in self.named:
            self.named_skips.append(decision)
        if not self.verbose:
            return
        from rich.markup import escape

        from chinvex.fmt import visible_controls

        detail = f" ({decision.detail})" if decision.detail else ""
        line = f"{decision.action}: {decision.reason}  {decision.source_uri}{detail}"
        target = self._bar.console if self._bar is not None else self.out
        target.print(escape(visible_controls(line)), highlight=False, soft_wrap=True)

    def finish(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None
        if self._ticker is not None:
            self._stop.set()
            self._ticker.join(timeout=2)
            self._ticker = None


class Ticker:
    """Progress of a long command without a bar of its own (export, import, doctor --repair):
    `what` and the counts so far, so a big job is never silent. On a terminal a live status line
    (rich, on stderr, gone when the command ends); otherwise a plain line every few seconds.
    Counts are bumped with `count(kind)` / `add(kind, n)` from the working thread; a daemon
    thread draws them."""

    def __init__(self, what: str, *, enabled: bool = True, every: float | None = None):
        self.what = what
        self.counts: dict[str, int] = {}
        self.started = time.monotonic()
        self.every = every if every is not None else every_s()
        self.live = enabled and is_terminal()
        self._status = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="chinvex-ticker", daemon=True) if enabled else None

    def __enter__(self) -> Ticker:
        if self.live:
            from rich.console import Console

            self._status = Console(stderr=True).status(self._markup(), spinner="dots")
            self._status.start()
        if self._thread is not None:
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2)
        if self._status is not None:
            self._status.stop()
            self._status = None

    def count(self, kind: str) -> None:
        self.add(kind, 1)

    def add(self, kind: str, n: int) -> None:
        self.counts[kind] = self.counts.get(kind, 0) + n

    def line(self) -> str:
        from chinvex.fmt import counted

        done = ", ".join(counted(n, kind) for kind, n in list(self.counts.items())) or "starting"
        return f"{self.what}: {done} · {duration(time.monotonic() - self.started)} elapsed"

    def _markup(self) -> str:
        from rich.markup import escape

        from chinvex.fmt import visible_controls

        return escape(visible_controls(self.line()))

    def _run(self) -> None:
        from chinvex.fmt import visible_controls

        while not self._stop.wait(min(self.every, 0.5) if self.live else self.every):
            if self._status is not None:
                self._status.update(self._markup())
                continue
            sys.stderr.write(visible_controls(self.line()) + "\n")
            sys.stderr.flush()


def is_terminal() -> bool:
    """Whether stderr, where progress is drawn, is an actual terminal."""
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):  # replaced or closed stderr
        return False
