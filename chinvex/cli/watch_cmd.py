"""`chinvex watch`: re-ingest contexts as their sources change (`chinvex.ingest.watch`)."""

from __future__ import annotations

import signal
import sys
import threading
from typing import Any, Optional

import orjson
import typer

from chinvex.cli.app import app
from chinvex.cli.options import JSON_OPTION
from chinvex.errors import EXIT_INTERRUPTED


def _human(event: dict[str, Any]) -> str:
    """One line per watcher event; a run's line starts with its time (`2026-11-24 14:03 UTC`)."""
    from chinvex.fmt import counted, when

    kind = event["event"]
    if kind == "watching":
        return (f"watching {counted(len(event['roots']), 'folder')} for {', '.join(event['contexts'])} "
                f"(Ctrl-C to stop)")
    if kind == "ingest":
        s, c = event["sources"], event["chunks"]
        what = (f"{s['indexed']} ingested, {s['removed']} removed, {counted(c['written'], 'chunk')} new, "
                f"{c['deleted']} deleted" if s["indexed"] or s["removed"] else "no change")
        errors = f", {counted(s['errors'], 'error')}" if s["errors"] else ""
        return f"{when(event['at'])} {event['context']}: {what}{errors} ({event['duration_s']:.1f} s, {event['trigger']})"
    if kind == "stopped":
        return "stopped"
    return f"{kind}: {event.get('message', '')}"


@app.command("watch")
def watch_command(
    context: Optional[list[str]] = typer.Option(
        None, "--context", help="Context name or alias (repeat for several); default: CHINVEX_CONTEXT, "
        "else the context whose source folders contain the current directory."),
    all_contexts: bool = typer.Option(False, "--all", help="Watch every context."),
    debounce_ms: int = typer.Option(400, "--debounce-ms", help="Wait this long for a burst of changes to end."),
    no_catch_up: bool = typer.Option(False, "--no-catch-up", help="Do not ingest once at start."),
    json_out: bool = JSON_OPTION,
) -> None:
    """Keep contexts current: ingest each one again whenever its sources change (one JSON line
    per run with --json). Ctrl-C stops after the running ingest; a second Ctrl-C stops at once."""
    from chinvex.cli.commands import _resolve_many
    from chinvex.errors import UsageError
    from chinvex.context.registry import Registry
    from chinvex.ingest.watch import Watcher

    if all_contexts and context:
        raise UsageError("--all and --context: give one or the other")
    if not 50 <= debounce_ms <= 60_000:
        raise UsageError(f"--debounce-ms {debounce_ms}: expected 50 to 60000")
    if all_contexts:
        entries = Registry().entries()
        for entry in entries:
            if entry.config is None:
                from chinvex.fmt import visible_controls

                sys.stderr.write(visible_controls(f"warning: {entry.path}: {entry.error}; not watched") + "\n")
        configs = [e.config for e in entries if e.config is not None]
        if not configs:
            raise UsageError("--all: there are no contexts; create one with 'chinvex context create'")
    else:
        configs = _resolve_many(context, json_out=json_out)

    def emit(event: dict[str, Any]) -> None:
        if json_out:
            sys.stdout.write(orjson.dumps(event).decode() + "\n")
        else:
            stream = sys.stderr if event["event"] in ("warning", "error") else sys.stdout
            stream.write(_human(event) + "\n")
        sys.stdout.flush()
        sys.stderr.flush()

    stop = threading.Event()

    def on_signal(signum: int, frame: Any) -> None:
        if stop.is_set():
            raise KeyboardInterrupt
        stop.set()
        if not json_out:
            sys.stderr.write("stopping after the running ingest (Ctrl-C again to stop now)\n")

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    relay = _serve_relay()
    try:
        Watcher(configs, emit=emit, debounce_ms=debounce_ms, stop=stop, catch_up=not no_catch_up).run()
    except KeyboardInterrupt:
        emit({"event": "stopped", "at": "", "forced": True})
        raise typer.Exit(EXIT_INTERRUPTED) from None
    finally:
        if relay is not None:
            relay.close()
        for s, handler in previous.items():
            signal.signal(s, handler)


def _serve_relay() -> Any:
    """While it runs, the watcher answers other shells' search, answer and pack (chinvex.relay)
    with an engine it makes on the first request and keeps warm."""
    import threading

    from chinvex.api import Engine
    from chinvex.relay.handlers import start_for

    made: list[Engine] = []
    lock = threading.Lock()

    def engine() -> Engine:
        with lock:
            if not made:
                made.append(Engine(server=True))
            return made[0]

    return start_for(engine)
