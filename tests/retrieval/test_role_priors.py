"""Issue 17: source-role priors in retrieval. A repository's implementation and docs rank above
tests, fixtures and benchmark output that repeat the same words; a question about tests weighs
every role alike; the weights are a context setting and `--explain` shows them. Real index:
SQLite + FTS5, Chroma and the built-in embedder."""

from __future__ import annotations

import json

import pytest

from chinvex.retrieval.fusion import Candidate, fuse
from chinvex.retrieval.roles import ROLE_WEIGHTS, about_tests, role_weight
from helpers import assert_no_traceback, run_cli, run_cli_in_process

RETRY_CODE = (
    "import time\n\n\ndef retry_with_backoff(call, attempts=5):\n"
    "    '''Retry a flaky call with exponential backoff, sleeping 2**n seconds between failures.'''\n"
    "    for n in range(attempts):\n        try:\n            return call()\n"
    "        except ConnectionError:\n            time.sleep(2 ** n)\n    raise RuntimeError('gave up')\n"
)
RETRY_TEST = (
    "from retry import retry_with_backoff\n\n\n"
    "def test_retry_with_backoff_retries_a_flaky_call_with_exponential_backoff(monkeypatch):\n"
    "    '''Retry a flaky call with exponential backoff: sleeping 2**n seconds between failures.'''\n"
    "    sleeps = []\n    monkeypatch.setattr('time.sleep', sleeps.append)\n"
    "    calls = iter([ConnectionError(), ConnectionError(), 'ok'])\n\n"
    "    def flaky():\n        item = next(calls)\n        if isinstance(item, Exception):\n"
    "            raise item\n        return item\n\n"
    "    assert retry_with_backoff(flaky) == 'ok'  # retry, backoff, exponential, flaky call\n"
    "    assert sleeps == [1, 2]\n"
)

UNRELATED = {
    "cache.py": 'def evict(cache):\n    """Drop the least recently used entry when the cache is full."""\n'
                "    cache.popitem(last=False)\n",
    "config.py": 'import json\n\n\ndef load(path):\n    """Read the JSON settings file."""\n'
                 "    with open(path) as handle:\n        return json.load(handle)\n",
    "README.md": "# Tools\n\nSmall helpers: a cache, a settings loader and a retry helper for flaky calls.\n",
}


def test_fuse_multiplies_the_role_weight():
    weights = {"ctx": {"repo": 1.0}}
    code = Candidate("a", "a", "repo", None, fts=1.0, vector=0.5, weight_table="ctx", role="code")
    test = Candidate("b", "b", "repo", None, fts=2.0, vector=0.6, weight_table="ctx", role="test",
                     role_weight=0.7)
    fused = fuse([code, test], weights)
    by_key = {f.candidate.key: f for f in fused}
    assert by_key["b"].blended == pytest.approx(1.0)
    assert by_key["b"].rank_score == pytest.approx(0.7) and by_key["b"].role_weight == 0.7
    assert by_key["a"].rank_score == pytest.approx(0.0)


def test_role_weight_defaults_overrides_and_questions_about_tests():
    assert role_weight("src/retry.py", "repo", False) == ROLE_WEIGHTS["code"] == 1.0
    assert role_weight("tests/test_retry.py", "repo", False) == ROLE_WEIGHTS["test"] < 1.0
    assert role_weight("tests/fixtures/cases.json", "repo", False) == ROLE_WEIGHTS["fixture"]
    assert role_weight("tests/test_retry.py", "repo", False, {"test": 0.2}) == 0.2
    assert role_weight("tests/test_retry.py", "repo", True) == 1.0  # the question is about tests
    assert role_weight("tests/notes.md", "note", False) == 1.0  # only repository files have roles
    # a fixture copy of a user's note never outranks the note itself (repo 1.0 x fixture < note 0.7)
    assert 1.0 * ROLE_WEIGHTS["fixture"] < 0.7
    assert about_tests("which test covers the retry backoff?") and about_tests("what does test_retry check")
    assert not about_tests("how does the retry backoff work?")


@pytest.fixture(scope="module")
def indexed(tmp_path_factory):
    base = tmp_path_factory.mktemp("roles")
    repo = base / "repo"
    (repo / "tests").mkdir(parents=True)
    (repo / "retry.py").write_text(RETRY_CODE)
    (repo / "tests" / "test_retry.py").write_text(RETRY_TEST)
    for name, text in UNRELATED.items():
        (repo / name).write_text(text)
    env = {"CHINVEX_HOME": str(base / "home")}
    assert run_cli_in_process("context", "create", "Roles", "--repo", str(repo), env=env).code == 0
    assert run_cli_in_process("ingest", "--context", "Roles", env=env).code == 0
    return {"env": env, "home": base / "home"}


def search(indexed, *args):
    result = run_cli("search", "--context", "Roles", *args, "--json", env=indexed["env"])
    assert_no_traceback(result)
    assert result.code == 0, result
    return result.json["results"]


def test_implementation_ranks_above_the_test_that_repeats_its_words(indexed):
    query = "retry a flaky call with exponential backoff"
    results = search(indexed, query, "--explain")
    first = results[0]
    assert first["source_uri"].endswith("retry.py") and "/tests/" not in first["source_uri"]
    test_hit = next(r for r in results if "test_retry" in r["source_uri"])
    assert test_hit["scores"]["role_weight"] == ROLE_WEIGHTS["test"]
    assert test_hit["explain"]["role"] == "test" and test_hit["explain"]["role_weight"] == ROLE_WEIGHTS["test"]
    assert "role_weight" in test_hit["explain"]["formula"]
    assert test_hit["scores"]["rank"] == pytest.approx(
        test_hit["scores"]["blended"] * test_hit["scores"]["weight"] * ROLE_WEIGHTS["test"], abs=1e-5)
    assert first["scores"]["role_weight"] == 1.0 and first["explain"]["role"] == "code"
    human = run_cli("search", "--context", "Roles", query, "--explain", env=indexed["env"]).stdout
    assert f"× test {ROLE_WEIGHTS['test']:g}" in human and "test file weighed" in human


def test_a_question_about_tests_weighs_every_role_alike(indexed):
    results = search(indexed, "which test checks the retry backoff of a flaky call")
    assert all(r["scores"]["role_weight"] == 1.0 for r in results)


def test_role_weights_are_a_context_setting(indexed, tmp_path):
    path = indexed["home"] / "contexts" / "Roles" / "context.json"
    original = path.read_text()
    data = json.loads(original)
    try:
        data["role_weights"] = {"test": 1.0}
        path.write_text(json.dumps(data))
        results = search(indexed, "retry a flaky call with exponential backoff")
        assert all(r["scores"]["role_weight"] == 1.0 for r in results)
        data["role_weights"] = {"tset": 0.5}
        path.write_text(json.dumps(data))
        bad = run_cli("search", "--context", "Roles", "retry", env=indexed["env"])
        assert_no_traceback(bad)
        assert bad.code != 0 and "tset" in bad.stderr and "context.json" in bad.stderr
        assert len(bad.stderr.strip().splitlines()) <= 2
    finally:
        path.write_text(original)
