"""A cold `chinvex search` loads its model and vector index while its CLI is imported
(chinvex.retrieval.cold_start). Real SQLite, real Chroma, the real built-in embedder: the
output must be exactly the one the process gives without it, whatever the command line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading

import pytest
from helpers import run_cli, run_cli_in_process

from chinvex.retrieval import cold_start


@pytest.mark.parametrize("argv, flag, expected", [
    (["q", "--context", "A", "--context=B"], "--context", ["A", "B"]),
    (["q", "--context"], "--context", []),
    (["--mode=fts", "q"], "--mode", ["fts"]),
    (["q", "--", "--context", "A"], "--context", []),
])
def test_option_values(argv, flag, expected):
    assert cold_start.option_values(argv, flag) == expected


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    root = tmp_path_factory.mktemp("cold")
    env = {"CHINVEX_HOME": str(root / "home")}
    for name, animal in (("A", "otter"), ("B", "heron")):
        notes = root / f"notes-{name}"
        notes.mkdir()
        for i in range(6):
            (notes / f"n{i}.md").write_text(f"# {animal} {i}\n\nThe {animal} number {i} keeps a pebble "
                                            f"near the river bank; flag_{name.lower()}_{i} marks it.\n" * 8)
        assert run_cli_in_process("context", "create", name, "--note-root", str(notes), env=env).code == 0
        assert run_cli_in_process("ingest", "--context", name, env=env).code == 0
    return env


def _without_timing(stdout: str) -> dict:
    data = json.loads(stdout)
    data["stats"].pop("took_ms", None)
    return data


@pytest.mark.parametrize("args, extra_env", [
    (("--context", "A", "otter pebble"), {}),
    (("--context", "A", "--context", "B", "pebble river"), {}),
    (("--context", "B", "--mode", "vector", "a bird by the water"), {}),
    (("--context=A", "--mode=fts", "flag_a_3"), {}),
    (("--context", "A", "--source-types", "note", "--path", "*n2*", "pebble"), {}),
    (("pebble",), {"CHINVEX_CONTEXT": "B"}),
    (("--context", "Nope", "pebble"), {}),
])
def test_the_output_is_the_same_with_and_without_the_cold_start(home, args, extra_env):
    env = {**home, **extra_env, "CHINVEX_NO_RELAY": "1"}
    with_it = run_cli("search", *args, "--json", env=env)
    without = run_cli("search", *args, "--json", env={**env, cold_start.ENV_SWITCH: "0"})
    assert with_it.code == without.code, (with_it, without)
    assert "Traceback" not in with_it.stderr
    if without.code == 0:
        assert _without_timing(with_it.stdout) == _without_timing(without.stdout)
        assert _without_timing(with_it.stdout)["results"]
    else:
        assert json.loads(with_it.stdout) == json.loads(without.stdout)


TAKES_WHAT_WAS_LOADED = """
import os, threading
from chinvex.context.registry import Registry
from chinvex.storage.vector_matrix import matrix_path
# Chroma's index is warmed for a store without a current vector matrix (which answers instead:
# tests/retrieval/test_vector_matrix_search.py): the file is set aside while this runs.
kept = matrix_path(Registry().resolve("A").index.sqlite_path)
os.replace(kept, str(kept) + ".aside")
from chinvex.retrieval import cold_start
cold_start.begin(["--context", "A", "otter"])
for thread in threading.enumerate():
    if thread.name.startswith("chinvex-cold"):
        thread.join(120)
