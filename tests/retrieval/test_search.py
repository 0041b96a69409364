"""Issue 4: hybrid search end to end (real FTS5, real Chroma, real built-in embedder)."""

from __future__ import annotations

import json
import os
import shutil

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers import assert_no_traceback, run_cli, run_cli_in_process

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


def search(corpus, *args):
    result = run_cli("search", *args, "--json", env=corpus["env"])
    assert_no_traceback(result)
    assert result.code == 0, result
    return result.json


def test_json_shape(corpus):
    data = search(corpus, "--context", "Main", "retry with backoff", "--k", "3")
    assert set(data) >= {"schema_version", "query", "contexts", "k", "results", "stats"}
    first = data["results"][0]
    assert set(first) >= {"rank", "chunk_id", "doc_id", "context", "source_type", "source_uri",
                          "title", "text", "range", "updated_at", "scores"}
    assert set(first["range"]) == {"char_start", "char_end", "line_start", "line_end"}
    assert set(first["scores"]) >= {"fts", "vector", "blended", "weight", "rank"}
    assert first["source_uri"].endswith("retry.py") and first["context"] == "Main"
    assert data["stats"]["mode"] == "hybrid" and data["stats"]["warnings"] == []


def test_seed_6_repo_outranks_chat_for_the_same_text(corpus):
    data = search(corpus, "--context", "Main", "lantern cache clock sweep eviction", "--explain")
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
    return Searcher(), [Registry().resolve("Main")]


def _ranking(response):
    return [(r.chunk_id, r.scores.fts, r.scores.vector, r.scores.rank) for r in response.results]


def test_a_warm_search_runs_the_neighbour_search_beside_the_lexical_leg(corpus, monkeypatch):
    """Once a searcher has the store open, an unfiltered search hands the neighbour search to
    the embedding worker (search._embed_and_search); its results are the cold path's, exactly."""
    import chinvex.retrieval.search as search_module
    from chinvex.retrieval.search import SearchRequest

    calls = []
    real = search_module._embed_and_search
    monkeypatch.setattr(search_module, "_embed_and_search", lambda *a: calls.append(a[1]) or real(*a))
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


def test_weights_come_from_context_json(corpus):
    """Editing `weights` in context.json, as a user would, reorders the same equal match."""
    path = corpus["home"] / "contexts" / "Main" / "context.json"
    original = path.read_text()
    edited = json.loads(original)
    edited.setdefault("weights", {})["chat"] = 1.2
    path.write_text(json.dumps(edited, indent=2))
    try:
        data = search(corpus, "--context", "Main", "lantern cache clock sweep eviction", "--explain")
    finally:
        path.write_text(original)
    ranked = [r for r in data["results"] if "lantern" in r["source_uri"]]
    assert [r["source_type"] for r in ranked] == ["chat", "repo"]
    assert [r["scores"]["weight"] for r in ranked] == [1.2, 1.0]


@pytest.mark.parametrize("query", ["parse config", "parse_config", "parseConfig", "ParseConfig"])
def test_identifiers_are_searchable_by_their_parts(corpus, query):
    data = search(corpus, "--context", "Main", query, "--mode", "fts")
    assert data["results"] and data["results"][0]["source_uri"].endswith("config.py")


def test_any_term_matches_not_all(corpus):
    data = search(corpus, "--context", "Main", "billing zebra unicorn", "--mode", "fts")
    assert data["results"][0]["source_uri"].endswith("meeting.md")


def test_filters(corpus):
    only_notes = search(corpus, "--context", "Main", "queue migration", "--source-types", "note")
    assert {r["source_type"] for r in only_notes["results"]} == {"note"}
    by_path = search(corpus, "--context", "Main", "json", "--path", "*.py")
    assert by_path["results"] and all(r["source_uri"].endswith(".py") for r in by_path["results"])
    recent = search(corpus, "--context", "Main", "planning meeting billing", "--until", "2024-06-01")
    assert recent["results"] and {r["source_uri"].rsplit("/", 1)[1] for r in recent["results"]} == {"meeting.md"}


def test_several_contexts_carry_their_context(corpus):
    data = search(corpus, "--context", "Main", "--context", "Side", "tomatoes staking garden")
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


def test_chunk_get_with_neighbours(corpus):
    hit = search(corpus, "--context", "Main", "retry with backoff")["results"][0]
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


