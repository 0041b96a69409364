"""`chinvex blame` and `chinvex timeline`: from a line of code to the agent session behind it,
and the sessions and commits of a period in time order."""

from __future__ import annotations

import typer

from chinvex.cli.app import app
from chinvex.cli.options import CONTEXT_HELP, JSON_OPTION
from chinvex.cli.output import emit


def _context_for(path: str, given: str | None, *, json_mode: bool):
    """`--context`, else the context whose sources hold the file, else the usual default."""
    if given is not None:
        from chinvex.cli.context_choice import context_config

        return context_config(given, json_mode=json_mode)
    from chinvex.cli.context_choice import default_context
    from chinvex.context.default import contexts_containing
    from chinvex.context.registry import Registry

    configs = [e.config for e in Registry().entries() if e.config is not None]
    found = contexts_containing(configs, path)
    if len(found) == 1:
        return found[0]
    return default_context(json_mode=json_mode)


def _open(config):
    from chinvex.api import open_index

    return open_index(config)


@app.command("blame")
def blame(
    target: str = typer.Argument(..., metavar="PATH[:LINE[-LINE]]",
                                 help="A file, with a line or a range of lines (default: the whole file)."),
    context: str | None = typer.Option(None, "--context", help=CONTEXT_HELP + " Default here: the "
                                          "context whose sources hold the file."),
    json_out: bool = JSON_OPTION,
) -> None:
    """Why a line is what it is: the commit git gives each line, and the agent sessions (Claude
    Code, Codex, Gemini CLI, Cursor, ...) whose edits wrote it, with the request behind each edit
    and chunk ids to cite. Works on uncommitted lines, after renames, and without git."""
    from rich.markup import escape

    from chinvex.blame.render import blame_text
    from chinvex.blame.service import blame_in, parse_target

    wanted = parse_target(target)
    if not wanted.path.exists():  # before choosing a context: "no context" would hide the real mistake
        from chinvex.errors import NotFoundError

        raise NotFoundError(f"{wanted.path}: no such file")
    config = _context_for(str(wanted.path.resolve()), context, json_mode=json_out)
    conn = _open(config)
    try:
        report = blame_in(conn, config, wanted)
    finally:
        conn.close()
    emit(report, json_mode=json_out, human=None if json_out else escape(blame_text(report)))


@app.command("timeline")
def timeline(
    since: str = typer.Option("7d", "--since", help="Start: a duration ago (7d, 12h, 2w), a date or an ISO time."),
    until: str | None = typer.Option(None, "--until", help="End (exclusive), same forms; default: now."),
    project: str | None = typer.Option(None, "--project", help="Only sessions that ran in this folder "
                                          "(or below it) and commits of the repositories there."),
    agent: str | None = typer.Option(None, "--agent", help="Only this agent's sessions (claude_code, "
                                        "codex, gemini, cursor, ...); commits are left out."),
    context: str | None = typer.Option(None, "--context", help=CONTEXT_HELP),
    json_out: bool = JSON_OPTION,
) -> None:
    """Day by day, every agent session (agent, project, title, first request, files edited,
    duration) and every commit of the context's repositories, in time order."""
    from pathlib import Path

    from rich.markup import escape

    from chinvex.blame.render import timeline_text
    from chinvex.blame.timeline import parse_when
    from chinvex.blame.timeline import timeline as run
    from chinvex.cli.context_choice import context_config
    from chinvex.errors import UsageError

    start = parse_when(since, "--since")
    end = parse_when(until, "--until")
    if start and end and end <= start:
        raise UsageError(f"--until {until!r} is not after --since {since!r}")
    folder = None
    if project is not None:
        folder = Path(project).expanduser().resolve()
        if not folder.is_dir():
            raise UsageError(f"--project {project}: no such folder")
    config = context_config(context, json_mode=json_out)
    conn = _open(config)
    try:
        report = run(conn, context=config.name, repos=list(config.includes.repos), since=start, until=end,
                     project=folder, agent=agent.strip().lower() if agent else None)
    finally:
        conn.close()
    emit(report, json_mode=json_out, human=None if json_out else escape(timeline_text(report)))
