"""Issue 16 (search side): a search is repeatable across processes, says how much of the index
it could score by vector, and refuses filters that cannot match (real CLI, real Chroma, real
built-in embedder)."""

from __future__ import annotations

import json
import random
import shutil
import sqlite3
from pathlib import Path

import pytest

from helpers import assert_no_traceback, run_cli, run_cli_in_process

WORDS = (
    "cache queue index vector lock retry backoff socket thread parser token schema migration "
    "buffer stream cursor commit branch merge rebase deploy rollback replica shard leader "
    "follower quorum latency throughput budget invoice ledger payment refund customer order "
    "garden tomato staking harvest compost seedling orchard pruning irrigation trellis "
    "violin sonata tempo rehearsal chord melody bassoon conductor overture quartet "
    "glacier volcano basalt erosion sediment delta estuary canyon plateau monsoon "
    "kernel driver interrupt scheduler paging syscall mutex semaphore deadlock watchdog "
    "recipe saffron risotto braise ferment sourdough starter knead proof crumb "
    "telescope nebula quasar orbit parallax redshift comet eclipse zenith aurora"
).split()
NOTES = 450
"""Enough chunks that Chroma's approximate index is a real graph, not a list it scans whole."""


def _sentence(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def _repoint(home: Path, name: str) -> None:
    """A copied CHINVEX_HOME whose context.json still names the original index: point it at
    the copy."""
    path = home / "contexts" / name / "context.json"
    data = json.loads(path.read_text())
    data["index"] = {"sqlite_path": str(home / "indexes" / name / "hybrid.db"),
                     "chroma_dir": str(home / "indexes" / name / "chroma")}
    path.write_text(json.dumps(data))


@pytest.fixture(scope="module")
def notes(tmp_path_factory):
    """A context over 450 one-paragraph notes (each one chunk), ingested in one run."""
    base = tmp_path_factory.mktemp("consistency")
    root = base / "notes"
    root.mkdir()
    rng = random.Random(16)
    for i in range(NOTES):
        text = ". ".join(_sentence(rng, rng.randint(8, 14)) for _ in range(2))
        (root / f"note-{i:03d}.md").write_text(f"# Note {i}\n\n{text}.\n", encoding="utf-8")
    home = base / "home"
    env = {"CHINVEX_HOME": str(home)}
    assert run_cli_in_process("context", "create", "Notes", "--note-root", str(root), env=env).code == 0
    ingested = run_cli_in_process("ingest", "--context", "Notes", "--json", env=env)
    assert ingested.code == 0, ingested
    assert ingested.json["chunks"]["embedded"] >= NOTES
    return {"base": base, "home": home, "env": env, "root": root}


def _without_timing(stdout: str) -> str:
    data = json.loads(stdout)
    data["stats"].pop("took_ms")
    return json.dumps(data, sort_keys=True)


def test_the_same_query_in_five_processes_gives_identical_results(notes):
    """Byte for byte, apart from the time taken. Chroma rebuilds the part of its approximate
    index that is not yet saved when a process loads it, in a different order each time, so
    processes used to disagree on the vector neighbours (5 runs, 4 different top-8 lists)."""
    for query in ("retry backoff with a replica leader", "sourdough starter proof"):
        outputs = []
        for _ in range(5):
            result = run_cli("search", "--context", "Notes", query, "--k", "10", "--json", env=notes["env"])
            assert result.code == 0, result
            assert result.json["stats"]["mode"] == "hybrid"
            outputs.append(_without_timing(result.stdout))
        assert len(set(outputs)) == 1, query


def test_many_queries_rank_identically_in_five_processes(notes, tmp_path):
    """The same, over 60 queries per process (`chinvex eval` runs them in one process), vector
    leg alone: a difference in one query's 30 neighbours shows in its results. (In hybrid mode
    a neighbour lost at the margin often changes nothing visible: the lexical candidates set the
    normalisation's minimum and fill the top 30.)"""
    rng = random.Random(61)
    golden = tmp_path / "golden.json"
    golden.write_text(json.dumps({"name": "repeat", "k": 30, "queries": [
        {"id": f"q{i}", "query": _sentence(rng, rng.randint(2, 6)), "expected": [{"path": "note-000.md"}]}
        for i in range(60)]}), encoding="utf-8")
    runs = []
    for n in range(5):
        out = tmp_path / f"run{n}.jsonl"
        result = run_cli("eval", "--context", "Notes", "--golden", str(golden), "--output", str(out),
                         "--mode", "vector", "--json", env=notes["env"])
        assert result.code == 0, result
        lines = [json.loads(line) for line in out.read_text().splitlines()]
        runs.append([[(r["chunk_id"], r["score"]) for r in line["results"]] for line in lines])
    assert all(len(ranked) == 30 for ranked in runs[0])
    differing = [i for i in range(60) if len({json.dumps(run[i]) for run in runs}) > 1]
    assert differing == []


def test_exact_cosines_do_not_depend_on_the_batch():
    """Each cosine depends on its two vectors only: not on the other rows scored with it, their
    order, or their count; and ranking breaks ties by chunk id."""
    import numpy as np

    from chinvex.retrieval.exact import cosines, ranked, scored

    rng = np.random.default_rng(16)
    query = rng.standard_normal(384).astype(np.float32)
    matrix = rng.standard_normal((75, 384)).astype(np.float32)
    whole = cosines(query, matrix)
    order = rng.permutation(75)
    shuffled = cosines(query, matrix[order])
    assert [shuffled[list(order).index(i)] for i in range(75)] == whole
    assert [cosines(query, matrix[i:i + 1])[0] for i in range(75)] == whole
    reference = matrix.astype(np.float64) @ query.astype(np.float64)
    reference /= np.linalg.norm(matrix.astype(np.float64), axis=1) * np.linalg.norm(query.astype(np.float64))
    assert np.allclose(whole, reference, rtol=0, atol=1e-12)
    assert cosines(query, np.zeros((1, 384), dtype=np.float32)) == [0.0]
    assert ranked({"b": 0.5, "a": 0.5, "c": 0.9}) == [("c", 0.9), ("a", 0.5), ("b", 0.5)]
    assert ranked(scored(query, {"x": matrix[0], "y": matrix[0]}), 1) == [("x", whole[0])]


# -- vector coverage ----------------------------------------------------------------------------

def _copy_home(notes, tmp_path: Path) -> Path:
    home = tmp_path / "home"
    shutil.copytree(notes["home"], home)
    _repoint(home, "Notes")
    return home


def test_a_deleted_store_is_reported_with_its_coverage(notes, tmp_path):
    home = _copy_home(notes, tmp_path)
    shutil.rmtree(home / "indexes" / "Notes" / "chroma")
    env = {"CHINVEX_HOME": str(home)}
    data = run_cli("search", "--context", "Notes", "sourdough starter", "--json", env=env)
    assert data.code == 0, data
    stats = data.json["stats"]
    assert stats["mode"] == "fts" and data.json["results"]
    chunks = sqlite3.connect(home / "indexes" / "Notes" / "hybrid.db").execute(
        "SELECT COUNT(*) FROM chunks").fetchone()[0]
    coverage = [w for w in stats["warnings"] if "vector coverage" in w]
    assert coverage == [f"Notes: vector coverage 0 % (0 of {chunks} chunks have a usable vector): "
                        "this search is full-text only"]
    assert stats["vector_coverage"] == {"chunks": chunks, "with_vector": 0, "ratio": 0.0}
    human = run_cli("search", "--context", "Notes", "sourdough starter", env=env)
    assert_no_traceback(human)
    assert human.code == 0 and "vector coverage 0 %" in human.stderr and "warning" not in human.stdout
    assert "\nfts, " in "\n" + human.stdout.splitlines()[-1]


def test_a_store_older_than_the_index_is_reported_as_partly_hybrid(notes, tmp_path):
    """A Chroma folder restored from a backup taken before the last ingest: the chunks added
    since have no vector. The recorded figure is about the store that was replaced, so the
    search counts the one that is there."""
    home = _copy_home(notes, tmp_path)
    index = home / "indexes" / "Notes"
    env = {"CHINVEX_HOME": str(home)}
    backup = tmp_path / "chroma-backup"
    shutil.copytree(index / "chroma", backup)
    root = tmp_path / "more"
    root.mkdir()
    rng = random.Random(7)
    for i in range(50):
        (root / f"more-{i:02d}.md").write_text(f"# More {i}\n\n{_sentence(rng, 12)}.\n", encoding="utf-8")
    assert run_cli_in_process("context", "add-source", "Notes", "--note-root", str(root), env=env).code == 0
    assert run_cli_in_process("ingest", "--context", "Notes", env=env).code == 0
    shutil.rmtree(index / "chroma")
    shutil.copytree(backup, index / "chroma")
    chunks = sqlite3.connect(index / "hybrid.db").execute("SELECT COUNT(*) FROM chunks").fetchone()[0]

    result = run_cli("search", "--context", "Notes", "telescope nebula orbit", "--json", env=env)
    assert result.code == 0, result
    stats = result.json["stats"]
    assert stats["mode"] == "hybrid"
    with_vector = chunks - 50
    percent = round(100 * with_vector / chunks)
    assert f"Notes: vector coverage {percent} % ({with_vector} of {chunks} chunks have a usable vector): " \
           "this search is not fully hybrid, the other 50 chunks are found by their words only " \
           "(run 'chinvex ingest --context Notes' to embed them)" in stats["warnings"]
    assert stats["vector_coverage"] == {"chunks": chunks, "with_vector": with_vector,
                                        "ratio": round(with_vector / chunks, 4)}
    human = run_cli("search", "--context", "Notes", "telescope nebula orbit", env=env)
    assert human.code == 0, human
    assert "not fully hybrid" in human.stderr and "warning" not in human.stdout
    assert f"\nhybrid (vectors for {percent} % of chunks), " in human.stdout


def test_full_coverage_says_nothing(notes):
    result = run_cli("search", "--context", "Notes", "violin sonata", "--json", env=notes["env"])
    assert result.code == 0, result
    assert result.json["stats"]["warnings"] == [] and result.json["stats"]["mode"] == "hybrid"
    assert result.json["stats"]["vector_coverage"] == {"chunks": NOTES, "with_vector": NOTES, "ratio": 1.0}
    fts = run_cli("search", "--context", "Notes", "violin sonata", "--mode", "fts", "--json", env=notes["env"])
    assert fts.json["stats"].get("vector_coverage") is None


def test_coverage_figures_and_wording():
    from chinvex.retrieval.coverage import VectorCoverage, mode_label, percent, total, warning

    assert [percent(r) for r in (0, 0.0004, 0.004, 0.2341, 0.5, 0.994, 0.9996, 1)] == [
        "0 %", "< 0.1 %", "0.4 %", "23 %", "50 %", "99.4 %", "99.9 %", "100 %"]
    both = total([VectorCoverage(100, 100), VectorCoverage(300, 0)])
    assert both == VectorCoverage(400, 100) and both.as_json() == {"chunks": 400, "with_vector": 100, "ratio": 0.25}
    assert total([]) is None and VectorCoverage(0, 0).complete
    assert mode_label("hybrid", both) == "hybrid (vectors for 25 % of chunks)"
    assert mode_label("hybrid", VectorCoverage(5, 5)) == "hybrid" and mode_label("fts", both) == "fts"
    assert warning("A", VectorCoverage(5, 5), vector_leg_ran=True) is None
    assert "run 'chinvex ingest --context A'" not in warning("A", VectorCoverage(4, 3), vector_leg_ran=False)


# -- filters that cannot match --------------------------------------------------------------------

VALID = "repo, codex_session, chat, note, agent_session, memory"


@pytest.mark.parametrize("args, message", [
    (("--source-types", "bogus"), f"error: --source-types: unknown source type 'bogus' (valid: {VALID})"),
    (("--source-types", "note,bogus,chatt"),
     f"error: --source-types: unknown source type 'bogus', 'chatt' (valid: {VALID})"),
    (("--until", "-1"), "error: --until '-1': not a date; use an ISO 8601 date or time, "
                        "e.g. 2026-01-31, 2026-01-31T14:30 or 2026-01-31T14:30:00Z"),
    (("--since", "garbage"), "error: --since 'garbage': not a date;"),
    (("--since", "1700000000"), "error: --since '1700000000': not a date;"),
])
def test_bad_filters_are_usage_errors(notes, args, message):
    result = run_cli("search", "--context", "Notes", "cache", *args, env=notes["env"])
    assert_no_traceback(result)
    assert result.code == 2 and result.stderr.startswith(message) and len(result.stderr.splitlines()) == 1, result
    as_json = run_cli("search", "--context", "Notes", "cache", *args, "--json", env=notes["env"])
    assert as_json.code == 2 and as_json.json["error"]["code"] == "USAGE_ERROR"


def test_valid_filters_still_work(notes):
    for args in (("--source-types", "note"), ("--source-types", "repo"), ("--since", "2000-01-01"),
                 ("--until", "2999-01-01T00:00:00Z")):
        result = run_cli("search", "--context", "Notes", "cache", *args, "--json", env=notes["env"])
        assert result.code == 0, (args, result)
    assert run_cli("search", "--context", "Notes", "cache", "--source-types", "repo", "--json",
                   env=notes["env"]).json["results"] == []


def test_a_type_found_in_the_index_is_valid(notes, tmp_path):
    """A third-party adapter's source type is valid once its documents are in an index."""
    home = _copy_home(notes, tmp_path)
    with sqlite3.connect(home / "indexes" / "Notes" / "hybrid.db") as conn:
        conn.execute("UPDATE documents SET source_type = 'wiki' WHERE source_uri LIKE '%note-001.md'")
    env = {"CHINVEX_HOME": str(home)}
    found = run_cli("search", "--context", "Notes", "note", "--source-types", "wiki", "--mode", "fts", "--json", env=env)
    assert found.code == 0 and {r["source_type"] for r in found.json["results"]} == {"wiki"}, found
    refused = run_cli("search", "--context", "Notes", "note", "--source-types", "wikki", env=env)
    assert refused.code == 2 and f"(valid: {VALID}, wiki)" in refused.stderr


def test_mcp_search_refuses_an_unknown_source_type(notes, monkeypatch):
    from chinvex.mcp import limits as L
    from chinvex.mcp import tools as T
    from chinvex.mcp.state import ServerState

    monkeypatch.setenv("CHINVEX_HOME", str(notes["home"]))
    state = ServerState("Notes")
    ok, payload = T.run_tool(T.chinvex_search, state, query="cache", source_types=["bogus"])
    assert not ok and payload["error"]["code"] == L.INVALID_ARGUMENT
    assert payload["error"]["message"] == f"source_types: unknown source type 'bogus' (valid: {VALID})"
    ok, payload = T.run_tool(T.chinvex_search, state, query="cache", source_types=["note"])
    assert ok and payload["results"] and payload["stats"]["warnings"] == []
    assert payload["stats"]["vector_coverage"]["ratio"] == 1.0
    state.searcher.close()