# -- Filters inside both legs -----------------------------------------------------------------
# The legs used to fetch 4 x depth candidates and filter paths and dates afterwards, so a match
# ranked deeper than that in both legs was silently lost. Here the context's depths are 5 (old
# over-fetch: 20) and 45 notes about the query outrank the filtered targets in both legs.

DEEP_DEPTH = 5
OLD_OVERFETCH = 4 * DEEP_DEPTH
DEEP_QUERY = "lantern cache eviction with a clock sweep"
NOISE_NOTES = 45


@pytest.fixture(scope="module")
def deep(tmp_path_factory):
    base = tmp_path_factory.mktemp("deep")
    home, notes = base / "home", base / "notes"
    (notes / "noise").mkdir(parents=True)
    (notes / "special").mkdir()
    for i in range(NOISE_NOTES):
        (notes / "noise" / f"n{i:02d}.md").write_text(
            f"---\nupdated: 2025-06-15T12:00:00Z\n---\n# Lantern cache eviction, variant {i}\n\n"
            f"The lantern cache eviction runs a clock sweep (variant {i}): the clock hand sweeps "
            "the lantern cache and a cold entry is evicted on the second sweep.\n")
    garden = ("The tomatoes need staking once they reach knee height; the courgettes are "
              "flowering, the compost heap is warm and the runner beans climb the canes. ")
    (notes / "special" / "old.md").write_text(
        "---\nupdated: 2020-01-05T15:30:00Z\n---\n# Allotment diary\n\n" + garden * 3
        + "An old lantern hangs by the shed door.\n")
    (notes / "special" / "new.md").write_text(
        "---\nupdated: 2031-03-10T08:00:00Z\n---\n# Bicycle commute\n\nThe chain needs oil after "
        "rain, the brake pads wear down on the hill, and the saddle bag holds a spare tube. "
        "A small lantern clips to the handlebar.\n")
    env = {"CHINVEX_HOME": str(home)}
    assert run_cli_in_process("context", "create", "Deep", "--note-root", str(notes), env=env).code == 0
    path = home / "contexts" / "Deep" / "context.json"
    data = json.loads(path.read_text())
    data["retrieval"] = {"fts_depth": DEEP_DEPTH, "vector_depth": DEEP_DEPTH}
    path.write_text(json.dumps(data))
    result = run_cli_in_process("ingest", "--context", "Deep", "--json", env=env)
    assert result.code == 0, result
    return {"env": env, "home": home}


def _deep_search(deep, monkeypatch, **kw):
    from chinvex.context.registry import Registry
    from chinvex.retrieval.search import SearchRequest, Searcher

    monkeypatch.setenv("CHINVEX_HOME", str(deep["home"]))
    searcher = Searcher()
    try:
        return searcher.search([Registry().resolve("Deep")], SearchRequest(query=DEEP_QUERY, **kw))
    finally:
        searcher.close()


def _names(results):
    return {r["source_uri"].rsplit("/", 2)[-2] + "/" + r["source_uri"].rsplit("/", 1)[-1] for r in results}


def test_deep_targets_rank_below_the_old_over_fetch_in_both_legs(deep, monkeypatch):
    """The premise of the filter tests below: without filters, each target is deeper than the
    old 4 x depth over-fetch in the FTS leg and in the vector leg."""
    for mode in ("fts", "vector"):
        response = _deep_search(deep, monkeypatch, k=200, mode=mode, fts_depth=200, vector_depth=200)
        assert response.stats.mode == mode
        ranks = {r.source_uri.rsplit("/", 1)[-1]: r.rank for r in reversed(response.results)}
        for target in ("old.md", "new.md"):
            assert ranks.get(target, 10**6) > OLD_OVERFETCH, (mode, target, ranks.get(target))


@pytest.mark.parametrize("mode", ["hybrid", "fts", "vector"])
def test_path_filter_finds_matches_below_both_legs_depth(deep, mode):
    data = search(deep, "--context", "Deep", DEEP_QUERY, "--path", "special/old.md", "--mode", mode)
    assert data["stats"]["mode"] == mode and data["stats"]["warnings"] == []
    assert data["results"] and _names(data["results"]) == {"special/old.md"}
    both = search(deep, "--context", "Deep", DEEP_QUERY, "--path", "special/*", "--mode", mode)
    assert _names(both["results"]) == {"special/old.md", "special/new.md"}
    if mode == "hybrid":  # the chunks that contain a query term are found by both legs
        lexical = [r for r in both["results"] if "lantern" in r["text"].lower()]
        assert _names(lexical) == {"special/old.md", "special/new.md"}
        for r in lexical:
            assert r["scores"]["fts"] is not None and r["scores"]["vector"] is not None


