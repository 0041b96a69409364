"""Issue 4: hybrid search end to end (real FTS5, real Chroma, real built-in embedder)."""

from __future__ import annotations

import json
import os
import shutil

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers import run_cli, run_cli_in_process

SHARED_PARAGRAPH = (
    "The lantern cache evicts entries with a clock sweep; a cold entry survives one sweep and "
    "is dropped on the second, which keeps hot keys resident without per-access bookkeeping."
)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """Two contexts: Main (repo + chat + notes) and Side (notes), indexed once for the module."""
    base = tmp_path_factory.mktemp("search")
    home = base / "home"
    repo, chats, notes, side = (base / n for n in ("repo", "chats", "notes", "side"))
    for folder in (repo, chats, notes, side):
        folder.mkdir()
    (repo / "lantern.md").write_text(f"# Lantern cache\n\n{SHARED_PARAGRAPH}\n")
    (chats / "lantern.md").write_text(f"# Lantern cache\n\n{SHARED_PARAGRAPH}\n")
    (repo / "config.py").write_text(
        "import json\n\n\ndef parse_config(path):\n    '''Read the JSON settings file.'''\n"
        "    with open(path) as handle:\n        return json.load(handle)\n\n\n"
        "class ConfigLoader:\n    def parseConfig(self, text):\n        return json.loads(text)\n\n"
        "    def load_all(self, paths):\n        return [parse_config(p) for p in paths]\n")
    (repo / "retry.py").write_text(
        "import time\n\n\ndef retry_with_backoff(call, attempts=5):\n"
        "    '''Call `call`, sleeping 2**n seconds between failures.'''\n"
        "    for n in range(attempts):\n        try:\n            return call()\n"
        "        except ConnectionError:\n            time.sleep(2 ** n)\n    raise RuntimeError('gave up')\n")
    (notes / "meeting.md").write_text(
        "---\ntitle: Planning\ndate: 2024-03-01\nupdated: 2024-03-02\n---\n# Planning meeting\n\n"
        "We agreed to migrate the billing service to the new queue before the summer.\n")
    (side / "garden.md").write_text("# Garden\n\nTomatoes need staking once they reach knee height.\n")
    env = {"CHINVEX_HOME": str(home)}
    assert run_cli_in_process("context", "create", "Main", "--repo", str(repo), "--chat-root", str(chats),
                              "--note-root", str(notes), env=env).code == 0
    assert run_cli_in_process("context", "create", "Side", "--note-root", str(side), env=env).code == 0
    for name in ("Main", "Side"):
        result = run_cli_in_process("ingest", "--context", name, "--json", env=env)
        assert result.code == 0, result
    return {"env": env, "home": home, "repo": repo, "chats": chats, "notes": notes}


def test_json_shape(corpus, cli_search):
    data = cli_search(corpus, "--context", "Main", "retry with backoff", "--k", "3")
    assert set(data) >= {"schema_version", "query", "contexts", "k", "results", "stats"}
    first = data["results"][0]
    assert set(first) >= {"rank", "chunk_id", "doc_id", "context", "source_type", "source_uri",
                          "title", "text", "range", "updated_at", "scores"}
    assert set(first["range"]) == {"char_start", "char_end", "line_start", "line_end"}
    assert set(first["scores"]) >= {"fts", "vector", "blended", "weight", "rank"}
    assert first["source_uri"].endswith("retry.py") and first["context"] == "Main"
    assert data["stats"]["mode"] == "hybrid" and data["stats"]["warnings"] == []


def test_seed_6_repo_outranks_chat_for_the_same_text(corpus, cli_search):
    data = cli_search(corpus, "--context", "Main", "lantern cache clock sweep eviction", "--explain")
    ranked = [(r["source_type"], r["scores"]) for r in data["results"]
              if "lantern" in r["source_uri"]]
    types = [t for t, _ in ranked]
    assert types.index("repo") < types.index("chat")
    repo_scores = dict(ranked)["repo"]
    chat_scores = dict(ranked)["chat"]
    assert repo_scores["weight"] == 1.0 and chat_scores["weight"] == 0.8
    # Same text, same relative path: the two chunks match equally, and the weight decides.
    assert repo_scores["blended"] == chat_scores["blended"]
    assert repo_scores["rank"] == pytest.approx(chat_scores["rank"] / 0.8)
    explain = data["results"][0]["explain"]
    # prose, no code among the candidates... or some: the share is the adaptive rule's
    share = data["stats"]["fts_share"]
    assert 0.05 <= share <= 0.95 and explain["fts"]["weight"] == share
    assert explain["formula"].startswith(f"rank = ({share:g} * fts_norm + {1 - share:g} * vector_norm)")


