"""`chinvex pack`'s human output when nothing is packed: a larger budget is suggested only when
something was found that did not fit (real CLI process, a context never ingested); counts read
in English. The pack itself is tested in tests/pack/test_pack.py."""

from __future__ import annotations

from helpers import assert_no_traceback, run_cli, run_cli_in_process


def test_an_empty_pack_says_why():
    assert run_cli_in_process("context", "create", "Bare").code == 0
    result = run_cli("pack", "add a retry to the webhook sender", "--context", "Bare")
    assert_no_traceback(result)
    assert result.code == 0
    assert result.stdout.startswith("Nothing in Bare matches the task.\n0 of 2000 tokens, 0 chunks"), result.stdout
    assert "larger --budget-tokens" not in result.stdout
