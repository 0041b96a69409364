"""Which module registers which commands on the typer `app` (chinvex.cli.app), and in what order.

Importing a command module registers its commands; `chinvex --help` lists them in the order of
COMMAND_MODULES (commands first, then groups, each in that order). The full CLI imports every
module. A `chinvex search` or `chinvex answer` started from the console script imports only the
module that defines it (chinvex.entry): importing the other command modules and building their
click commands is work a cold search waits for, and nothing of them is used. Parsing, errors and
output of that command are the same, since they depend on the command alone.
"""

from __future__ import annotations

import importlib

import typer
from typer.models import TyperInfo

from chinvex.cli.app import app

COMMAND_MODULES: tuple[str, ...] = (
    "chinvex.cli.context_cmd",
    "chinvex.cli.commands",
    "chinvex.cli.doctor_cmd",
    "chinvex.cli.mcp_cmd",
    "chinvex.cli.answer_cmd",
    "chinvex.cli.pack_cmd",
    "chinvex.cli.watch_cmd",
    "chinvex.cli.memory_cmd",
    "chinvex.cli.rm_cmd",
    "chinvex.cli.portable_cmd",
    "chinvex.cli.query_cmd",
    "chinvex.cli.sessions_cmd",
    "chinvex.cli.blame_cmd",
    "chinvex.cli.ui_cmd",
)
"""Every command module, in the order `chinvex --help` lists what they register."""

SINGLE_COMMAND_MODULES: dict[str, str] = {
    "search": "chinvex.cli.commands",
    "answer": "chinvex.cli.answer_cmd",
}
"""Commands a process may run with only their own module registered (see the module docstring)."""

_done: set[str] = set()


def _register(module_name: str) -> None:
    if module_name in _done:
        return
    module = importlib.import_module(module_name)
    # Two modules register a command defined elsewhere: `context` (its own typer app) and `ui`
    # (a plain function, so that its module stays free of the CLI's imports).
    if module_name == "chinvex.cli.context_cmd":
        app.add_typer(module.app, name="context")
    elif module_name == "chinvex.cli.ui_cmd":
        app.command("ui")(module.ui_command)
    _done.add(module_name)


def _rank(callback: object) -> int:
    """Where the module that defines `callback` comes in COMMAND_MODULES."""
    module = getattr(callback, "__module__", "")
    return COMMAND_MODULES.index(module) if module in COMMAND_MODULES else len(COMMAND_MODULES)


def _group_rank(info: TyperInfo) -> int:
    commands = info.typer_instance.registered_commands if info.typer_instance else []
    return _rank(commands[0].callback if commands else None)


def registered_app(command: str | None = None) -> typer.Typer:
    """`app` with every command registered, or, for a `command` of SINGLE_COMMAND_MODULES, with
    at least the module that defines it. Registering everything after a single module keeps the
    --help order: the registrations are put back in COMMAND_MODULES order."""
    if command in SINGLE_COMMAND_MODULES:
        _register(SINGLE_COMMAND_MODULES[command])
        return app
    for module_name in COMMAND_MODULES:
        _register(module_name)
    app.registered_commands.sort(key=lambda info: _rank(info.callback))
    app.registered_groups.sort(key=_group_rank)
    return app
