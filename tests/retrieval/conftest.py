"""Fixtures shared by the retrieval tests."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from helpers import assert_no_traceback, run_cli


def _cli_search(ctx: dict[str, Any], *args: str) -> Any:
    result = run_cli("search", *args, "--json", env=ctx["env"])
    assert_no_traceback(result)
    assert result.code == 0, result
    return result.json


@pytest.fixture(scope="session")
def cli_search() -> Callable[..., Any]:
    """`chinvex search ... --json` in a test context (a dict holding its `env`): the parsed
    JSON, after checking that the command succeeded without a traceback."""
    return _cli_search
