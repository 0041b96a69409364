"""The reranking stage (chinvex/retrieval/rerank.py): a reranker a package registers reorders
the top N fused results; a search can skip it; one that fails or cannot be found leaves the
fusion order and says why, and is an error only when the search asked for it.

No reranker ships with chinvex, so the rerankers here are a package written by the test: a
`*.dist-info` folder with an `entry_points.txt` on the path, which is what an installed package
is to importlib.metadata (as in tests/test_plugins.py). Their scores are known in advance (how
often a passage says a word), which is what lets the tests state the order they must produce.
Real index, real embedder, real CLI process."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from chinvex import plugins
from chinvex.errors import UsageError
from chinvex.models.context import RerankConfig
from chinvex.retrieval.rerank import RerankerError, checked_scores, make_reranker, reranked_order
from helpers import assert_no_traceback, indexed_notes, run_cli, write_plugin_package

PLUGIN = '''
class WordCountReranker:
    """Scores a passage by how often it says the word named by the settings' model."""

    def __init__(self, word):
        self.word = word
        self.name = f"wordcount:{word}"

    @classmethod
    def from_settings(cls, settings):
        return cls(settings.model or "")

    def score(self, query, passages):
        return [p.lower().count(self.word) for p in passages]


class BrokenReranker:
    name = "broken"

    @classmethod
    def from_settings(cls, settings):
        return cls()

    def score(self, query, passages):
        raise RuntimeError("model file missing")


class ShortReranker:
    name = "short"

    @classmethod
    def from_settings(cls, settings):
        return cls()

    def score(self, query, passages):
        return [1.0]
