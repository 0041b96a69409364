"""`chinvex mcp`: run the stdio MCP server; `chinvex mcp config`: print a client's set-up snippet."""

from __future__ import annotations

import typer

from chinvex.cli.app import app
from chinvex.cli.options import JSON_OPTION
from chinvex.cli.output import emit

mcp_app = typer.Typer(
    help="MCP server for Claude Code and Codex (stdio). Without a subcommand: run the server.",
    invoke_without_command=True,
    no_args_is_help=False,
    rich_markup_mode=None,
)
app.add_typer(mcp_app, name="mcp")

_DEFAULT_HELP = ("Default (project) context for tools called without one; else CHINVEX_CONTEXT, else the "
                 "context whose source folders contain the working directory (the deepest one wins).")


@mcp_app.callback(invoke_without_command=True)
def mcp_main(
    ctx: typer.Context,
    context: str = typer.Option(None, "--context", help=_DEFAULT_HELP),
    tools: str = typer.Option(None, "--tools", help="Tools to list: default (chinvex_answer, chinvex_search, "
                              "chinvex_pack, chinvex_get_chunks, chinvex_blame), recall (the RECALL tools), all, or names "
                              "separated by commas; default: CHINVEX_MCP_TOOLS, else default."),
) -> None:
    """Run the stdio MCP server. By default it lists chinvex_answer, chinvex_search, chinvex_pack,
    chinvex_get_chunks and chinvex_blame; `--tools all` adds chinvex_list_contexts and the RECALL tools
    (recall_search, recall_get, recall_list, recall_context, recall_add, recall_index,
    recall_feedback, flight_recorder_log)."""
    if ctx.invoked_subcommand is not None:
        return
    import os

    from chinvex.mcp.launch import run_server

    if tools is not None:
        from chinvex.errors import UsageError
        from chinvex.mcp.profiles import ENV_TOOLS, UnknownToolsError, selected

        try:
            selected(tools)
        except UnknownToolsError as exc:
            raise UsageError(str(exc)) from None
        os.environ[ENV_TOOLS] = tools

    code = run_server(context)
    if code:
        raise typer.Exit(code)


@mcp_app.command("config")
def mcp_config(
    client: str = typer.Option(..., "--client", help="claude (Claude Code) or codex (Codex CLI)."),
    context: str = typer.Option(None, "--context", help="Context the server defaults to (omit: resolved per session)."),
    json_out: bool = JSON_OPTION,
) -> None:
    """Print the snippet that registers `chinvex mcp` with Claude Code or Codex."""
    from chinvex.errors import UsageError
    from chinvex.mcp.config_snippets import CLIENTS, snippet

    if client not in CLIENTS:
        raise UsageError(f"--client {client!r}: expected claude or codex")
    if context is not None:
        from chinvex.context.registry import validate_name

        validate_name(context)
    data = snippet(client, context)  # type: ignore[arg-type]
    if json_out:
        emit(data, json_mode=True)
    else:
        typer.echo(data["text"], nl=False)
