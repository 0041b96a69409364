"""`chinvex search` argument checks that the engine never sees: a date range that ends before it
starts is a usage error, not a silent "No results." (real CLI process)."""

from __future__ import annotations

from helpers import assert_no_traceback, run_cli, run_cli_in_process


def test_since_after_until_is_a_usage_error():
    assert run_cli_in_process("context", "create", "S").code == 0
    result = run_cli("search", "index", "--context", "S", "--since", "2026-05-01", "--until", "2026-01-01")
    assert_no_traceback(result)
    assert result.code == 2
    assert result.stderr.strip() == "error: --since 2026-05-01 is after --until 2026-01-01: no date is in that range"
    same_day = run_cli("search", "index", "--context", "S", "--since", "2026-01-01", "--until", "2026-01-01", "--json")
    assert "is after" not in same_day.stdout + same_day.stderr  # a bare --until covers its whole day
