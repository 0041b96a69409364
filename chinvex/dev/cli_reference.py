"""Write `docs/CLI.md`, the command-line reference, from the typer app itself.

Help texts live next to the code that implements each option; a hand-written reference would
drift from them at the first change. This walks the click command tree that typer builds (every
command and group, in the order `--help` lists them) and renders each one's usage, description,
arguments and options with their defaults, using click's own help records (the same names and
metavars `chinvex … --help` prints). `python -m chinvex.dev.cli_reference` rewrites the file;
`--check` exits 1 when it differs, and a test runs that, so a changed option without a
regenerated reference fails CI (as `schema_export` does for the JSON Schemas).

Nothing here may depend on the machine: no environment-derived defaults are rendered, only
what the app declares.
"""

from __future__ import annotations

import argparse
import inspect
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from chinvex.dev.regenerated import sync

DEFAULT_PATH = Path(__file__).resolve().parents[2] / "docs" / "CLI.md"
PROGRAM = "chinvex"
REGENERATE = "python -m chinvex.dev.cli_reference"


@dataclass(frozen=True)
class Entry:
    """One command of the tree: its full name (`chinvex context create`), the click command and
    the click context it is rendered in (help records need one)."""

    path: str
    command: Any
    ctx: Any


def walk(command: Any, ctx: Any, path: str) -> Iterator[Entry]:
    """Every visible command under `command`, parents before children, in `--help` order."""
    yield Entry(path, command, ctx)
    list_commands = getattr(command, "list_commands", None)
    if list_commands is None:
        return
    for name in list_commands(ctx):
        child = command.get_command(ctx, name)
        if child is None or getattr(child, "hidden", False):
            continue
        yield from walk(child, type(ctx)(child, info_name=name, parent=ctx), f"{path} {name}")


def _cell(text: str) -> str:
    """Table-cell text: one line, pipes escaped."""
    return " ".join(text.split()).replace("|", "\\|")


def _default(param: Any) -> str:
    """The default as a user would type or see it; empty when there is none worth stating.
    Flags show the form that is on by default (`--grounded`), or nothing when they are off. A
    default of None means it is decided at run time (the help text says how), so none is shown:
    `--progress / --no-progress` must not read as off by default."""
    if getattr(param, "required", False):
        return "required"
    default = getattr(param, "default", None)
    if default is None:
        return ""
    if getattr(param, "is_flag", False):
        if getattr(param, "secondary_opts", None):
            return f"`{(param.opts if default else param.secondary_opts)[0]}`"
        return ""
    if default is None or default == [] or default == () or default == "" or callable(default):
        return ""
    if isinstance(default, (list, tuple)):
        return ", ".join(f"`{item}`" for item in default)
    return f"`{default}`"


def _params_table(entry: Entry) -> list[str]:
    rows = []
    for param in entry.command.get_params(entry.ctx):
        if getattr(param, "hidden", False) or param.name == "help":
            continue  # every command takes --help; the header says so once
        record = param.get_help_record(entry.ctx)
        if record is None:
            continue
        name = record[0]
        help_text = inspect.cleandoc(getattr(param, "help", None) or "")
        if getattr(param, "multiple", False):
            help_text = (help_text + " Repeatable.").strip() if "repeat" not in help_text.lower() else help_text
        kind = "argument" if param.param_type_name == "argument" else "option"
        rows.append(f"| `{_cell(name)}` | {kind} | {_cell(_default(param))} | {_cell(help_text)} |")
    if not rows:
        return []
    return ["| name | kind | default | description |", "|---|---|---|---|", *rows, ""]


def _anchor(path: str) -> str:
    """GitHub's heading anchor for a heading `path` in backquotes."""
    return path.lower().replace(" ", "-")


def _section(entry: Entry) -> list[str]:
    command = entry.command
    usage = " ".join([entry.path, *command.collect_usage_pieces(entry.ctx)])
    lines = [f"## {entry.path}", ""]
    help_text = inspect.cleandoc(command.help or "")
    if help_text:
        lines += [help_text, ""]
    lines += ["```text", usage, "```", ""]
    lines += _params_table(entry)
    children = [e for e in _children(entry)]
    if children:
        lines += ["Commands: " + ", ".join(f"[`{c}`](#{_anchor(f'{entry.path} {c}')})" for c in children), ""]
    return lines


def _children(entry: Entry) -> list[str]:
    list_commands = getattr(entry.command, "list_commands", None)
    if list_commands is None:
        return []
    return [name for name in list_commands(entry.ctx)
            if not getattr(entry.command.get_command(entry.ctx, name), "hidden", False)]


def _summary(command: Any) -> str:
    """The first sentence of a command's help (click's short help cuts at 45 characters)."""
    text = " ".join(inspect.cleandoc(command.help or "").split())
    end = text.find(". ")
    return text if end < 0 else text[: end + 1]


def render() -> str:
    """The whole reference as Markdown."""
    import typer
    import typer.main

    from chinvex.cli.registration import registered_app

    root = typer.main.get_command(registered_app())
    entries = list(walk(root, typer.Context(root, info_name=PROGRAM), PROGRAM))
    lines = [
        "# chinvex command-line reference",
        "",
        f"Generated from the command-line code by `{REGENERATE}`: do not edit it by hand (a test",
        "fails when this file and the code disagree). `chinvex COMMAND --help` prints the same texts.",
        "",
        "Every command takes `--help`; every command except the servers `chinvex mcp` and",
        "`chinvex ui` takes `--json` (one JSON document on stdout). Exit codes: 0 success,",
        "1 failure, 2 usage error.",
        "",
        "| command | what it does |",
        "|---|---|",
    ]
    for entry in entries[1:]:
        lines.append(f"| [`{entry.path}`](#{_anchor(entry.path)}) | {_cell(_summary(entry.command))} |")
    lines.append("")
    for entry in entries:
        lines += _section(entry)
    return "\n".join(lines).rstrip("\n") + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_PATH, help="file to write (default: docs/CLI.md)")
    parser.add_argument("--check", action="store_true", help="exit 1 if the file is missing or out of date")
    args = parser.parse_args(argv)
    return sync(args.out, render(), check=args.check, command=REGENERATE)


if __name__ == "__main__":
    sys.exit(main())
