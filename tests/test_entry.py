"""The console script's fast path for `chinvex mcp`: only the plain forms a client uses skip the
full CLI; everything else (help, config, mistakes) gets the CLI's parsing and messages."""

from __future__ import annotations

import pytest

from chinvex.entry import plain_mcp_serve
from conftest import run_cli


@pytest.mark.parametrize("argv, expected", [
    (["mcp"], (True, None)),
    (["mcp", "--context", "Payflow"], (True, "Payflow")),
    (["mcp", "--context=Payflow"], (True, "Payflow")),
    (["mcp", "--context"], (False, None)),
    (["mcp", "--context="], (False, None)),
    (["mcp", "--context", "--help"], (False, None)),
    (["mcp", "--help"], (False, None)),
    (["mcp", "config", "--client", "claude"], (False, None)),
    (["mcp", "--context", "A", "--verbose"], (False, None)),
    (["search", "mcp"], (False, None)),
    ([], (False, None)),
])
def test_only_plain_serve_forms_take_the_fast_path(argv, expected):
    assert plain_mcp_serve(argv) == expected


def test_other_mcp_command_lines_get_the_full_cli():
    assert "--context" in run_cli("mcp", "--help").stdout
    bad = run_cli("mcp", "--context")
    assert bad.code == 2 and "Traceback" not in bad.stderr
