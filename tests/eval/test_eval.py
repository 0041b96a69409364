"""Issue 4: the eval harness (metrics, golden formats, CLI) and the golden queries over this
repository reaching hit@5 >= 0.9."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from chinvex.eval.golden import load_golden
from chinvex.eval.metrics import path_matches, percentile, score_ranking
from chinvex.errors import UsageError
from chinvex.models import GoldenExpected
from helpers import GOLDEN_CORPUS_COMMIT, REPO_ROOT, assert_no_traceback, clone_holds, run_cli


def E(path, contains=None):
    return GoldenExpected(path=path, contains=contains)


def test_path_matching_at_segment_boundaries():
    assert path_matches("/data/locomo/conv-26/session_03.md", "conv-26/session_03.md")
    assert path_matches("/x/conversations.json#abc", "conversations.json")
    assert not path_matches("/data/xconv-26/session_03.md", "conv-26/session_03.md")
    assert not path_matches("/a/b.md", "")


def test_metrics_by_hand():
    expected = [E("a.md", "[D1:1]"), E("b.md")]
    results = [("/r/c.md", "x"), ("/r/a.md", "turn [D1:1] here"), ("/r/a.md", "[D1:1] again"), ("/r/b.md", "y")]
    s = score_ranking(results, expected, k=10)
    assert s.hit == 1.0 and s.recall == 1.0 and s.rr == 0.5
    dcg = 1 / math.log2(3) + 1 / math.log2(5)  # ranks 2 and 4; rank 3 repeats an item: no gain
    idcg = 1 + 1 / math.log2(3)
    assert s.ndcg == pytest.approx(dcg / idcg)
    cut = score_ranking(results, expected, k=3)
    assert cut.recall == 0.5 and cut.rr == 0.5
    miss = score_ranking([("/r/a.md", "no tag")], [E("a.md", "[D1:1]")], k=5)
    assert (miss.hit, miss.recall, miss.rr, miss.ndcg) == (0.0, 0.0, 0.0, 0.0)
    assert percentile([5, 1, 3, 2, 4], 50) == 3 and percentile([1, 2, 3, 4, 100], 95) == 100


def test_documented_and_legacy_formats(tmp_path: Path):
    documented = tmp_path / "g.json"
    documented.write_text(json.dumps({"schema_version": 1, "name": "n", "k": 3, "queries": [
        {"id": "q1", "query": "x", "expected": [{"path": "a.md", "contains": "t"}], "answerable": True},
        {"query": "y", "expected": [], "answerable": False}]}))
    golden = load_golden(documented)
    assert golden.k == 3 and golden.queries[1].id == "q2" and not golden.queries[1].answerable
    legacy = tmp_path / "legacy.json"
    legacy.write_text(json.dumps({"queries": [
        {"query": "how?", "context": "C", "expected_files": ["src/a.py", "b.md"], "anchor": "def a", "k": 7}]}))
    q = load_golden(legacy).queries[0]
    assert q.context == "C" and q.k == 7
    assert [(e.path, e.contains) for e in q.expected] == [("src/a.py", "def a"), ("b.md", "def a")]
    bad = tmp_path / "bad.json"
    bad.write_text("{nope")
    with pytest.raises(UsageError, match="bad.json"):
        load_golden(bad)
    with pytest.raises(UsageError, match="not found"):
        load_golden(tmp_path / "missing.json")


def test_golden_queries_reach_hit_at_5_on_this_repository(repo_index, tmp_path: Path):
    """Scored on the repository as it is at GOLDEN_CORPUS_COMMIT (see there why not as it is
    now)."""
    if not clone_holds(GOLDEN_CORPUS_COMMIT):
        pytest.skip(f"this clone does not hold {GOLDEN_CORPUS_COMMIT[:12]}, the corpus the golden "
                    "queries are scored on (a shallow clone?)")
    out = tmp_path / "run.jsonl"
    result = run_cli("eval", "--context", "chinvex", "--golden", str(REPO_ROOT / "golden_queries" / "chinvex.json"),
                     "--k", "5", "--output", str(out), "--json", env=repo_index["env"])
    assert_no_traceback(result)
    assert result.code == 0, result
    report = result.json
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(lines) == report["queries"] >= 25
    assert set(lines[0]) >= {"id", "query", "k", "results", "hit", "recall", "rr", "ndcg", "took_ms"}
    assert set(lines[0]["results"][0]) >= {"rank", "chunk_id", "source_uri", "source_type", "score", "text"}
    assert report["by_source_type"]["repo"]["queries"] == report["scored_queries"]
    assert report["latency_ms"]["p50"] is not None and report["latency_ms"]["p95"] is not None
    print(f"\nhit@5 {report['metrics']['hit']}, MRR {report['metrics']['mrr']}, misses {report['misses']}")
    assert report["metrics"]["hit"] >= 0.9, report["misses"]
    human = run_cli("eval", "--context", "chinvex", "--golden", str(REPO_ROOT / "golden_queries" / "chinvex.json"),
                    "--k", "5", env=repo_index["env"])
    assert human.code == 0 and "hit@k" in human.stdout


def test_eval_bad_golden_file_is_a_usage_error(repo_index, tmp_path: Path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"queries": "no"}')
    result = run_cli("eval", "--context", "chinvex", "--golden", str(bad), "--json", env=repo_index["env"])
    assert result.code == 2 and "bad.json" in result.json["error"]["message"]


def test_fixture_golden_queries(fixtures_context, tmp_path: Path):
    """golden_queries/fixtures.json over the context its README describes. Measured when this
    test was written (built-in embedder, hybrid, k=5): hit@5 1.000 (10/10), recall@5 1.000,
    MRR 1.000. The threshold leaves two misses of margin for ranking changes; a query whose
    expected source is not found at all shows in `misses`.
    fix-08 used to expect three files that are one Codex thread (the same thread id): ingest
    indexes that thread once, under the source that wins precedence (the legacy rollout), so the
    other two paths could never match and capped its recall at 1/3."""
    out = tmp_path / "run.jsonl"
    golden = REPO_ROOT / "golden_queries" / "fixtures.json"
    result = run_cli("eval", "--context", "fixtures", "--golden", str(golden), "--output", str(out),
                     "--json", env=fixtures_context["env"])
    assert_no_traceback(result)
    assert result.code == 0, result
    report = result.json
    queries = json.loads(golden.read_text())["queries"]
    assert report["k"] == 5 and report["queries"] == report["scored_queries"] == len(queries)
    assert len(out.read_text().splitlines()) == len(queries)
    m = report["metrics"]
    print(f"\nfixtures: hit@5 {m['hit']:.3f}, recall@5 {m['recall']:.3f}, MRR {m['mrr']:.3f}, "
          f"nDCG@5 {m['ndcg']:.3f}, misses {report['misses']}")
    assert set(report["by_source_type"]) == {"codex_session", "chat", "agent_session"}
    assert m["hit"] >= 0.8, report["misses"]


def test_golden_labels_point_at_what_the_repository_holds():
    """A golden question about this repository names the file that defines the answer and a
    string in it. When code moves (a module split), a stale label silently turns a right answer
    into a miss in every figure built on it, so each label is checked against the tree."""
    golden = json.loads((REPO_ROOT / "golden_queries" / "chinvex.json").read_text("utf-8"))
    stale = []
    for query in golden["queries"]:
        for expected in query.get("expected", []):
            path = REPO_ROOT / expected["path"]
            if not path.is_file():
                stale.append(f"{query['id']}: {expected['path']} does not exist")
            elif expected.get("contains") and expected["contains"] not in path.read_text("utf-8"):
                stale.append(f"{query['id']}: {expected['path']} no longer holds {expected['contains']!r}")
    assert not stale, "\n".join(stale)


@pytest.mark.parametrize("queries, fragment", [
    ([{"id": "retry", "query": "x", "expected": ["src/retry.py"]}],
     "query 'retry' (queries[0]): expected[0] is \"src/retry.py\"; each expected item is an object like {\"path\""),
    ([{"query": "x", "expected": []}, {"query": "y", "expected": [{"path": "a.md", "contain": "t"}]}],
     "queries[1]: expected[0]: invalid field 'contain'"),
    ([{"query": "x", "expected": "a.md"}], "queries[0]: expected must be a list; each expected item is an object"),
])
def test_a_wrong_expected_item_names_its_query_and_the_form_it_takes(tmp_path: Path, queries, fragment):
    golden = tmp_path / "golden.json"
    golden.write_text(json.dumps({"queries": queries}))
    with pytest.raises(UsageError) as caught:
        load_golden(golden)
    message = caught.value.message
    assert message.startswith(f"--golden {golden}: ") and fragment in message, message
    assert "GoldenExpected" not in message and "dictionary" not in message


def test_eval_with_a_string_as_expected_item_is_one_usage_line(tmp_path: Path, chinvex_home: Path):
    from helpers import indexed_notes, run_cli_in_process

    indexed_notes(tmp_path / "notes", "ev", {"retry.md": "# Retries\n\nWebhooks retry with backoff.\n"})
    golden = tmp_path / "golden.json"
    golden.write_text(json.dumps({"queries": [{"id": "retry", "query": "retry", "expected": ["path"]}]}))
    done = run_cli_in_process("eval", "--context", "ev", "--golden", str(golden))
    assert done.code == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert str(golden) in done.stderr and "query 'retry'" in done.stderr and '{"path":' in done.stderr
    assert_no_traceback(done)