@pytest.mark.parametrize("mode", ["hybrid", "fts", "vector"])
def test_date_filters_find_matches_below_both_legs_depth(deep, mode):
    # old.md was updated at 15:30 on 2020-01-05: a bare --until date includes the whole day.
    old = search(deep, "--context", "Deep", DEEP_QUERY, "--until", "2020-01-05", "--mode", mode)
    assert old["results"] and _names(old["results"]) == {"special/old.md"}
    new = search(deep, "--context", "Deep", DEEP_QUERY, "--since", "2031-01-01", "--mode", mode)
    assert new["results"] and _names(new["results"]) == {"special/new.md"}
    window = search(deep, "--context", "Deep", DEEP_QUERY, "--since", "2019-12-01", "--until",
                    "2031-12-31", "--path", "special/*", "--mode", mode)
    assert _names(window["results"]) == {"special/old.md", "special/new.md"}


def test_until_date_covers_its_day_and_a_timestamp_is_exact(deep):
    def found(until):
        data = search(deep, "--context", "Deep", DEEP_QUERY, "--path", "special/old.md", "--until", until)
        return bool(data["results"])

    assert found("2020-01-05") and found("2020-01-05T15:30:00Z") and found("2020-01-05T16:30:00+01:00")
    assert not found("2020-01-05T15:29:59Z") and not found("2020-01-04")
    assert run_cli("search", "--context", "Deep", "x", "--until", "2020-13-01", env=deep["env"]).code == 2


def test_a_filter_that_allows_nothing_answers_empty_without_warnings(deep):
    data = search(deep, "--context", "Deep", DEEP_QUERY, "--path", "nowhere/*")
    assert data["results"] == [] and data["stats"]["warnings"] == [] and data["stats"]["mode"] == "hybrid"


@pytest.mark.parametrize("limits", [
    {},                                                   # few allowed chunks: exact cosines
    {"EXACT_LIMIT": 0},                                   # Chroma query restricted to the ids
    {"EXACT_LIMIT": 0, "RESTRICT_LIMIT": 0},              # unfiltered over-fetch, then filter
    {"EXACT_LIMIT": 0, "RESTRICT_LIMIT": 0, "OVERFETCH_MAX": 1},  # over-fetch gives up: restrict
], ids=["exact", "restricted", "overfetch", "overfetch-then-restricted"])
def test_every_vector_strategy_finds_the_same_neighbours(deep, monkeypatch, limits):
    """Each strategy of the vector leg, against the real store: a selective filter gives the
    same neighbours and cosines as exact scoring, and a filter that allows everything gives the
    unfiltered neighbours."""
    from chinvex.retrieval import filters

    exact = _deep_search(deep, monkeypatch, k=5, mode="vector", path_glob="special/*")
    unfiltered = _deep_search(deep, monkeypatch, k=5, mode="vector")
    for name, value in limits.items():
        monkeypatch.setattr(filters, name, value)
    selective = _deep_search(deep, monkeypatch, k=5, mode="vector", path_glob="special/*")
    assert selective.stats.mode == "vector" and not selective.stats.warnings
    assert [r.chunk_id for r in selective.results] == [r.chunk_id for r in exact.results]
    assert [r.scores.vector for r in selective.results] == pytest.approx(
        [r.scores.vector for r in exact.results], abs=1e-4)
    assert {r.source_uri.rsplit("/", 1)[-1] for r in selective.results} == {"old.md", "new.md"}
    everything = _deep_search(deep, monkeypatch, k=5, mode="vector", since="2000-01-01T00:00:00.000Z")
    assert [r.chunk_id for r in everything.results] == [r.chunk_id for r in unfiltered.results]


