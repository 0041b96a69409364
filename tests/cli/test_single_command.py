"""`chinvex search` and `chinvex answer` started from the console script register only their own
command module (chinvex.cli.registration): the other command modules are not imported, and what
the command prints and exits with is what the full CLI gives for the same command line. The
full CLI's --help order does not depend on what was registered first."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest


def _python(code: str, home: str, *args: str, plugins: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYDANTIC_DISABLE_PLUGINS"}
    env.update({"CHINVEX_HOME": home, "CHINVEX_NO_RELAY": "1"})
    if plugins is not None:
        env["PYDANTIC_DISABLE_PLUGINS"] = plugins
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=300, check=False,
                          env=env)


ENTRY = (
    "import os, sys\n"
    "sys.argv = ['chinvex', *sys.argv[1:]]\n"
    "import chinvex.entry as entry\n"
    "real_exit = entry._exit_now\n"
    "def report(status):\n"
    "    loaded = sorted(m for m in sys.modules if m.startswith('chinvex.cli.') and m.endswith(('_cmd', 'commands')))\n"
    "    print('LOADED', loaded, file=sys.stderr)\n"
    "    print('PLUGINS', os.environ.get('PYDANTIC_DISABLE_PLUGINS'), file=sys.stderr)\n"
    "    real_exit(status)\n"
    "entry._exit_now = report\n"
    "entry.main()\n"
)
"""The console script's path, reporting the command modules it imported before it leaves."""

FULL = "import sys\nfrom chinvex.cli import main\nmain(sys.argv[1:])\n"
"""The full CLI (every command registered) for the same command line."""


def _without_report(stderr: str) -> str:
    return "".join(line for line in stderr.splitlines(keepends=True) if not line.startswith(("LOADED ", "PLUGINS ")))


@pytest.mark.parametrize("argv, module", [
    (["search", "--context", "Nope", "x", "--json"], "chinvex.cli.commands"),
    (["answer", "--context", "Nope", "x"], "chinvex.cli.answer_cmd"),
])
def test_a_search_or_answer_imports_only_its_own_command_module(argv, module, tmp_path):
    proc = _python(ENTRY, str(tmp_path / "home"), *argv)
    loaded = [line for line in proc.stderr.splitlines() if line.startswith("LOADED ")]
    assert loaded == [f"LOADED [{module!r}]"], proc.stderr


@pytest.mark.parametrize("argv, user_value, value", [
    (["search", "--context", "Nope", "x"], None, "__all__"),
    (["answer", "--context", "Nope", "x"], None, "__all__"),
    (["search", "--context", "Nope", "x"], "logfire", "logfire"),
])
def test_a_search_or_answer_skips_pydantic_plugin_discovery(argv, user_value, value, tmp_path):
    """pydantic's plugin discovery reads every installed distribution's metadata; the read-only
    commands turn it off (chinvex.entry.NO_PYDANTIC_PLUGINS), unless the user chose a setting."""
    proc = _python(ENTRY, str(tmp_path / "home"), *argv, plugins=user_value)
    assert f"PLUGINS {value}" in proc.stderr.splitlines(), proc.stderr


@pytest.mark.parametrize("argv", [
    ["search"],
    ["search", "x", "--k", "abc"],
    ["search", "x", "--k", "abc", "--json"],
    ["search", "x", "--no-such-option"],
    ["search", "x", "--mode", "sideways"],
    ["search", "--context", "Nope", "x", "--json"],
    ["search", "--context", "Nope", "x"],
    ["answer"],
    ["answer", "x", "--min-confidence", "high"],
    ["answer", "--context", "Nope", "x", "--json"],
])
def test_the_single_command_says_what_the_full_cli_says(argv, tmp_path):
    home = str(tmp_path / "home")
    single = _python(ENTRY, home, *argv)
    full = _python(FULL, home, *argv)
    assert (single.returncode, single.stdout, _without_report(single.stderr)) == (
        full.returncode, full.stdout, full.stderr), (single, full)
    assert single.returncode != 0 and (single.stdout + single.stderr).strip()


HELP_ORDER = (
    "import sys, typer.main\n"
    "from chinvex.cli.registration import registered_app\n"
    "for command in sys.argv[1:]:\n"
    "    registered_app(command)\n"
    "print(list(typer.main.get_command(registered_app()).commands))\n"
)


def test_registering_one_command_first_keeps_the_help_order(tmp_path):
    home = str(tmp_path / "home")
    canonical = _python(HELP_ORDER, home)
    assert canonical.returncode == 0, canonical.stderr
    assert canonical.stdout.startswith("['ingest', 'stats', 'search'") and "'context'" in canonical.stdout
    for first in (["answer"], ["search"], ["answer", "search"]):
        mixed = _python(HELP_ORDER, home, *first)
        assert mixed.stdout == canonical.stdout, (first, mixed.stderr)
