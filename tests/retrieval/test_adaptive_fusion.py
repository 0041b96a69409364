"""Issue 17: the blend's leg weights adapt to the query and its candidates (fusion.fts_share):
plain words meeting code lean on the vector leg, a query naming code on the lexical one; the
seed's fixed 0.6 / 0.4 stays available as `retrieval.fusion = "seed"`. Real index for the end
to end part: SQLite + FTS5, Chroma and the built-in embedder."""

from __future__ import annotations

import json

import pytest

from chinvex.retrieval.fusion import (PEAK_DEPTH, PLATEAU, SHARE_BASE, SHARE_IDENTIFIER, SHARE_LEXICAL_PEAK,
                                      SHARE_NATURAL_CODE, Candidate, QuerySignals, fts_share, fuse, lexical_peak,
                                      query_signals)
from helpers import assert_no_traceback, run_cli, run_cli_in_process


def cand(key: str, kind: str | None, fts: float | None = None, vector: float | None = None) -> Candidate:
    return Candidate(key=key, chunk_id=key, source_type="repo", updated_at=None, fts=fts, vector=vector,
                     weight_table="t", kind=kind)


@pytest.mark.parametrize("query, named", [
    ("how does get_environ_proxies read no_proxy", True),
    ("where is parseConfig called", True),
    ("what does CaseInsensitiveDict keep", True),
    ("does os.path.isfile follow links", True),
    ("what calls load_all()", True),
    ("python check if a file exists", False),
    ("APOE4 expression in iPSC-derived neurons", False),  # mixed-case abbreviations are prose
    ("Cis-acting lncRNAs control expression", False),
    ("what did we decide about the queue, e.g. for billing", False),
])
def test_a_query_names_code_only_with_an_identifier(query, named):
    assert query_signals(query, []).identifier is named


def test_share_moves_to_the_vector_leg_as_plain_words_meet_code():
    prose = fts_share(QuerySignals(identifier=False, code_share=0.0))
    half = fts_share(QuerySignals(identifier=False, code_share=0.5))
    code = fts_share(QuerySignals(identifier=False, code_share=1.0))
    named = fts_share(QuerySignals(identifier=True, code_share=1.0))
    assert prose == pytest.approx(SHARE_BASE)
    assert code == pytest.approx(SHARE_BASE + SHARE_NATURAL_CODE) and code < half < prose
    assert named == pytest.approx(SHARE_BASE + SHARE_IDENTIFIER) and named > prose
    assert fts_share(QuerySignals(False, 1.0), base=0.1, natural_code=-1.0) == 0.05  # clipped
    assert fts_share(QuerySignals(True, 0.0), base=0.9, identifier=0.5) == 0.95


def scored(*fts: float | None) -> list[Candidate]:
    return [cand(f"c{i}", "text", fts=f, vector=0.5) for i, f in enumerate(fts)]


def test_lexical_peak_is_how_far_the_best_bm25_scores_stand_out():
    # One chunk far above a long tail: BM25's order is informative.
    standout = scored(20.0, 18.0, *[2.0 - 0.1 * i for i in range(PEAK_DEPTH + 2)])
    # Many chunks matching the same common words about equally: a plateau.
    plateau = scored(*[5.0 - 0.01 * i for i in range(PEAK_DEPTH + 1)], 1.0)
    assert lexical_peak(standout) > 0.8
    assert lexical_peak(plateau) < 0.05
    assert 0.0 <= lexical_peak(plateau) < PLATEAU < lexical_peak(standout) <= 1.0
    # Chunks without a lexical score (vector-only, no query word) do not count.
    assert lexical_peak(plateau + scored(None, None)) == lexical_peak(plateau)


def test_lexical_peak_changes_nothing_when_it_cannot_be_measured():
    assert lexical_peak(scored(*[9.0 - i for i in range(PEAK_DEPTH)])) == PLATEAU  # too few scores
    assert lexical_peak(scored(*[3.0] * (PEAK_DEPTH + 5))) == PLATEAU  # all equal
    assert lexical_peak([]) == PLATEAU
    assert fts_share(QuerySignals(identifier=False, code_share=0.0, lexical_peak=PLATEAU)) == pytest.approx(SHARE_BASE)


def test_a_plateau_lowers_the_lexical_share_and_a_standout_leaves_it():
    standout = fts_share(QuerySignals(identifier=False, code_share=0.0, lexical_peak=1.0))
    plateau = fts_share(QuerySignals(identifier=False, code_share=0.0, lexical_peak=0.0))
    flatter = fts_share(QuerySignals(identifier=False, code_share=0.0, lexical_peak=0.25))
    # Min-max already gives a standout its full lexical score: no extra weight on top.
    assert standout == pytest.approx(SHARE_BASE)
    assert plateau == pytest.approx(SHARE_BASE - SHARE_LEXICAL_PEAK * PLATEAU)
    assert plateau < flatter < SHARE_BASE
    code_plateau = fts_share(QuerySignals(identifier=False, code_share=1.0, lexical_peak=0.0))
    assert code_plateau < plateau and code_plateau >= 0.05


def test_code_share_counts_code_chunks_among_the_candidates():
    signals = query_signals("retry a flaky call", [cand("a", "code"), cand("b", "code"), cand("c", "text"),
                                                    cand("d", None)])
    assert signals.code_share == pytest.approx(0.5) and not signals.identifier