def test_first_in_process_search_of_a_fresh_interpreter_is_hybrid(corpus):
    """An in-process searcher (the MCP server, `chinvex eval`) has no CLI prefetch: its first
    search imports the embedder's stack and chromadb itself, on two threads. It must still be
    hybrid; the numpy import race once turned every such search into FTS only with a warning."""
    import subprocess
    import sys

    script = (
        "import json, os\n"
        "from chinvex.context.registry import Registry\n"
        "from chinvex.retrieval.search import SearchRequest, Searcher\n"
        "response = Searcher().search([Registry().resolve('Main')], SearchRequest(query='retry with backoff', k=3))\n"
        "print(json.dumps({'mode': response.stats.mode, 'warnings': response.stats.warnings}))\n"
        "os._exit(0)\n"
    )
    for _ in range(3):
        proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                              env={**os.environ, **corpus["env"]})
        assert proc.returncode == 0, proc.stderr
        assert json.loads(proc.stdout) == {"mode": "hybrid", "warnings": []}


def _warm_searcher(corpus, monkeypatch):
    from chinvex.context.registry import Registry
    from chinvex.retrieval.search import Searcher

    monkeypatch.setenv("CHINVEX_HOME", str(corpus["home"]))
    # Chroma's path: a store without a current vector matrix (which, when current, answers
    # instead: tests/retrieval/test_vector_matrix_search.py)
    monkeypatch.setattr("chinvex.retrieval.context_search.matrix_store", lambda *args: None)
    return Searcher(), [Registry().resolve("Main")]


def _ranking(response):
    return [(r.chunk_id, r.scores.fts, r.scores.vector, r.scores.rank) for r in response.results]


def test_a_warm_search_runs_the_neighbour_search_beside_the_lexical_leg(corpus, monkeypatch):
    """Once a searcher has the store open, an unfiltered search hands the neighbour search to
    the embedding worker (embed_ahead.embed_and_search); its results are the cold path's, exactly."""
    import chinvex.retrieval.embed_ahead as embed_ahead_module
    from chinvex.retrieval.search import SearchRequest

    calls = []
    real = embed_ahead_module.embed_and_search
    monkeypatch.setattr(embed_ahead_module, "embed_and_search", lambda *a: calls.append(a[1]) or real(*a))
    searcher, configs = _warm_searcher(corpus, monkeypatch)
    try:
        request = SearchRequest(query="retry with backoff between failures", k=5)
        cold = searcher.search(configs, request)
        assert calls == []  # the store was not open yet
        store = searcher.handle(configs[0]).store
        queried = []
        real_query = store.query
        monkeypatch.setattr(store, "query", lambda *a, **kw: queried.append(1) or real_query(*a, **kw))
        warm = searcher.search(configs, request)
        assert calls == [request.query] and len(queried) == 1  # the worker's search is the one used
        assert warm.stats.mode == "hybrid" and not warm.stats.warnings
        assert _ranking(warm) == _ranking(cold)
        # A filtered search keeps the neighbour search where the filter can narrow it.
        filtered = searcher.search(configs, SearchRequest(query=request.query, k=5, source_types=["repo"]))
        assert calls == [request.query, request.query] and filtered.stats.mode == "hybrid"
        searcher.search(configs, SearchRequest(query=request.query, k=5, path_glob="retry*"))
        assert len(calls) == 2
    finally:
        searcher.close()


def test_a_failing_neighbour_search_on_the_worker_falls_back_to_fts(corpus, monkeypatch):
    from chinvex.errors import StorageError
    from chinvex.retrieval.search import SearchRequest

    searcher, configs = _warm_searcher(corpus, monkeypatch)
    try:
        request = SearchRequest(query="retry with backoff between failures", k=5)
        searcher.search(configs, request)
        store = searcher.handle(configs[0]).store

        def broken(*args, **kwargs):
            raise StorageError("chroma: the collection is unreadable")

        monkeypatch.setattr(store, "query", broken)
        response = searcher.search(configs, request)
        assert response.stats.mode == "fts" and response.results
        assert any("vector search failed" in w and "unreadable" in w for w in response.stats.warnings)
    finally:
        searcher.close()


def test_weights_come_from_context_json(corpus, cli_search):
    """Editing `weights` in context.json, as a user would, reorders the same equal match."""
    path = corpus["home"] / "contexts" / "Main" / "context.json"
    original = path.read_text()
    edited = json.loads(original)
    edited.setdefault("weights", {})["chat"] = 1.2
    path.write_text(json.dumps(edited, indent=2))
    try:
        data = cli_search(corpus, "--context", "Main", "lantern cache clock sweep eviction", "--explain")
    finally:
        path.write_text(original)
    ranked = [r for r in data["results"] if "lantern" in r["source_uri"]]
    assert [r["source_type"] for r in ranked] == ["chat", "repo"]
    assert [r["scores"]["weight"] for r in ranked] == [1.2, 1.0]


