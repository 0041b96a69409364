"""`chinvex sessions detect`'s table: the date column is as wide as a date and two spaces, like
the others, so the path never touches it (a fake home folder holding one Codex rollout)."""

from __future__ import annotations

import shutil
from pathlib import Path

from helpers import FIXTURES, run_cli_in_process

ROLLOUT = (FIXTURES / "codex-rollout" / "public" / "localpush" / "sessions" / "2026" / "02" / "23"
           / "rollout-2026-02-23T13-19-38-019c8a70-dda7-7f33-98ea-f30553347322.jsonl")


def test_columns_are_separated_by_two_spaces(tmp_path: Path):
    day = tmp_path / "home" / ".codex" / "sessions" / "2026" / "02" / "23"
    day.mkdir(parents=True)
    shutil.copy(ROLLOUT, day / ROLLOUT.name)
    result = run_cli_in_process("sessions", "detect", env={"HOME": str(tmp_path / "home"), "CODEX_HOME": ""})
    assert result.code == 0, result
    header, row = result.stdout.splitlines()[:2]
    assert header.index("PATH") == row.index(str(tmp_path)), result.stdout
    assert " UTC  " + str(tmp_path) in row, result.stdout
