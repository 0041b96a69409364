"""`chinvex rm` and `chinvex compact` (`chinvex.ingest.remove`)."""

from __future__ import annotations

from typing import Optional

import typer

from chinvex.cli.app import app
from chinvex.cli.options import CONTEXT_HELP, JSON_OPTION
from chinvex.cli.output import emit


def _mb(n: int) -> str:
    from chinvex import fmt

    return fmt.size(n)


@app.command("rm")
def rm_command(
    targets: Optional[list[str]] = typer.Argument(None, help="Document ids, or paths (anything with a path "
                                                  "separator, or that exists): every document read from them."),
    context: Optional[str] = typer.Option(None, "--context", help=CONTEXT_HELP),
    purge: bool = typer.Option(False, "--purge", help="Also forget every tombstone and compact the index: "
                               "removed documents return when their sources are next read."),
    json_out: bool = JSON_OPTION,
) -> None:
    """Remove documents from a context's index; they stay out on later ingests while unchanged."""
    from chinvex.cli.commands import _resolve
    from chinvex.errors import NotFoundError
    from chinvex.ingest.remove import compact, remove

    config = _resolve(context, json_out=json_out)
    done = remove(config, list(targets or []), purge=purge)
    if targets and not done.removed:
        raise NotFoundError(f"nothing in context {config.name} matches {', '.join(done.not_found)}")
    result = {"context": config.name, "removed": done.removed, "not_found": done.not_found,
              "tombstones_purged": done.tombstones_purged}
    if purge:
        result["compact"] = compact(config, purge=False)
    from chinvex.fmt import counted

    lines = [f"removed {counted(len(done.removed), 'document')} from {config.name}"]
    lines += [f"  {d['doc_id']}  {d['title'] or ''}  ({d['source']})" for d in done.removed[:50]]
    if done.not_found:
        lines.append("not found: " + ", ".join(done.not_found))
    if purge:
        c = result["compact"]
        lines.append(f"tombstones purged: {done.tombstones_purged}; index {_mb(c['before']['total'])} -> "
                     f"{_mb(c['after']['total'])}")
    from rich.markup import escape

    emit(result, json_mode=json_out, human=escape("\n".join(lines)))


@app.command("compact")
def compact_command(
    context: Optional[str] = typer.Option(None, "--context", help=CONTEXT_HELP),
    json_out: bool = JSON_OPTION,
) -> None:
    """VACUUM and FTS5 optimize of hybrid.db, VACUUM of the Chroma store; prints the bytes before
    and after. Documents taken out with 'chinvex rm' stay out ('rm --purge' forgets them)."""
    from chinvex.cli.commands import _resolve
    from chinvex.ingest.remove import compact

    config = _resolve(context, json_out=json_out)
    # Reclaiming space must not undo `rm`: the removals are kept (`tombstones_purged` is 0).
    result = compact(config, purge=False)
    emit(result, json_mode=json_out,
         human=(f"{config.name}: {_mb(result['before']['total'])} -> {_mb(result['after']['total'])} "
                f"(hybrid.db {_mb(result['before']['hybrid_db'])} -> {_mb(result['after']['hybrid_db'])}, "
                f"chroma {_mb(result['before']['chroma'])} -> {_mb(result['after']['chroma'])})"))