@pytest.mark.parametrize("query", ["parse config", "parse_config", "parseConfig", "ParseConfig"])
def test_identifiers_are_searchable_by_their_parts(corpus, query, cli_search):
    data = cli_search(corpus, "--context", "Main", query, "--mode", "fts")
    assert data["results"] and data["results"][0]["source_uri"].endswith("config.py")


def test_any_term_matches_not_all(corpus, cli_search):
    data = cli_search(corpus, "--context", "Main", "billing zebra unicorn", "--mode", "fts")
    assert data["results"][0]["source_uri"].endswith("meeting.md")


def test_filters(corpus, cli_search):
    only_notes = cli_search(corpus, "--context", "Main", "queue migration", "--source-types", "note")
    assert {r["source_type"] for r in only_notes["results"]} == {"note"}
    by_path = cli_search(corpus, "--context", "Main", "json", "--path", "*.py")
    assert by_path["results"] and all(r["source_uri"].endswith(".py") for r in by_path["results"])
    recent = cli_search(corpus, "--context", "Main", "planning meeting billing", "--until", "2024-06-01")
    assert recent["results"] and {r["source_uri"].rsplit("/", 1)[1] for r in recent["results"]} == {"meeting.md"}


def test_several_contexts_carry_their_context(corpus, cli_search):
    data = cli_search(corpus, "--context", "Main", "--context", "Side", "tomatoes staking garden")
    assert data["contexts"] == ["Main", "Side"]
    assert data["results"][0]["context"] == "Side"
    assert {r["context"] for r in data["results"]} == {"Main", "Side"}


def test_unknown_context_is_an_error_and_is_not_created(corpus):
    result = run_cli("search", "--context", "NonExistent", "test query", env=corpus["env"])
    assert result.code == 1
    assert "Unknown context: NonExistent." in result.stderr
    assert not (corpus["home"] / "contexts" / "NonExistent").exists()


def test_empty_query_and_bad_k_are_usage_errors(corpus):
    assert run_cli("search", "--context", "Main", "   ", env=corpus["env"]).code == 2
    assert run_cli("search", "--context", "Main", "x", "--k", "0", env=corpus["env"]).code == 2


def test_missing_vectors_fall_back_to_fts_with_a_warning(corpus, tmp_path):
    home = tmp_path / "home"
    shutil.copytree(corpus["home"], home)
    # The copied context.json still points at the original index; repoint it at the copy.
    path = home / "contexts" / "Side" / "context.json"
    data = json.loads(path.read_text())
    data["index"] = {"sqlite_path": str(home / "indexes/Side/hybrid.db"),
                     "chroma_dir": str(home / "indexes/Side/chroma")}
    path.write_text(json.dumps(data))
    shutil.rmtree(home / "indexes" / "Side" / "chroma")
    result = run_cli("search", "--context", "Side", "tomatoes", "--json", env={"CHINVEX_HOME": str(home)})
    assert result.code == 0, result
    assert result.json["stats"]["mode"] == "fts"
    assert "FTS only" in result.json["stats"]["warnings"][0]
    assert result.json["results"][0]["source_uri"].endswith("garden.md")


def test_chunk_get_with_neighbours(corpus, cli_search):
    hit = cli_search(corpus, "--context", "Main", "retry with backoff")["results"][0]
    got = run_cli("chunk", "get", hit["chunk_id"], "--context", "Main", "--json", env=corpus["env"])
    assert got.code == 0, got
    chunk = got.json["chunk"]
    assert chunk["text"] == hit["text"] and chunk["range"] == hit["range"]
    assert set(chunk["neighbours"]) == {"previous", "next"}
    missing = run_cli("chunk", "get", "000000000000", "--context", "Main", "--json", env=corpus["env"])
    assert missing.code == 1 and missing.json["error"]["code"] == "NOT_FOUND"


FTS_TRAPS = ['"', "'", "(", ")", "foo.bar(x)", "AND", "OR NOT", "-", "--x", "a*", "^start",
             "col:val", "NEAR(a b)", "?", "", "\x00", "’quote’", "🙂", "a" * 5000, "(unbalanced",
             "C++ & C#", "SELECT * FROM chunks; --", "\\", "{}[]", "日本語のテキスト"]


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(query=st.one_of(st.text(max_size=200), st.sampled_from(FTS_TRAPS),
                       st.lists(st.sampled_from(FTS_TRAPS), max_size=6).map(" ".join)))
def test_no_query_string_makes_search_raise(corpus, query, monkeypatch):
    from chinvex.context.registry import Registry
    from chinvex.retrieval.search import SearchRequest, Searcher

    monkeypatch.setenv("CHINVEX_HOME", str(corpus["home"]))
    global _SEARCHER
    try:
        searcher = _SEARCHER
    except NameError:
        searcher = _SEARCHER = Searcher()
    config = Registry().resolve("Main")
    for mode in ("hybrid", "fts"):
        response = searcher.search([config], SearchRequest(query=query, k=5, mode=mode))
        assert response.stats.took_ms >= 0