'''

NOTES = {
    "retries.md": "# Retries\n\nThe sender retries a failed webhook three times with backoff.\n",
    "backoff.md": "# Backoff\n\nWebhook retries wait longer after every failed attempt.\n",
    "canary.md": "# Canary\n\nA canary webhook, canary first: the canary release retries webhooks too.\n",
    "ledger.md": "# Ledger\n\nEvery webhook retry is written to the delivery ledger.\n",
}
QUERY = "webhook retries after a failure"


@pytest.fixture
def installed_rerankers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    site = write_plugin_package(tmp_path / "site", "chinvex_test_rerankers", PLUGIN, """\
        [chinvex.rerankers]
        wordcount = chinvex_test_rerankers:WordCountReranker
        broken = chinvex_test_rerankers:BrokenReranker
        short = chinvex_test_rerankers:ShortReranker
        """)
    monkeypatch.syspath_prepend(str(site))
    plugins.rescan()
    yield site
    plugins.rescan()


def _set_rerank(home: Path, context: str, rerank: dict | None) -> None:
    path = home / "contexts" / context / "context.json"
    data = json.loads(path.read_text("utf-8"))
    data.setdefault("retrieval", {})["rerank"] = rerank
    path.write_text(json.dumps(data), "utf-8")


def _search(context: str, **request):
    from chinvex.context.registry import Registry
    from chinvex.retrieval.search import SearchRequest, Searcher

    searcher = Searcher()
    try:
        return searcher.search([Registry().resolve(context)], SearchRequest(query=QUERY, k=4, **request))
    finally:
        searcher.close()


@pytest.fixture
def webhooks(tmp_path: Path, chinvex_home: Path) -> Path:
    indexed_notes(tmp_path / "notes", "Hooks", NOTES)
    return chinvex_home


def test_reranked_order_is_best_score_first_and_keeps_fusion_order_on_ties():
    assert reranked_order([0.1, 3.0, 0.1, 2.0]) == [1, 3, 0, 2]
    assert reranked_order([]) == []


def test_scores_must_be_one_finite_number_per_passage():
    assert checked_scores((1, 2.5), 2, "r") == [1.0, 2.5]
    for bad, why in (([1.0], "1 scores for 2 passages"), ([1.0, math.nan], "not a finite number"),
                     (["high", "low"], "not numbers"), (None, "not numbers")):
        with pytest.raises(RerankerError, match=why):
            checked_scores(bad, 2, "r")


def test_an_unknown_reranker_names_what_is_installed(installed_rerankers):
    with pytest.raises(RerankerError) as caught:
        make_reranker(RerankConfig(provider="cross-encoder"))
    assert "Unknown reranker 'cross-encoder'" in caught.value.message
    assert "installed: wordcount, broken, short" in caught.value.message


def test_a_package_reranker_reorders_the_top_n(webhooks, installed_rerankers):
    fused = _search("Hooks")
    assert fused.stats.reranker is None and all(r.scores.rerank is None for r in fused.results)
    order = [r.chunk_id for r in fused.results]
    assert len(order) == 4 and "canary" not in fused.results[0].text.lower(), "precondition"

    _set_rerank(webhooks, "Hooks", {"provider": "wordcount", "model": "canary", "top_n": 4})
    reranked = _search("Hooks")
    assert reranked.stats.reranker == "wordcount:canary"
    first = reranked.results[0]
    assert "canary" in first.text.lower() and first.scores.rerank == first.text.lower().count("canary")
    # the passages that never say the word keep their fusion order below it
    rest = [r.chunk_id for r in reranked.results[1:]]
    assert rest == [c for c in order if c != first.chunk_id]
    assert [r.rank for r in reranked.results] == [1, 2, 3, 4]

    assert [r.chunk_id for r in _search("Hooks", rerank=False).results] == order  # skipped on request

    # top_n 2: only the first two fused results are read; the canary note is not among them
    _set_rerank(webhooks, "Hooks", {"provider": "wordcount", "model": "canary", "top_n": 2})
    two = _search("Hooks")
    assert [r.chunk_id for r in two.results[2:]] == order[2:]
    assert [r.scores.rerank is not None for r in two.results] == [True, True, False, False]


@pytest.mark.parametrize("provider, why", [("broken", "Reranker 'broken' failed: RuntimeError: model file missing"),
                                           ("short", "Reranker 'short' returned 1 scores for 4 passages"),
                                           ("nowhere", "Unknown reranker 'nowhere'")])
def test_a_reranker_that_cannot_run_leaves_fusion_order_unless_asked_for(webhooks, installed_rerankers,
                                                                         provider, why):
    order = [r.chunk_id for r in _search("Hooks").results]
    _set_rerank(webhooks, "Hooks", {"provider": provider, "top_n": 4})
    response = _search("Hooks")
    assert [r.chunk_id for r in response.results] == order and response.stats.reranker is None
    assert any(w.startswith(why) and w.endswith("results are in fusion order") for w in response.stats.warnings)
    with pytest.raises(RerankerError, match=why):
        _search("Hooks", rerank=True)


def test_asking_for_a_reranker_where_none_is_configured_is_a_usage_error(webhooks):
    with pytest.raises(UsageError, match="No reranker is configured for context Hooks"):
        _search("Hooks", rerank=True)
    result = run_cli("search", "--context", "Hooks", QUERY, "--rerank")
    assert_no_traceback(result)
    assert result.code == 2 and "No reranker is configured for context Hooks" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_the_cli_shows_the_reranker_and_recall_search_says_whether_it_ran(webhooks, installed_rerankers,
                                                                           monkeypatch):
    from chinvex.mcp import tools as T
    from chinvex.mcp.state import ServerState

    _set_rerank(webhooks, "Hooks", {"provider": "wordcount", "model": "canary", "top_n": 4})
    env = {"PYTHONPATH": str(installed_rerankers)}
    human = run_cli("search", "--context", "Hooks", QUERY, env=env)
    assert human.code == 0 and "reranked by wordcount:canary" in human.stdout, human
    assert "canary.md" in human.stdout.splitlines()[0] and "reranked 4.000" in human.stdout.splitlines()[0]  # "# Canary" and three more
    skipped = run_cli("search", "--context", "Hooks", QUERY, "--no-rerank", "--json", env=env)
    assert skipped.code == 0 and skipped.json["stats"]["reranker"] is None

    monkeypatch.setenv("CHINVEX_HOME", str(webhooks))
    state = ServerState("Hooks")
    try:
        ok, on = T.run_tool(T.recall_search, state, query=QUERY, scope="project")
        assert ok and on["query_metadata"]["reranked"] is True
        assert "canary" in on["results"][0]["content"].lower()
        ok, off = T.run_tool(T.recall_search, state, query=QUERY, scope="project", rerank=False)
        assert ok and off["query_metadata"]["reranked"] is False
    finally:
        state.searcher.close()
