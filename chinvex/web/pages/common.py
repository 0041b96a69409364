"""What every page handler needs: the run's state, query parameters read leniently (a bad
number falls back to the default instead of failing the page), and a read-only connection to a
context's index."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from starlette.requests import Request

if TYPE_CHECKING:
    from chinvex.models import ContextConfig
    from chinvex.web.state import UiState


def ui(request: Request) -> UiState:
    return request.app.state.ui


def text_param(request: Request, name: str, *, limit: int = 2000) -> str:
    return (request.query_params.get(name) or "").strip()[:limit]


def int_param(request: Request, name: str, default: int, *, low: int, high: int) -> int:
    try:
        value = int(request.query_params.get(name) or default)
    except ValueError:
        return default
    return max(low, min(high, value))


def selected_config(request: Request) -> ContextConfig:
    """The context named by `?context=`, else the run's default (see `UiState.config`)."""
    return ui(request).config(text_param(request, "context", limit=200) or None)


@contextmanager
def reading(config: ContextConfig) -> Iterator[sqlite3.Connection | None]:
    """A read-only connection to the context's hybrid.db, or None when it has none yet (a
    page must never create an index by being looked at)."""
    from chinvex.api import reading as read_index

    with read_index(config) as conn:
        yield conn
