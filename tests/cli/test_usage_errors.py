"""A value typer cannot convert reads like chinvex's other usage errors (`--k 'abc': expected a
whole number`), in human and JSON output, with exit 2; typer's own words ("Input should be a
valid integer, unable to parse string as an integer") never reach the user."""

from __future__ import annotations

from helpers import assert_no_traceback, run_cli, run_cli_in_process


def test_a_value_of_the_wrong_type_is_named_with_what_was_expected():
    result = run_cli("search", "x", "--k", "abc")
    assert_no_traceback(result)
    assert result.code == 2 and result.stderr.startswith("error: --k 'abc': expected a whole number"), result.stderr
    confidence = run_cli("answer", "x", "--min-confidence", "high")
    assert confidence.code == 2 and "--min-confidence 'high': expected a number" in confidence.stderr
    port = run_cli_in_process("ui", "--port", "eighty")
    assert port.code == 2 and "--port 'eighty': expected a whole number" in port.stderr, port.stderr
    as_json = run_cli_in_process("watch", "--debounce-ms", "1.5", "--json")
    assert as_json.code == 2 and as_json.json["error"]["message"] == "--debounce-ms '1.5': expected a whole number"
    assert "Input should be" not in result.stderr + port.stderr
