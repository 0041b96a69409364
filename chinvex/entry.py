"""The `chinvex` console script.

`chinvex mcp` is started by Claude Code or Codex at the beginning of every session, and the
handshake must be answered within a second; the MCP SDK's own import takes most of that. Parsing
the command line with typer (and the rich/click machinery it loads) would add a noticeable share of that, so the one
plain form a client uses, `chinvex mcp [--context NAME]`, goes straight to the server. Every
other command line (including any mistake in that one) goes through the full CLI, which also
owns help and error messages.
"""

from __future__ import annotations

import gc
import os
import sys


def plain_mcp_serve(argv: list[str]) -> tuple[bool, str | None]:
    """(True, context) when `argv` is exactly `mcp`, `mcp --context NAME` or `mcp --context=NAME`
    with a non-empty NAME; (False, None) for anything else."""
    if not argv or argv[0] != "mcp":
        return False, None
    rest = argv[1:]
    if not rest:
        return True, None
    if len(rest) == 1 and rest[0].startswith("--context="):
        name = rest[0].split("=", 1)[1]
        return (True, name) if name else (False, None)
    if len(rest) == 2 and rest[0] == "--context" and rest[1] and not rest[1].startswith("-"):
        return True, rest[1]
    return False, None


READ_ONLY_COMMANDS = frozenset({"search", "answer"})
"""Commands that write nothing to disk, so they may skip the interpreter's teardown: after a
search, tearing down the loaded model, Chroma's bindings and thousands of modules is a large part of
a cold `chinvex search` that an agent waits for (ARCHITECTURE, "CLI")."""


def _exit_now(code: object) -> None:
    """`sys.exit(code)` without the teardown: the output is flushed first (os._exit does not)."""
    if code is None:
        status = 0
    elif isinstance(code, int):
        status = code
    else:
        sys.stderr.write(f"{code}\n")
        status = 1
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (BrokenPipeError, ValueError):
        pass
    os._exit(status)


SINGLE_THREADED_BLAS = ("OPENBLAS_NUM_THREADS",)
"""numpy's OpenBLAS starts one worker per core when numpy is imported, and those workers spin
while they wait. chinvex does no large matrix products of its own (the embedder runs in
onnxruntime, with its own threads), so on a small machine the spinning only takes a core from
the threads a cold command runs in parallel (the vector index load, the model load). A value
the user set is kept."""


def _quiet_blas() -> None:
    for name in SINGLE_THREADED_BLAS:
        os.environ.setdefault(name, "1")


NO_PYDANTIC_PLUGINS = ("PYDANTIC_DISABLE_PLUGINS", "__all__")
"""Set (unless the user set it) for the read-only commands. pydantic looks for plugins when the
first model is built, by reading the metadata of every installed distribution; chinvex installs
none, and a one-shot search or answer has nothing for one to observe."""


def main() -> None:
    argv = sys.argv[1:]
    _quiet_blas()
    fast, context = plain_mcp_serve(argv)
    if fast:
        from chinvex.mcp.launch import run_server

        sys.exit(run_server(context))
    read_only = bool(argv) and argv[0] in READ_ONLY_COMMANDS and "--help" not in argv
    if read_only:
        # A read-only command lives for about a second and leaves through _exit_now: the cyclic
        # garbage collector's passes over the objects its imports create only cost CPU time.
        gc.disable()
        os.environ.setdefault(*NO_PYDANTIC_PLUGINS)
    if argv and argv[0] == "search" and "--help" not in argv:
        from chinvex.retrieval.cold_start import begin

        begin(argv[1:])  # the model and the vector index load while the CLI is imported
    from chinvex.cli import main as cli_main

    if not read_only:
        try:
            cli_main()
        except SystemExit as exc:
            # After Ctrl-C, leave without the interpreter's teardown, which would wait for worker
            # threads still busy: an ingest's batch being embedded on the writer's worker
            # (unwritten; the next run settles it, as after a crash) keeps the embedder's own
            # threads running for seconds. Every transaction and lock was closed as the
            # interrupt unwound.
            from chinvex.errors import EXIT_INTERRUPTED

            if exc.code == EXIT_INTERRUPTED:
                _exit_now(exc.code)
            raise
        return
    try:
        cli_main(single=True)  # only the command's own module: chinvex.cli.registration
    except SystemExit as exc:
        _exit_now(exc.code)
    _exit_now(0)
