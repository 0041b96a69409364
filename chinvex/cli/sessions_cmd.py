"""`chinvex sessions detect`: which agents' session stores this machine has."""

from __future__ import annotations

import typer

from chinvex.cli.app import app
from chinvex.cli.options import JSON_OPTION
from chinvex.cli.output import emit

sessions_app = typer.Typer(help="Agents' session stores on this machine (Claude Code, Codex, Gemini "
                           "CLI, Copilot, Cline, Cursor, OpenCode, ...).",
                           no_args_is_help=True, rich_markup_mode=None)
app.add_typer(sessions_app, name="sessions")


@sessions_app.command("detect")
def detect(json_out: bool = JSON_OPTION) -> None:
    """List every agent's session store found under your home folder (and the tools' own
    overrides such as CODEX_HOME), with how many sessions each holds and the newest one's date.
    'chinvex context create NAME --sessions auto' indexes them all."""
    from rich.markup import escape

    from chinvex import fmt
    from chinvex.ingest.session_stores import detect as find

    stores = find()
    data = {"stores": [s.as_json() for s in stores],
            "agents": sorted({s.agent for s in stores})}
    if not stores:
        human = ("No agent session store found under your home folder "
                 "(looked for Claude Code, Codex, Gemini CLI, Copilot, Cline, Cursor, OpenCode and more).")
    else:
        width = max(len(s.label) for s in stores) + 2
        lines = [f"{'AGENT':<{width}}{'SESSIONS':>8}  {'NEWEST':<22}PATH"]
        for s in stores:
            lines.append(f"{s.label:<{width}}{s.sessions:>8}  {fmt.when(s.newest) if s.newest else fmt.MISSING:<22}{s.path}")
        lines.append("")
        lines.append("Index them all with: chinvex context create NAME --sessions auto")
        human = escape("\n".join(lines))
    emit(data, json_mode=json_out, human=human)
