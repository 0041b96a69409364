"""`chinvex export` and `chinvex import` (`chinvex.context.portable`)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import typer

from chinvex.cli.app import app
from chinvex.cli.options import CONTEXT_HELP, JSON_OPTION
from chinvex.cli.output import emit


@app.command("export")
def export_command(
    context: Optional[str] = typer.Option(None, "--context", help=CONTEXT_HELP),
    out: Optional[str] = typer.Option(None, "--out", help="File to write (default: stdout)."),
    include_vectors: bool = typer.Option(False, "--include-vectors", help="Also export each chunk's vector "
                                         "(an import with the same embedder then embeds nothing)."),
    json_out: bool = typer.Option(False, "--json", help="Print the summary (what was written where) as one "
                                  "JSON document on stdout; needs --out."),
) -> None:
    """Write a context's index as JSONL (schemas/export_record.schema.json), streamed."""
    from chinvex.cli.commands import _resolve
    from chinvex.errors import UsageError
    from chinvex.context.portable import export

    from chinvex.cli.progress import Ticker

    if json_out and out is None:
        raise UsageError("--json prints the export's summary and needs --out FILE (without --out the "
                         "export itself is written to stdout)")
    config = _resolve(context, json_out=json_out)
    if out is None:
        with Ticker(f"export {config.name}") as ticker:
            counts = export(config, sys.stdout.buffer, include_vectors=include_vectors, on_record=ticker.count)
        sys.stdout.buffer.flush()
    else:
        target = Path(out)
        partial = target.with_name(target.name + ".partial")
        try:
            with open(partial, "wb") as handle, Ticker(f"export {config.name}", enabled=not json_out) as ticker:
                counts = export(config, handle, include_vectors=include_vectors, on_record=ticker.count)
            partial.replace(target)  # a reader never sees half a file under the final name
        except OSError as exc:
            partial.unlink(missing_ok=True)
            raise UsageError(f"--out {out}: cannot write: {exc.strerror or exc}") from None
        from chinvex.fmt import counted

        if json_out:
            emit({"context": config.name, "out": str(target), "include_vectors": include_vectors,
                  "counts": dict(counts)}, json_mode=True)
            return
        sys.stderr.write(f"exported {config.name} to {target}: "
                         + ", ".join(counted(n, kind) for kind, n in counts.items()) + "\n")


@app.command("import")
def import_command(
    file: str = typer.Argument(..., help="A file written by 'chinvex export'."),
    context: Optional[str] = typer.Option(None, "--context", help="The context to import into (it must exist)."),
    json_out: bool = JSON_OPTION,
) -> None:
    """Import an export into a context: every line is checked first, so a damaged file changes
    nothing; importing the same file twice changes nothing."""
    from chinvex.cli.commands import _resolve
    from chinvex.errors import UsageError
    from chinvex.context.portable import import_file

    path = Path(file)
    if not path.is_file():
        raise UsageError(f"{file}: no such file")
    from chinvex.errors import ChinvexError, ContextNotFoundError

    try:
        config = _resolve(context, json_out=json_out)
    except ContextNotFoundError as exc:
        if context is None:
            raise
        raise ChinvexError(f"Unknown context: {exc.name}. Create it first ('chinvex context create "
                           f"{exc.name}'), then import into it.", code=exc.code, exit_code=exc.exit_code) from None
    from chinvex.cli.progress import Ticker

    with Ticker(f"import {path.name} into {config.name}", enabled=not json_out) as ticker:
        result = import_file(config, path, on_record=ticker.count)
    emit(result, json_mode=json_out,
         human=(f"imported {path} into {config.name}: {result['documents_imported']} documents "
                f"({result['documents_unchanged']} already there), {result['chunks_imported']} chunks, "
                f"{result['chunks_embedded']} embedded, {result['memories']} memories, {result['feedback']} feedback"))
