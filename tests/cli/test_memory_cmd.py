"""`chinvex memory promote` before the global context exists: one clear line, not the unknown
context message wrapped around another sentence."""

from __future__ import annotations

from helpers import assert_no_traceback, run_cli_in_process


def test_promote_without_a_global_context_says_how_to_make_one():
    assert run_cli_in_process("context", "create", "Proj").code == 0
    result = run_cli_in_process("memory", "promote", "D-1a2b3c4d", "--context", "Proj")
    assert_no_traceback(result)
    assert result.code == 1
    assert result.stderr.strip() == ("error: No context named 'global' to promote to; create it with "
                                     "'chinvex context create global'"), result.stderr
    as_json = run_cli_in_process("memory", "promote", "D-1a2b3c4d", "--context", "Proj", "--json")
    assert as_json.code == 1 and as_json.json["error"]["code"] == "CONTEXT_NOT_FOUND"
