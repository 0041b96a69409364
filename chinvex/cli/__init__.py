"""The `chinvex` command. Thin: parses arguments, calls the engine, formats results.

Heavy modules (chromadb, onnxruntime, numpy) are imported inside commands so that `--help`
and `context` commands stay fast. Importing this package registers no command: `main` registers
them (chinvex.cli.registration: all of them, or for `chinvex search`/`answer` started from the
console script only the module that defines it); any other user of the typer app gets it from
`registration.registered_app()`.
"""

from __future__ import annotations

import os
import sys

import typer

from chinvex.errors import EXIT_FAILURE, EXIT_INTERRUPTED, EXIT_USAGE, ChinvexError


def _wants_json(argv: list[str]) -> bool:
    return "--json" in argv


_EXPECTED = {"int_parsing": "a whole number", "float_parsing": "a number", "bool_parsing": "true or false"}
"""What a value that typer could not convert should have been, by pydantic's error type."""


def _bad_value(exc: Exception) -> str | None:
    """`--k 'abc': expected a whole number` for a value typer could not convert, in the words
    of chinvex's other usage errors (typer says "Input should be a valid integer, unable to parse
    string as an integer"); None for any other usage error."""
    errors = getattr(exc.__cause__, "errors", None)
    param = getattr(exc, "param", None)
    if not callable(errors) or param is None:
        return None
    try:
        first = errors()[0]
    except Exception:  # noqa: BLE001 - not pydantic's ValidationError after all
        return None
    expected = _EXPECTED.get(first.get("type", ""))
    if expected is None:
        return None
    name = (getattr(param, "opts", None) or [getattr(param, "name", "value")])[0]
    return f"{name} {first.get('input')!r}: expected {expected}"


def main(argv: list[str] | None = None, *, single: bool = False) -> None:
    """Entry point: maps every failure to a one-line message and the contract's exit code.
    `single`: register only the module of the command `argv` names, when that command may run so
    (chinvex.cli.registration.SINGLE_COMMAND_MODULES); every command otherwise."""
    from chinvex.cli.output import report_chinvex_error, report_error
    from chinvex.cli.registration import registered_app

    args = list(sys.argv[1:] if argv is None else argv)
    json_mode = _wants_json(args)
    command_app = registered_app(args[0] if single and args else None)
    try:
        result = command_app(args=args, prog_name="chinvex", standalone_mode=False)
    except ChinvexError as exc:
        report_chinvex_error(exc, json_mode=json_mode)
        sys.exit(exc.exit_code)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except typer.Abort:
        sys.stderr.write("aborted\n")
        sys.exit(EXIT_INTERRUPTED)
    except typer.TyperException as exc:
        # Usage errors (bad flag, missing argument) and groups called without a subcommand.
        message = _bad_value(exc) or exc.format_message()
        if type(exc).__name__ == "NoArgsIsHelpError":
            sys.stderr.write(message.rstrip() + "\n")
            sys.exit(EXIT_USAGE)
        ctx = getattr(exc, "ctx", None)
        if ctx is not None and not json_mode:
            message += f" (see '{ctx.command_path} --help')"
        code = "USAGE_ERROR" if exc.exit_code == EXIT_USAGE else "ERROR"
        report_error(code, message, json_mode=json_mode)
        sys.exit(exc.exit_code or EXIT_USAGE)
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        sys.exit(EXIT_INTERRUPTED)
    except BrokenPipeError:
        # Output piped into `head` and closed: not an error of ours.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        sys.exit(EXIT_FAILURE)
    except Exception as exc:  # a bug: say so plainly, keep the traceback for CHINVEX_DEBUG
        if os.environ.get("CHINVEX_DEBUG"):
            raise
        report_error(
            "INTERNAL_ERROR",
            f"internal error ({type(exc).__name__}: {exc}); rerun with CHINVEX_DEBUG=1 "
            "for a traceback and please report it",
            json_mode=json_mode,
        )
        sys.exit(EXIT_FAILURE)
    if result == EXIT_INTERRUPTED:  # typer turns Ctrl-C into this status, silently
        sys.stderr.write("interrupted\n")
    sys.exit(result if isinstance(result, int) else 0)