@pytest.mark.parametrize("rowid_limit", [0, 10**6], ids=["by-document", "by-rowid"])
def test_both_fts_restrictions_give_the_filtered_bm25_ranking(deep, monkeypatch, rowid_limit):
    """The FTS leg restricts matches by allowed document or by allowed chunk rowid; both give
    the BM25 order of the unfiltered leg with the other documents taken out."""
    from chinvex.retrieval import filters

    unfiltered = _deep_search(deep, monkeypatch, k=200, mode="fts", fts_depth=200)
    monkeypatch.setattr(filters, "FTS_ROWID_LIMIT", rowid_limit)
    for kw, keep in [({"path_glob": "special/*"}, lambda uri: "/special/" in uri),
                     ({"since": "2025-01-01T00:00:00.000Z"}, lambda uri: "/noise/" in uri or "new.md" in uri)]:
        got = _deep_search(deep, monkeypatch, k=200, mode="fts", fts_depth=200, **kw)
        expected = [r.chunk_id for r in unfiltered.results if keep(r.source_uri)]
        assert expected and [r.chunk_id for r in got.results] == expected


@pytest.mark.parametrize("exact_limit", [0, 500], ids=["restricted", "exact"])
def test_a_vector_missing_from_the_store_does_not_fail_a_filtered_search(deep, tmp_path, monkeypatch, exact_limit):
    """A chunk committed in SQLite whose vector is gone (an ingest deletes vectors after
    committing the state a search may still read) makes a Chroma query restricted to ids fail
    as a whole; the leg searches the ids that are present instead of falling back to FTS."""
    import sqlite3

    from chinvex.context.registry import Registry
    from chinvex.retrieval import coverage as C
    from chinvex.retrieval import filters
    from chinvex.storage.vectors import VectorStore

    home = tmp_path / "home"
    shutil.copytree(deep["home"], home)
    path = home / "contexts" / "Deep" / "context.json"
    data = json.loads(path.read_text())
    data["index"] = {"sqlite_path": str(home / "indexes/Deep/hybrid.db"),
                     "chroma_dir": str(home / "indexes/Deep/chroma")}
    path.write_text(json.dumps(data))
    monkeypatch.setenv("CHINVEX_HOME", str(home))
    config = Registry().resolve("Deep")
    with sqlite3.connect(home / "indexes/Deep/hybrid.db") as conn:
        rows = conn.execute("SELECT c.chunk_id, d.source_uri FROM chunks c JOIN documents d USING (doc_id) "
                            "WHERE d.source_uri LIKE '%/special/%' ORDER BY c.chunk_id").fetchall()
        store = VectorStore.open(config, conn, create=False)
        gone = rows[0][0]
        store.delete([gone])
        store.close()
    monkeypatch.setattr(filters, "EXACT_LIMIT", exact_limit)
    response = _deep_search({"home": home}, monkeypatch, k=10, mode="vector", path_glob="special/*")
    # Still a vector search; the chunk without a vector is reported in the coverage figure.
    chunks = sqlite3.connect(home / "indexes/Deep/hybrid.db").execute("SELECT COUNT(*) FROM chunks").fetchone()[0]
    assert response.stats.mode == "vector"
    assert response.stats.warnings == [
        f"Deep: vector coverage {C.percent((chunks - 1) / chunks)} ({chunks - 1} of {chunks} chunks have a "
        "usable vector): this search is not fully hybrid, the other chunk is found by its words only "
        "(run 'chinvex ingest --context Deep' to embed it)"]
    assert {r.chunk_id for r in response.results} == {cid for cid, _ in rows} - {gone}


# -- Filter decisions (pure) -------------------------------------------------------------------

def test_path_rule():
    from chinvex.retrieval.filters import path_matches

    assert path_matches("*.py", "/home/me/repo/src/a.py", None)
    assert path_matches("src/*.py", "/home/me/repo/src/a.py", None)          # */<glob> on the uri
    assert path_matches("/src/*.py", "/home/me/repo/src/a.py", None)
    assert path_matches("memory/*.md", "memory://item/1", "memory/1.md")      # the relative path
    assert not path_matches("src/*.py", "/home/me/repo/lib/a.py", "lib/a.py")
    assert not path_matches("[!a]*.py", "a.py", "a.py")


def test_date_bound():
    from chinvex.retrieval.filters import date_bound

    assert date_bound("2026-01-05", end_of_day=True) == "2026-01-05T23:59:59.999Z"
    assert date_bound("2026-01-05", end_of_day=False) == "2026-01-05T00:00:00.000Z"
    assert date_bound(" 2026-01-05T10:00:00Z ", end_of_day=True) == "2026-01-05T10:00:00.000Z"
    assert date_bound("2026-01-05T10:00:00+02:00", end_of_day=True) == "2026-01-05T08:00:00.000Z"
    assert date_bound("2024-02-29", end_of_day=True) == "2024-02-29T23:59:59.999Z"
    assert date_bound("2026-12-31", end_of_day=True) == "2026-12-31T23:59:59.999Z"
    assert date_bound("2026-01-05T10:00", end_of_day=False) == "2026-01-05T10:00:00.000Z"  # no offset: UTC
    assert date_bound("20260105", end_of_day=False) == "2026-01-05T00:00:00.000Z"
    # Numbers are not Unix times here (`--until -1` once meant 1969 and found nothing).
    for bad in ("2026-13-01", "yesterday", "", "-1", "1700000000", "2026", "2026-01-05T25:00"):
        with pytest.raises(ValueError):
            date_bound(bad, end_of_day=True)


