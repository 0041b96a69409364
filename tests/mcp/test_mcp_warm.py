"""The MCP server loads the project context's search stack in the background once its handshake
is done (issue 41), so an agent's first `chinvex_search` does not wait for the model; it can be
turned off, and a context with no index yet is left alone (looking must never create one)."""

from __future__ import annotations

from pathlib import Path

from chinvex.mcp.state import ENV_WARM, ServerState
from helpers import indexed_notes


def test_warm_loads_the_embedder_and_the_vector_store(tmp_path: Path, chinvex_home: Path):
    indexed_notes(tmp_path / "notes", "warmctx", {"a.md": "# Retries\n\nWebhooks retry with backoff.\n"})
    state = ServerState("warmctx", cwd=tmp_path, env={})
    try:
        assert not state.searcher.warm
        state.warm()
        assert state.searcher.warm  # an embedder made and a vector store open
    finally:
        state.close()


def test_warm_can_be_turned_off_and_leaves_a_missing_index_alone(tmp_path: Path, chinvex_home: Path):
    indexed_notes(tmp_path / "notes", "warmctx", {"a.md": "# Retries\n\nWebhooks retry with backoff.\n"})
    off = ServerState("warmctx", cwd=tmp_path, env={ENV_WARM: "0"})
    try:
        off.warm()
        assert not off.searcher.warm
    finally:
        off.close()
    from chinvex.context.registry import Registry
    from helpers import run_cli_in_process

    assert run_cli_in_process("context", "create", "empty", "--note-root", str(tmp_path / "notes")).code == 0
    index = Path(Registry().resolve("empty").index.sqlite_path)
    index.unlink()  # as after a failed first set-up: a context whose index is gone
    empty = ServerState("empty", cwd=tmp_path, env={})
    try:
        empty.warm()
        assert not index.exists() and not empty.searcher.warm
    finally:
        empty.close()
