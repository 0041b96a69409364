"""Path, date and source filters applied inside both search legs (a match ranked below both
legs' depth is still found), and the pure filter decisions the legs and the final check share."""

from __future__ import annotations

import json
import shutil

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import run_cli, run_cli_in_process


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
def test_path_filter_finds_matches_below_both_legs_depth(deep, mode, cli_search):
    data = cli_search(deep, "--context", "Deep", DEEP_QUERY, "--path", "special/old.md", "--mode", mode)
    assert data["stats"]["mode"] == mode and data["stats"]["warnings"] == []
    assert data["results"] and _names(data["results"]) == {"special/old.md"}
    both = cli_search(deep, "--context", "Deep", DEEP_QUERY, "--path", "special/*", "--mode", mode)
    assert _names(both["results"]) == {"special/old.md", "special/new.md"}
    if mode == "hybrid":  # the chunks that contain a query term are found by both legs
        lexical = [r for r in both["results"] if "lantern" in r["text"].lower()]
        assert _names(lexical) == {"special/old.md", "special/new.md"}
        for r in lexical:
            assert r["scores"]["fts"] is not None and r["scores"]["vector"] is not None


@pytest.mark.parametrize("mode", ["hybrid", "fts", "vector"])
def test_date_filters_find_matches_below_both_legs_depth(deep, mode, cli_search):
    # old.md was updated at 15:30 on 2020-01-05: a bare --until date includes the whole day.
    old = cli_search(deep, "--context", "Deep", DEEP_QUERY, "--until", "2020-01-05", "--mode", mode)
    assert old["results"] and _names(old["results"]) == {"special/old.md"}
    new = cli_search(deep, "--context", "Deep", DEEP_QUERY, "--since", "2031-01-01", "--mode", mode)
    assert new["results"] and _names(new["results"]) == {"special/new.md"}
    window = cli_search(deep, "--context", "Deep", DEEP_QUERY, "--since", "2019-12-01", "--until",
                    "2031-12-31", "--path", "special/*", "--mode", mode)
    assert _names(window["results"]) == {"special/old.md", "special/new.md"}


def test_until_date_covers_its_day_and_a_timestamp_is_exact(deep, cli_search):
    def found(until):
        data = cli_search(deep, "--context", "Deep", DEEP_QUERY, "--path", "special/old.md", "--until", until)
        return bool(data["results"])

    assert found("2020-01-05") and found("2020-01-05T15:30:00Z") and found("2020-01-05T16:30:00+01:00")
    assert not found("2020-01-05T15:29:59Z") and not found("2020-01-04")
    assert run_cli("search", "--context", "Deep", "x", "--until", "2020-13-01", env=deep["env"]).code == 2


def test_a_filter_that_allows_nothing_answers_empty_without_warnings(deep, cli_search):
    data = cli_search(deep, "--context", "Deep", DEEP_QUERY, "--path", "nowhere/*")
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
    from chinvex.storage import filter_sql
    from chinvex.storage.search_reads import REL_PATH_SQL

    f = filters.SearchFilter.of(types, glob, since, until)
    conn = sqlite3.connect(":memory:")
    filters.register_sql_functions(conn)
    conn.execute("CREATE TABLE documents (doc_id INTEGER PRIMARY KEY, source_type TEXT, source_uri TEXT, "
                 "metadata_json TEXT, updated_at TEXT, created_at TEXT)")
    for i, (stype, uri, rel, updated, created) in enumerate(docs):
        meta = None if rel is None else json.dumps({"path": rel})
        conn.execute("INSERT INTO documents VALUES (?, ?, ?, ?, ?, ?)", (i, stype, uri, meta, updated, created))
    conds, params = filter_sql.search_conditions(source_types=f.source_types, path_glob=f.path_glob,
                                                 since=f.since, until=f.until)
    sql = "SELECT doc_id, " + REL_PATH_SQL.format(d="d") + " FROM documents d"
    selected = {row[0] for row in conn.execute(sql + (" WHERE " + " AND ".join(conds) if conds else ""), params)}
    expected = {i for i, rel in conn.execute(sql)
                if filters.passes(f, source_type=docs[i][0], source_uri=docs[i][1], rel_path=rel,
                                  updated_at=docs[i][3], created_at=docs[i][4])}
    assert selected == expected