def test_vector_plan_and_over_fetch_growth():
    from chinvex.retrieval.filters import next_fetch, plan_vector_leg

    assert plan_vector_leg(0, exact_limit=10, restrict_limit=100) == "none"
    assert plan_vector_leg(10, exact_limit=10, restrict_limit=100) == "exact"
    assert plan_vector_leg(11, exact_limit=10, restrict_limit=100) == "restricted"
    assert plan_vector_leg(101, exact_limit=10, restrict_limit=100) == "overfetch"
    assert next_fetch(100, 100, 50, 50) == "done"                 # enough allowed hits
    assert next_fetch(100, 60, 3, 50) == "done"                   # the store has no more
    assert next_fetch(100, 100, 25, 50) == 250                    # by the observed share, +25%
    assert next_fetch(100, 100, 45, 50) == 200                    # at least doubling
    assert next_fetch(100, 100, 0, 50) == 800
    assert next_fetch(100, 100, 1, 50, max_fetch=2000) == "restrict"


_URIS = ["/r/src/a.py", "/r/lib/a.py", "/r/special/old.md", "memory://x/1", "C:/r/src/b.py", "a.py", ""]
_RELS = [None, "", "src/a.py", "special/old.md", "memory/1.md", 5]
_STAMPS = [None, "", "2020-01-05T15:30:00.000Z", "2020-01-05T00:00:00.000Z", "2025-06-15T12:00:00.000Z"]
_GLOBS = [None, "*.py", "src/*", "/src/*.py", "special/old.md", "[!a]*.py", "?.py", "memory/*", "*"]
_BOUNDS = [None, "2020-01-05T00:00:00.000Z", "2020-01-05T23:59:59.999Z", "2025-01-01T00:00:00.000Z"]


@settings(max_examples=150, deadline=None)
@given(docs=st.lists(st.tuples(st.sampled_from(["repo", "note", "chat"]), st.sampled_from(_URIS),
                               st.sampled_from(_RELS), st.sampled_from(_STAMPS), st.sampled_from(_STAMPS)),
                     min_size=1, max_size=12),
       types=st.sampled_from([None, ["note"], ["repo", "chat"]]), glob=st.sampled_from(_GLOBS),
       since=st.sampled_from(_BOUNDS), until=st.sampled_from(_BOUNDS))
def test_sql_conditions_select_exactly_what_the_final_check_passes(docs, types, glob, since, until):
    """The legs' SQL and the final check on result rows make the same decision for every
    document, so nothing a leg returns is dropped afterwards and nothing is lost before."""
    import sqlite3

    from chinvex.retrieval import filters

    f = filters.SearchFilter.of(types, glob, since, until)
    conn = sqlite3.connect(":memory:")
    filters.register_sql_functions(conn)
    conn.execute("CREATE TABLE documents (doc_id INTEGER PRIMARY KEY, source_type TEXT, source_uri TEXT, "
                 "metadata_json TEXT, updated_at TEXT, created_at TEXT)")
    for i, (stype, uri, rel, updated, created) in enumerate(docs):
        meta = None if rel is None else json.dumps({"path": rel})
        conn.execute("INSERT INTO documents VALUES (?, ?, ?, ?, ?, ?)", (i, stype, uri, meta, updated, created))
    conds, params = filters.sql_conditions(f)
    sql = "SELECT doc_id, " + filters.REL_PATH_SQL.format(d="d") + " FROM documents d"
    selected = {row[0] for row in conn.execute(sql + (" WHERE " + " AND ".join(conds) if conds else ""), params)}
    expected = {i for i, rel in conn.execute(sql)
                if filters.passes(f, source_type=docs[i][0], source_uri=docs[i][1], rel_path=rel,
                                  updated_at=docs[i][3], created_at=docs[i][4])}
    assert selected == expected
