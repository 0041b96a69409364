"""The console script's fast path for `chinvex mcp`: only the plain forms a client uses skip the
full CLI; everything else (help, config, mistakes) gets the CLI's parsing and messages."""

from __future__ import annotations

import pytest

from chinvex.entry import plain_mcp_serve
from helpers import run_cli, run_cli_in_process


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


HEAVY = ("chromadb", "onnxruntime", "numpy", "tokenizers", "mcp", "anthropic", "ollama", "tree_sitter")


@pytest.mark.parametrize("argv", [["--help"], ["context", "list", "--json"], ["search", "--help"],
                                  ["answer", "--help"]])
def test_light_commands_never_import_the_heavy_libraries(argv, tmp_path):
    """`chinvex --help` must stay well under 0.5 s: chromadb alone costs about a second to import,
    so the CLI imports heavy libraries inside the commands that need them."""
    import os
    import subprocess
    import sys

    code = (
        "import sys\n"
        f"sys.argv = ['chinvex', *{argv!r}]\n"
        "from chinvex.entry import main\n"
        "try:\n"
        "    main()\n"
        "except SystemExit as exc:\n"
        "    assert exc.code in (0, None), exc.code\n"
        f"heavy = sorted(m for m in {HEAVY!r} if m in sys.modules)\n"
        "print('HEAVY', heavy, file=sys.stderr)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "CHINVEX_HOME": str(tmp_path / "home")})
    assert proc.returncode == 0, proc.stderr
    assert "HEAVY []" in proc.stderr, proc.stderr


def test_search_exits_with_its_status_and_complete_output(tmp_path):
    """search and answer skip the interpreter's teardown (os._exit): the output must still be
    complete and the exit status the CLI's."""
    import json

    env = {"CHINVEX_HOME": str(tmp_path / "home")}
    unknown = run_cli("search", "--context", "Nope", "anything", "--json", env=env)
    assert unknown.code == 1 and unknown.json["error"]["code"] == "CONTEXT_NOT_FOUND", unknown
    usage = run_cli("search", "--context", "Nope", "anything", "--k", "0", env=env)
    assert usage.code in (1, 2) and usage.stderr.strip(), usage
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("# Otter\n\n" + "The otter holds a pebble while it sleeps. " * 400)
    assert run_cli_in_process("context", "create", "N", "--note-root", str(notes), env=env).code == 0
    assert run_cli_in_process("ingest", "--context", "N", env=env).code == 0
    found = run_cli("search", "--context", "N", "otter pebble", "--json", "--k", "20", env=env)
    assert found.code == 0, found
    data = json.loads(found.stdout)  # the whole document arrived (no truncated buffer)
    assert data["results"] and all("otter" in r["text"].lower() for r in data["results"])


@pytest.mark.parametrize("argv, user_blas, blas, collecting", [
    (["search", "--context", "Nope", "x", "--json"], None, "1", False),
    (["answer", "--context", "Nope", "x", "--json"], None, "1", False),
    (["search", "--context", "Nope", "x", "--json"], "3", "3", False),
    (["context", "list", "--json"], None, "1", True),
    (["search", "--help"], None, "1", True),
])
def test_process_settings_for_short_commands(argv, user_blas, blas, collecting, tmp_path):
    """BLAS runs single-threaded unless the user chose otherwise, and only the read-only
    commands (which leave through os._exit) switch the cyclic garbage collector off. The state
    is read where the command reports its error, inside the same process."""
    import os
    import subprocess
    import sys

    code = (
        "import gc, os, sys\n"
        f"sys.argv = ['chinvex', *{argv!r}]\n"
        "import chinvex.entry as entry\n"
        "real_exit = entry._exit_now\n"
        "def report(status):\n"
        "    print('STATE', os.environ.get('OPENBLAS_NUM_THREADS'), gc.isenabled(), file=sys.stderr)\n"
        "    real_exit(status)\n"
        "entry._exit_now = report\n"
        "try:\n"
        "    entry.main()\n"
        "except SystemExit:\n"
        "    pass\n"
        "print('STATE', os.environ.get('OPENBLAS_NUM_THREADS'), gc.isenabled(), file=sys.stderr)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    env["CHINVEX_HOME"] = str(tmp_path / "home")
    if user_blas is not None:
        env["OPENBLAS_NUM_THREADS"] = user_blas
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    states = [line for line in proc.stderr.splitlines() if line.startswith("STATE ")]
    assert states and states[0] == f"STATE {blas} {collecting}", proc.stderr


def test_a_search_of_ordinary_paths_leaves_the_redaction_package_unloaded(tmp_path):
    """The redaction package compiles its detectors when imported; a search whose results have
    no redacted names (nearly all) must not pay for that (chinvex.retrieval.freshness imports it
    only for a name holding a marker)."""
    import os
    import subprocess
    import sys

    env = {"CHINVEX_HOME": str(tmp_path / "home")}
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("# Otter\n\nThe otter holds a pebble while it sleeps.\n")
    assert run_cli_in_process("context", "create", "N", "--note-root", str(notes), env=env).code == 0
    assert run_cli_in_process("ingest", "--context", "N", env=env).code == 0
    code = (
        "import sys\n"
        "sys.argv = ['chinvex', 'search', '--context', 'N', 'otter pebble', '--json']\n"
        "import chinvex.entry as entry\n"
        "real_exit = entry._exit_now\n"
        "def report(status):\n"
        "    loaded = sorted(m for m in sys.modules if m.startswith('chinvex.redaction'))\n"
        "    print('REDACTION', loaded, file=sys.stderr)\n"
        "    real_exit(status)\n"
        "entry._exit_now = report\n"
        "entry.main()\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                          env={**os.environ, **env, "CHINVEX_NO_RELAY": "1"})
    assert proc.returncode == 0 and '"otter' in proc.stdout.lower(), proc.stderr
    assert "REDACTION []" in proc.stderr, proc.stderr
