"""`--context` is optional on every command: which context a command line means.

A name given with `--context` is resolved exactly as before (an unknown one is the seed's
CONTEXT_NOT_FOUND, exit 1). Without one, `chinvex.context.default` applies the rule the MCP server
uses (CHINVEX_CONTEXT, else the context whose source folders contain the current directory);
nothing found is a usage error (exit 2) that lists the contexts. A context chosen that way is
named on stderr, so a person always sees which index answered.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from chinvex.context.default import ENV_CONTEXT, ENV_PROJECT_PATH, VIA_CWD, resolve_default
from chinvex.errors import ChinvexError, UsageError

if TYPE_CHECKING:
    from chinvex.context.default import DefaultResolution
    from chinvex.models import ContextConfig

ADVICE = "pass --context NAME or set CHINVEX_CONTEXT"

_HOW = {
    ENV_CONTEXT: f"from {ENV_CONTEXT}",
    VIA_CWD: "its sources contain the current directory",
    ENV_PROJECT_PATH: f"its sources contain {ENV_PROJECT_PATH}",
}


def _cwd() -> str:
    try:
        return os.getcwd()
    except OSError:
        raise UsageError("No context given and the current directory cannot be read "
                         f"(it may have been deleted); {ADVICE}.") from None


def default_context(*, json_mode: bool) -> ContextConfig:
    """The context this command line means when it names none (named on stderr), or the error
    to report: CHINVEX_CONTEXT naming a context that does not load keeps that error's code."""
    from chinvex.context.registry import Registry

    found = resolve_default(Registry(), given=None, env=os.environ, cwd=_cwd(), advice=ADVICE)
    if found.config is None:
        if found.cause is not None:
            raise ChinvexError(found.error or found.cause.message, code=found.cause.code,
                               exit_code=found.cause.exit_code)
        raise UsageError(found.error or f"No context given; {ADVICE}.")
    _note(found, json_mode=json_mode)
    return found.config


def _note(found: DefaultResolution, *, json_mode: bool) -> None:
    """One short stderr line naming a context that was not given with --context (not with
    --json: stdout already names it, and scripts want a quiet stderr)."""
    if json_mode or found.config is None:
        return
    from rich.markup import escape

    from chinvex.cli.output import console

    how = _HOW.get(found.via or "", f"from {found.via}")
    console(stderr=True).print(f"[dim]context: {escape(found.config.name)} ({escape(how)})[/dim]")


def context_config(given: str | None, *, json_mode: bool) -> ContextConfig:
    """The config of `--context NAME` (even an empty NAME is resolved, and fails, rather than
    silently replaced), else of the default context."""
    if given is not None:
        from chinvex.context.registry import Registry

        return Registry().resolve(given)
    return default_context(json_mode=json_mode)


def context_name(given: str | None, *, json_mode: bool) -> str:
    """`--context NAME` as given (for commands that resolve it themselves, like doctor, which
    reports a broken context.json as its finding), else the default context's name."""
    if given is not None:
        return given
    return default_context(json_mode=json_mode).name
