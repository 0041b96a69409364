"""How commands talk to the user: one JSON document on stdout with --json, concise text otherwise,
errors as one line on stderr (or `{"ok": false, "error": {...}}` on stdout with --json)."""

from __future__ import annotations

import sys
from typing import Any

from chinvex.errors import ChinvexError


def _plain(data: Any) -> Any:
    if hasattr(data, "model_dump"):
        return data.model_dump(mode="json")
    return data


def print_json(data: Any) -> None:
    from chinvex.jsonio import dumps

    sys.stdout.buffer.write(dumps(_plain(data), pretty=True) + b"\n")
    sys.stdout.flush()


def emit(data: Any, *, json_mode: bool, human: str | None = None) -> None:
    """Print `data` as JSON, or `human` (rich markup allowed) for a terminal user."""
    if json_mode:
        payload = _plain(data)
        if isinstance(payload, dict) and "ok" not in payload:
            payload = {"ok": True, **payload}
        print_json(payload)
    elif human is not None:
        console().print(human, highlight=False, soft_wrap=True)


def console(stderr: bool = False):
    """A rich console whose printed strings have their control characters made visible
    (`fmt.visible_controls`): indexed text reaches the terminal only through here."""
    from rich.console import Console

    from chinvex.fmt import visible_controls

    class SafeConsole(Console):
        def print(self, *objects: Any, **kwargs: Any) -> None:
            super().print(*(visible_controls(o) if isinstance(o, str) else o for o in objects), **kwargs)

    return SafeConsole(stderr=stderr, highlight=False, soft_wrap=True)


def warn(message: str, *, json_mode: bool) -> None:
    """Warnings go to stderr so that --json stdout stays one document."""
    from rich.markup import escape

    console(stderr=True).print(f"[yellow]warning:[/yellow] {escape(message)}")


def report_error(code: str, message: str, *, json_mode: bool) -> None:
    if json_mode:
        print_json({"ok": False, "error": {"code": code, "message": message}})
    else:
        from chinvex.fmt import visible_controls

        sys.stderr.write(f"error: {visible_controls(message)}\n")
        sys.stderr.flush()


def report_chinvex_error(exc: ChinvexError, *, json_mode: bool) -> None:
    report_error(exc.code, exc.message, json_mode=json_mode)