def test_the_share_decides_between_a_lexical_and_a_vector_favourite():
    lexical = cand("lexical", "code", fts=10.0, vector=0.2)
    semantic = cand("semantic", "code", fts=2.0, vector=0.8)
    floor = cand("floor", "code", fts=0.0, vector=0.0)
    weights = {"t": {"repo": 1.0}}
    assert fuse([lexical, semantic, floor], weights, fts_weight=0.6)[0].candidate.key == "lexical"
    assert fuse([lexical, semantic, floor], weights, fts_weight=0.3)[0].candidate.key == "semantic"


@pytest.fixture(scope="module")
def indexed(tmp_path_factory):
    base = tmp_path_factory.mktemp("fusion")
    repo = base / "repo"
    repo.mkdir()
    (repo / "files.py").write_text(
        "import os\n\n\ndef exists(path):\n    '''True when path names an existing regular file.'''\n"
        "    return os.path.isfile(path)\n")
    (repo / "cache.py").write_text(
        "def evict(cache):\n    '''Drop the least recently used entry when the cache is full.'''\n"
        "    cache.popitem(last=False)\n")
    (repo / "notes.md").write_text("# Notes\n\nThe cache keeps recent entries; files are checked before reading.\n")
    env = {"CHINVEX_HOME": str(base / "home")}
    assert run_cli_in_process("context", "create", "Fusion", "--repo", str(repo), env=env).code == 0
    assert run_cli_in_process("ingest", "--context", "Fusion", env=env).code == 0
    return {"env": env, "home": base / "home"}


def search(indexed, *args):
    result = run_cli("search", "--context", "Fusion", *args, "--json", env=indexed["env"])
    assert_no_traceback(result)
    assert result.code == 0, result
    return result.json


def test_search_reports_the_share_it_used_and_explains_it(indexed):
    data = search(indexed, "check whether a file exists", "--explain")
    share = data["stats"]["fts_share"]
    code_share = 2 / 3  # files.py and cache.py are code, notes.md is prose
    assert share == pytest.approx(SHARE_BASE + SHARE_NATURAL_CODE * code_share, abs=1e-6)
    top = data["results"][0]
    assert top["explain"]["fts"]["weight"] == share and top["explain"]["vector"]["weight"] == pytest.approx(1 - share)
    assert top["scores"]["blended"] == pytest.approx(
        share * top["scores"]["fts_norm"] + (1 - share) * top["scores"]["vector_norm"], abs=1e-5)
    named = search(indexed, "where is os.path.isfile used")["stats"]["fts_share"]
    assert named == pytest.approx(SHARE_BASE + SHARE_IDENTIFIER)


def test_the_seed_blend_is_a_setting(indexed):
    path = indexed["home"] / "contexts" / "Fusion" / "context.json"
    original = path.read_text()
    data = json.loads(original)
    try:
        data["retrieval"] = {"fusion": "seed"}
        path.write_text(json.dumps(data))
        assert search(indexed, "check whether a file exists")["stats"]["fts_share"] == 0.6
        data["retrieval"] = {"fusion": "clever"}
        path.write_text(json.dumps(data))
        bad = run_cli("search", "--context", "Fusion", "files", env=indexed["env"])
        assert_no_traceback(bad)
        assert bad.code != 0 and "fusion" in bad.stderr and "context.json" in bad.stderr
    finally:
        path.write_text(original)


@pytest.fixture(scope="module")
def notes_index(tmp_path_factory):
    base = tmp_path_factory.mktemp("peak")
    notes = base / "notes"
    notes.mkdir()
    for i in range(PEAK_DEPTH + 6):
        (notes / f"day{i:02d}.md").write_text(f"# Day {i}\n\nThe deployment checklist for the server was reviewed.\n")
    (notes / "zoo.md").write_text("# Zoo\n\nThe zebra enclosure needs a deployment of new fences.\n")
    env = {"CHINVEX_HOME": str(base / "home")}
    assert run_cli_in_process("context", "create", "Peak", "--note-root", str(notes), env=env).code == 0
    assert run_cli_in_process("ingest", "--context", "Peak", env=env).code == 0
    return env


def test_a_plateau_of_equal_lexical_matches_leans_on_the_vector_leg(notes_index):
    def share(query: str) -> float:
        result = run_cli("search", "--context", "Peak", query, "--json", env=notes_index)
        assert_no_traceback(result)
        assert result.code == 0, result
        return result.json["stats"]["fts_share"]

    # Every note matches "deployment checklist server" about equally: BM25's order says little.
    assert share("deployment checklist server") < SHARE_BASE
    # "zebra" is in one note only: that match stands far above the rest, the share stays.
    assert share("zebra deployment") == pytest.approx(SHARE_BASE)


def test_explain_shows_what_set_the_share(notes_index):
    def explained(query: str) -> dict:
        result = run_cli("search", "--context", "Peak", query, "--explain", "--json", env=notes_index)
        assert result.code == 0, result
        return result.json["results"][0]["explain"]

    flat = explained("deployment checklist server")
    signals = flat["fts"]["share_signals"]
    assert signals["lexical_peak"] < PLATEAU and signals["code_share"] == 0 and signals["names_code"] is False
    assert "plateau" in flat["why"]
    assert flat["fts"]["weight"] == pytest.approx(SHARE_BASE - SHARE_LEXICAL_PEAK * (PLATEAU - signals["lexical_peak"]),
                                                  abs=1e-3)
    standout = explained("zebra deployment")
    assert standout["fts"]["share_signals"]["lexical_peak"] > PLATEAU and "plateau" not in standout["why"]
