"""The lines `chinvex ingest` prints when it is done (rich markup, escaped)."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from typing import Any


def absolute(path: str) -> str:
    """A path as a source's uri compares with it: user folder expanded, absolute."""
    return os.path.abspath(os.path.expanduser(path))


def named_sources(config: Any) -> frozenset[str]:
    """Every file or folder the context's includes name (`KIND=PATH` sessions too; `auto` names
    none), as absolute paths."""
    from chinvex.errors import UsageError
    from chinvex.ingest.session_stores import parse_entry
    from chinvex.models.context import SESSIONS_KEY

    named = set()
    for key, values in config.includes.entries():
        for value in values if isinstance(values, list) else []:
            if not isinstance(value, str) or not value.strip():
                continue
            if key == SESSIONS_KEY:
                try:
                    _agent, path = parse_entry(value)
                except UsageError:  # the ingest reports a malformed entry itself
                    continue
                if path is None:
                    continue
                value = path
            named.add(absolute(value.strip()))
    return frozenset(named)


def summary_lines(summary: Any, *, verbose: bool, strict: bool, named_skips: Sequence[Any] = ()) -> list[str]:
    """What was indexed, skipped, redacted and what failed; `verbose` adds each Codex thread's
    reading route. `named_skips`: decisions that skipped a source the context names itself
    (its only chat export, say): said with their reason on the "not indexed" line."""
    from rich.markup import escape

    from chinvex import fmt

    s = summary.sources
    c = summary.chunks
    not_sessions = (f", {s.skipped_unrecognised} skipped (not sessions)"
                    if s.skipped_unrecognised else "")
    lines = [
        f"{summary.context}: {s.indexed} ingested, {s.unchanged} unchanged, "
        f"{s.refreshed} touched, {s.removed} removed, {s.errors} failed{not_sessions} "
        f"({fmt.counted(s.scanned, 'source')} scanned in {summary.duration_s:.1f} s)",
        f"chunks: {c.get('written', 0)} new, {c.get('deleted', 0)} deleted, "
        f"{c.get('embedded', 0)} embedded, {c.get('reused', 0)} reused vectors",
    ]
    from chinvex.ingest.summary import skip_lines

    why: dict[str, list[str]] = {}
    for decision in named_skips:
        why.setdefault(decision.reason, []).append(
            f"{decision.source_uri}: {decision.detail}" if decision.detail else decision.source_uri)
    lines.extend(skip_lines(s.skipped, why))
    if summary.imported_kept:
        lines.append(f"kept {summary.imported_kept} imported sources from outside this context's folders "
                     "('chinvex rm' removes them)")
    if summary.paths:
        from collections import Counter

        routes = Counter(fmt.text(info.get("path")) for info in summary.paths.values() if isinstance(info, dict))
        lines.append("codex threads: " + ", ".join(f"{n} via {route}" for route, n in sorted(routes.items())))
        if verbose:
            for uri, info in sorted(summary.paths.items()):
                reason = f" ({info['reason']})" if isinstance(info, dict) and info.get("reason") else ""
                lines.append(f"  {fmt.text(info.get('path') if isinstance(info, dict) else info)}: {uri}{reason}")
    for root, info in sorted(summary.readers.items()):
        if verbose or info.get("stopped"):
            stopped = f"; stopped mid-run: {info['stopped']}" if info.get("stopped") else ""
            why = f"; {info['why']}" if info.get("why") else ""  # its own words may hold parentheses
            lines.append(f"codex reader for {root}: {info.get('reader')}{why}{stopped}")
    if summary.redactions:
        lines.append("secrets redacted: " + ", ".join(f"{n} {k}" for k, n in summary.redactions.items()))
    for skipped in summary.unrecognised[:20]:
        lines.append(f"skipped: {skipped.message}")
    if len(summary.unrecognised) > 20:
        lines.append(f"... {len(summary.unrecognised) - 20} more skipped files (see --json)")
    for warning in summary.warnings[:20]:
        lines.append(f"warning: {warning.message}")
    if len(summary.warnings) > 20:
        lines.append(f"... {len(summary.warnings) - 20} more warnings (see --json)")
    for error in summary.errors:
        lines.append(f"[red]error:[/red] {escape(error.message)}")
    if summary.errors and not strict:
        from chinvex.fmt import counted

        lines.append(f"{counted(len(summary.errors), 'source')} failed and will be retried by the next "
                     "ingest; the rest is indexed ('chinvex doctor' lists them)")
    return [escape(line) if not line.startswith("[red]") else line for line in lines]


def confirm_on_terminal(progress: Any, *, json_out: bool) -> Callable[[Any], bool] | None:
    """On a terminal, ask before a mass removal (`chinvex.ingest.run_state.MassRemoval`); piped
    or with --json there is nobody to ask: None, so the removal is held back until --yes."""
    if json_out or not (sys.stdin.isatty() and sys.stderr.isatty()):
        return None

    def ask(mass: Any) -> bool:
        import typer

        progress.finish()  # a live bar and a prompt cannot share the terminal
        return typer.confirm(f"{mass.describe()}. Remove them?", default=False, err=True)

    return ask