from chinvex.context.registry import Registry
from chinvex.embedding import factory
from chinvex.storage import chroma_warm
config = Registry().resolve("A")
prepared = dict(factory._PREPARED)
assert list(prepared) == ["builtin:all-MiniLM-L6-v2-int8"], prepared
assert prepared["builtin:all-MiniLM-L6-v2-int8"].loaded
((folder, (token, reader)),) = chroma_warm._WARMED.items()
assert folder == os.path.realpath(config.index.chroma_dir)
from chinvex.api import Engine
from chinvex.retrieval.request import SearchRequest
from chinvex.storage.vector_clients import SharedClient
engine = Engine()
response = engine.search([config], SearchRequest(query="otter pebble", k=3))
assert response.stats.mode == "hybrid" and response.results, response.stats
assert not factory._PREPARED and not chroma_warm._WARMED
(shared,) = SharedClient._registry.values()
assert shared.client is reader
assert engine.searcher.embedder(config) is prepared["builtin:all-MiniLM-L6-v2-int8"]
os.replace(str(kept) + ".aside", kept)
print("OK")
"""


def test_the_search_takes_the_model_and_the_store_the_cold_start_loaded(home):
    proc = subprocess.run([sys.executable, "-c", TAKES_WHAT_WAS_LOADED], capture_output=True, text=True, check=False,
                          timeout=300, env={**os.environ, **home, "CHINVEX_NO_RELAY": "1"})
    assert proc.returncode == 0 and proc.stdout.strip() == "OK", proc.stderr


NO_BINDINGS_WHEN_THE_MATRIX_ANSWERS = """
import sys
from chinvex import entry
ended = []
entry._exit_now = lambda code: ended.append(code)  # stay alive to look at what was imported
sys.argv = ["chinvex", "search", "--context", "A", "--json", "otter pebble"]
entry.main()
assert ended[:1] == [0], ended
import threading
for thread in threading.enumerate():
    if thread.name.startswith("chinvex-"):
        thread.join(60)
from chinvex.context.registry import Registry
from chinvex.storage import chroma_warm
assert chroma_warm.skipped(Registry().resolve("A").index.chroma_dir)  # its matrix answered
loaded = sorted(name for name in sys.modules if name.startswith("chromadb"))
assert not loaded, loaded
print("OK")
"""


def test_a_cold_search_answered_by_the_vector_matrix_never_loads_chromas_bindings(home):
    """The search reads the store's current vector matrix, so the prefetch of Chroma's bindings
    (a large native library) would only take CPU from the model load."""
    proc = subprocess.run([sys.executable, "-c", NO_BINDINGS_WHEN_THE_MATRIX_ANSWERS], capture_output=True,
                          text=True, check=False, timeout=300, env={**os.environ, **home, "CHINVEX_NO_RELAY": "1"})
    assert proc.returncode == 0 and proc.stdout.strip().endswith("OK"), (proc.stdout[-500:], proc.stderr[-2000:])


def _cold_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "chinvex-cold-start"]


def test_nothing_starts_when_a_relay_would_answer_or_it_is_turned_off(tmp_path, monkeypatch):
    from chinvex.relay.address import ENV_OFF, socket_path

    monkeypatch.setenv("CHINVEX_HOME", str(tmp_path / "home"))
    monkeypatch.delenv(ENV_OFF, raising=False)
    path = socket_path()
    path.parent.mkdir(parents=True)
    path.write_text("")  # a relay's socket is there
    before = _cold_threads()
    cold_start.begin(["--context", "A", "otter"])
    assert _cold_threads() == before
    monkeypatch.setenv(cold_start.ENV_SWITCH, "0")
    monkeypatch.setenv(ENV_OFF, "1")
    cold_start.begin(["--context", "A", "otter"])
    assert _cold_threads() == before


def test_the_searchs_holder_note_is_the_lock_holders(tmp_path):
    """context_search names the writer's holder note itself (no chinvex.locking import)."""
    from chinvex.locking import lock_path
    from chinvex.models import ContextConfig
    from chinvex.retrieval.context_search import HOLDER_NOTE

    config = ContextConfig(name="x", created_at="2026-11-26T00:00:00Z", updated_at="2026-11-26T00:00:00Z",
                           index={"sqlite_path": str(tmp_path / "i" / "hybrid.db"),
                                  "chroma_dir": str(tmp_path / "i" / "chroma")})
    assert lock_path(config).with_suffix(".holder") == tmp_path / "i" / HOLDER_NOTE
