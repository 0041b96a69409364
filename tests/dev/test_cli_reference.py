"""docs/CLI.md is generated from the typer app (chinvex.dev.cli_reference) and must never drift from
it: a changed option, default or help text without a regenerated reference fails here."""

from __future__ import annotations

from pathlib import Path

from chinvex.dev import cli_reference
from helpers import run_cli


def test_cli_reference_is_up_to_date():
    assert cli_reference.main(["--check"]) == 0, "run: python -m chinvex.dev.cli_reference"


def test_check_fails_when_the_reference_is_stale(tmp_path: Path):
    target = tmp_path / "CLI.md"
    assert cli_reference.main(["--out", str(target), "--check"]) == 1  # missing
    assert cli_reference.main(["--out", str(target)]) == 0
    assert cli_reference.main(["--out", str(target), "--check"]) == 0
    target.write_text(target.read_text().replace("Number of results.", "How many results."))
    assert cli_reference.main(["--out", str(target), "--check"]) == 1


def test_reference_lists_what_the_cli_help_prints():
    """Every command, and every option `--help` shows for it, with its help text and default."""
    text = cli_reference.render()
    for path in (["search"], ["context", "create"], ["mcp", "config"], ["answer"]):
        assert f"## chinvex {' '.join(path)}\n" in text
        help_text = run_cli(*path, "--help").stdout
        options = {word.rstrip(",") for line in help_text.splitlines()
                   for word in line.split()[:3] if word.startswith("--") and word != "--help"}
        assert options, help_text
        section = text.split(f"## chinvex {' '.join(path)}\n", 1)[1].split("\n## ", 1)[0]
        for option in options:
            assert f"`{option}" in section or f" {option}" in section, (path, option)
    search = text.split("## chinvex search\n", 1)[1].split("\n## ", 1)[0]
    assert "| `--k <int>` | option | `8` | Number of results. |" in search
    assert "| `query <str>` | argument | required |" in search


def test_a_default_decided_at_run_time_is_not_shown_as_off():
    """`--progress` is on on a terminal and `--rerank` when a reranker is configured: their
    declared default is None, which must not render as `--no-progress` / `--no-rerank`."""
    text = cli_reference.render()
    progress = [line for line in text.splitlines() if line.startswith("| `--progress / --no-progress` |")]
    rerank = [line for line in text.splitlines() if line.startswith("| `--rerank / --no-rerank` |")]
    assert progress and rerank
    for line in progress + rerank:
        assert line.split(" | ")[2] == "", line


def test_preamble_names_both_servers_without_json():
    preamble = cli_reference.render().split("| command | what it does |", 1)[0]
    assert "`chinvex mcp`" in preamble and "`chinvex ui`" in preamble
    assert "--json" not in run_cli("ui", "--help").stdout
