"""The Recall Query Language run (`chinvex query --rql`, chinvex.retrieval.rql_run) over one real
context (SQLite, Chroma and the built-in embedder; a repository, notes and Codex sessions,
ingested once for the module): structured queries against answers computed in Python from the
index's raw rows, USING against the search itself, the total order, paging and determinism; a
hypothesis property test that `FROM chunk FILTER <expr>` returns exactly the chunks satisfying
the predicate as a Python evaluator (tests/retrieval/test_fel.py's, written independently of the
SQL compiler) computes it; and the CLI.
"""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chinvex.retrieval import fel, rql
from chinvex.retrieval.roles import role_of
from helpers import assert_no_traceback, run_cli
from test_fel import _holds


# -- a real context ---------------------------------------------------------------------------------

SESSIONS = [  # (start, thread id, turns): Codex rollouts in the format the adapter reads
    ("2026-03-04T10:00:00.000Z", "019c9000-0000-7000-8000-000000000001",
     [("user", "The token refresh in src/auth.py fails after an hour."),
      ("assistant", "I changed src/auth.py so that refresh_token retries once with back-off.")]),
    ("2026-03-20T09:00:00.000Z", "019c9000-0000-7000-8000-000000000002",
     [("user", "Add pagination to the orders endpoint."), ("assistant", "Added limit and cursor to src/orders.py.")]),
    ("2026-04-02T09:00:00.000Z", "019c9000-0000-7000-8000-000000000003",
     [("user", "Rotate the signing key used by src/auth.py."), ("assistant", "The key now rotates monthly in src/auth.py.")]),
]
NOTES = [  # (path, tags, mtime)
    ("ops/deploy.md", ["ops", "runbook"], "2026-01-10T08:00:00"), ("ops/rollback.md", ["ops"], "2026-03-05T08:00:00"),
    ("ideas.md", [], "2026-02-20T08:00:00"), ("security.md", ["security"], "2026-03-20T08:00:00"),
]
REPO = {
    "src/auth.py": "def refresh_token(session):\n    \"\"\"Refresh the auth token, retrying once with back-off.\"\"\"\n"
                   "    return session.renew(retries=1)\n\n\ndef rotate_key(store):\n    return store.rotate()\n",
    "src/orders.py": "def list_orders(db, limit, cursor=None):\n    \"\"\"Paginated orders: limit and cursor.\"\"\"\n"
                     "    return db.page('orders', limit, cursor)\n",
    "src/legacy.py": "def old_login(user):\n    return user.password_ok()\n",
    "tests/test_auth.py": "from src.auth import refresh_token\n\n\ndef test_refresh_token_retries():\n"
                          "    assert refresh_token(FakeSession())\n",
    "docs/guide.md": "# Guide\n\nThe auth token is refreshed once an hour; the signing key rotates monthly.\n",
    "config/settings.toml": "[auth]\ntoken_ttl = 3600\nkey_rotation = \"monthly\"\n",
}


def _rollout(base: Path, start: str, thread: str, turns: list[tuple[str, str]]) -> None:
    folder = base.joinpath("sessions", *start[:10].split("-"))
    folder.mkdir(parents=True, exist_ok=True)
    lines = [{"timestamp": start, "type": "session_meta", "payload": {
        "id": thread, "timestamp": start, "cwd": "/home/dev/shop", "originator": "codex_cli_rs",
        "cli_version": "0.169.0", "source": "cli", "model_provider": "openai"}}]
    for i, (role, text) in enumerate(turns):
        lines.append({"timestamp": f"{start[:17]}{10 + i:02d}.000Z", "type": "response_item", "payload": {
            "type": "message", "role": role,
            "content": [{"type": "input_text" if role == "user" else "output_text", "text": text}]}})
    (folder / f"rollout-{start[:19].replace(':', '-')}-{thread}.jsonl").write_text(
        "\n".join(json.dumps(line) for line in lines) + "\n")


@pytest.fixture(scope="module")
def ctx(tmp_path_factory):
    """Context "Q": a repository (every role), tagged notes with known dates, three Codex
    sessions; src/legacy.py changes after the ingest, so it is stale."""
    from datetime import datetime, timezone

    from chinvex.paths import Roots
    from chinvex.context.registry import Registry
    from chinvex.retrieval.rql_run import RqlSearcher

    base = tmp_path_factory.mktemp("rql")
    for rel, text in REPO.items():
        (base / "repo" / rel).parent.mkdir(parents=True, exist_ok=True)
        (base / "repo" / rel).write_text(text)
    for rel, tags, stamp in NOTES:
        path = base / "notes" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        front = f"---\ntags: [{', '.join(tags)}]\n---\n" if tags else ""
        path.write_text(f"{front}# {rel}\n\nHow we {rel.split('/')[-1][:-3]}: the auth token and the deploy queue.\n")
        when = datetime.fromisoformat(stamp).replace(tzinfo=timezone.utc).timestamp()
        os.utime(path, (when, when))
    for start, thread, turns in SESSIONS:
        _rollout(base / "codex", start, thread, turns)
    home = base / "home"
    env = {"CHINVEX_HOME": str(home)}
    created = run_cli("context", "create", "Q", "--repo", str(base / "repo"), "--note-root", str(base / "notes"),
                      "--codex-sessions", str(base / "codex"), env=env)
    assert created.code == 0, created
    ingested = run_cli("ingest", "--context", "Q", "--json", env=env)
    assert ingested.code == 0 and ingested.json["chunks"]["with_vector"] == ingested.json["chunks"]["total"], ingested
    (base / "repo" / "src" / "legacy.py").write_text(REPO["src/legacy.py"] + "# changed after indexing\n")
    config = Registry(Roots(contexts=home / "contexts", indexes=home / "indexes")).resolve("Q")
    searcher = RqlSearcher()
    yield {"env": env, "base": base, "config": config, "searcher": searcher,
           "db": Path(config.index.sqlite_path), "values": _values(Path(config.index.sqlite_path), base)}
    searcher.close()


def _values(db: Path, base: Path) -> dict[str, dict]:
    """Every chunk's field values, read straight from SQLite and computed here: the role from
    the relative path, staleness from what the fixture changed."""
    conn = sqlite3.connect(db)
    out = {}
    for (cid, doc_id, offset, line_start, line_end, text, source_type, uri, title, updated, created, content_hash,
         meta) in conn.execute(
            "SELECT c.chunk_id, c.doc_id, c.char_start, c.line_start, c.line_end, c.text, d.source_type, "
            "d.source_uri, d.title, d.updated_at, d.created_at, d.content_hash, d.metadata_json "
            "FROM chunks c JOIN documents d ON d.doc_id = c.doc_id"):
        meta = json.loads(meta or "{}")
        tags = (meta.get("front_matter") or {}).get("tags")
        rel = meta.get("path")
        out[cid] = {"doc.id": doc_id, "doc.path": rel or uri, "doc.source": uri, "doc.source_type": source_type,
                    "doc.title": title, "doc.hash": content_hash, "doc.updated_at": updated, "doc.created_at": created,
                    "doc.mtime": updated or created, "doc.context": "Q", "doc.thread_id": meta.get("thread_id"),
                    "doc.tag": tags if isinstance(tags, list) else ([tags] if tags is not None else []),
                    "doc.role": role_of(rel) if source_type == "repo" and rel else None,
                    "doc.stale": uri == str(base / "repo" / "src" / "legacy.py"),
                    "chunk.id": cid, "chunk.doc_id": doc_id, "chunk.offset": offset,
                    "chunk.line_start": line_start, "chunk.line_end": line_end, "chunk.text": text}
    conn.close()
    return out


def _run(ctx, statement: str):
    from chinvex.retrieval.rql_run import run

    return run(ctx["config"], rql.parse(statement), ctx["searcher"])


def _sort_key(row: dict, keys: list[tuple[str, bool]]):
    """Python's version of the plan's order: missing values last in both directions."""
    out = []
    for column, descending in keys:
        value = row[column]
        if isinstance(value, str):
            value = value.encode()  # SQLite's BINARY collation compares UTF-8 bytes
        if descending and value is not None:
            value = _Desc(value)
        out.append((value is None, value if value is not None else 0))
    return out


class _Desc:
    def __init__(self, value):
        self.value = value

    def __lt__(self, other):
        return self.value > other.value

    def __eq__(self, other):
        return self.value == other.value


def test_the_fixture_has_what_the_queries_need(ctx):
    values = ctx["values"].values()
    assert {v["doc.role"] for v in values} == {None, "code", "test", "docs", "config"}
    assert {v["doc.source_type"] for v in values} == {"repo", "note", "codex_session"}
    assert sum(v["doc.stale"] for v in values) >= 1 and any(v["doc.tag"] for v in values)
    note = next(v for v in values if v["doc.path"] == "ops/deploy.md")
    assert note["doc.mtime"].startswith("2026-01-10T08:00")  # the notes keep their file dates


def test_structured_chunk_query_returns_the_rows_in_the_default_order(ctx):
    result = _run(ctx, "SELECT chunk.id, doc.path, chunk.offset FROM chunk FILTER doc.source_type = 'repo'")
    want = sorted((v for v in ctx["values"].values() if v["doc.source_type"] == "repo"),
                  key=lambda v: _sort_key(v, [("doc.path", False), ("chunk.offset", False), ("chunk.id", False)]))
    assert [r["chunk.id"] for r in result.rows] == [v["chunk.id"] for v in want]
    assert result.mode == "sql" and result.search_hits is None and len(result.rows) >= 6
    assert result.rows[0] == {"chunk.id": want[0]["chunk.id"], "doc.path": want[0]["doc.path"],
                              "chunk.offset": want[0]["chunk.offset"]}


def test_codex_sessions_of_one_month_that_touched_a_file(ctx):
    result = _run(ctx, "SELECT doc.thread_id, doc.mtime FROM doc FILTER doc.source_type = 'codex_session' "
                       "AND doc.mtime >= '2026-03-01' AND doc.mtime < '2026-04-01' AND chunk.text LIKE '%src/auth.py%' "
                       "ORDER BY doc.mtime DESC")
    assert [r["doc.thread_id"] for r in result.rows] == ["019c9000-0000-7000-8000-000000000001"]
    every = _run(ctx, "SELECT doc.thread_id FROM doc FILTER doc.thread_id LIKE '019c9000-%' ORDER BY doc.thread_id DESC")
    assert [r["doc.thread_id"][-1] for r in every.rows] == ["3", "2", "1"]


def test_doc_rows_values_and_orders(ctx):
    result = _run(ctx, "SELECT doc.path, doc.tag, doc.mtime, doc.role, doc.stale, doc.context FROM doc "
                       "FILTER doc.source_type IN ('note', 'repo') ORDER BY doc.mtime DESC, doc.path")
    docs = {v["doc.id"]: v for v in ctx["values"].values() if v["doc.source_type"] in ("note", "repo")}
    want = sorted(docs.values(), key=lambda v: _sort_key(v, [("doc.mtime", True), ("doc.path", False), ("doc.id", False)]))
    assert [r["doc.path"] for r in result.rows] == [v["doc.path"] for v in want]
    by_path = {r["doc.path"]: r for r in result.rows}
    assert by_path["ops/deploy.md"]["doc.tag"] == ["ops", "runbook"] and by_path["ideas.md"]["doc.tag"] == []
    assert by_path["src/legacy.py"]["doc.stale"] is True and by_path["src/auth.py"]["doc.stale"] is False
    assert by_path["tests/test_auth.py"]["doc.role"] == "test" and by_path["ideas.md"]["doc.role"] is None
    assert {r["doc.context"] for r in result.rows} == {"Q"}
    newer = _run(ctx, "SELECT doc.path FROM doc FILTER doc.tag = 'ops' AND doc.mtime >= '2026-02-01'")
    assert [r["doc.path"] for r in newer.rows] == ["ops/rollback.md"]


def test_limit_offset_and_the_default_limit(ctx, monkeypatch):
    statement = "SELECT chunk.id FROM chunk ORDER BY chunk.line_start DESC"
    whole = [r["chunk.id"] for r in _run(ctx, statement).rows]
    assert len(whole) == len(ctx["values"])
    pages = [r["chunk.id"] for start in range(0, len(whole), 3)
             for r in _run(ctx, f"{statement} LIMIT 3 OFFSET {start}").rows]
    assert pages == whole  # no row twice, none skipped: the order is total
    assert _run(ctx, f"{statement} LIMIT 0").rows == []
    monkeypatch.setattr(rql, "DEFAULT_LIMIT", 4)
    assert len(_run(ctx, statement).rows) == 4  # LIMIT omitted


def test_filter_on_chunk_fields_keeps_documents_with_a_matching_chunk(ctx):
    result = _run(ctx, "SELECT doc.id FROM doc FILTER chunk.text LIKE '%rotate%' AND NOT doc.source_type = 'note'")
    want = {v["doc.id"] for v in ctx["values"].values()
            if "rotate" in v["chunk.text"] and v["doc.source_type"] != "note"}
    assert {r["doc.id"] for r in result.rows} == want and len(result.rows) == len(want) >= 2


def test_using_runs_the_search_legs_restricted_by_the_filter(ctx):
    from chinvex.retrieval.search import SearchRequest

    for using, mode in (("semantic('refresh the auth token')", "vector"), ("lexical('auth token')", "fts"),
                        ("semantic('refresh the auth token'), lexical('auth token')", "hybrid")):
        result = _run(ctx, f"SELECT chunk.id, doc.role, score FROM chunk USING {using} FILTER doc.source_type = 'repo' LIMIT 50")
        assert result.mode == mode and result.rows
        assert all(ctx["values"][r["chunk.id"]]["doc.source_type"] == "repo" for r in result.rows)
        scores = [r["score"] for r in result.rows]
        assert scores == sorted(scores, reverse=True)
    query, mode = "auth token", "fts"
    searched = ctx["searcher"].search([ctx["config"]], SearchRequest(query=query, k=200, mode=mode,
                                                                   filter_expression="doc.role = 'code'"))
    rows = _run(ctx, "SELECT chunk.id, score FROM chunk USING lexical('auth token') FILTER doc.role = 'code'").rows
    want = sorted(((r.chunk_id, r.scores.rank) for r in searched.results),
                  key=lambda h: (-h[1], ctx["values"][h[0]]["doc.path"], ctx["values"][h[0]]["chunk.offset"], h[0]))
    assert [(r["chunk.id"], r["score"]) for r in rows] == want and want


def test_semantic_and_lexical_texts_drive_their_own_legs(ctx):
    from chinvex.retrieval.rql_run import RqlSearcher

    searcher: RqlSearcher = ctx["searcher"]
    both = searcher.search_plan(ctx["config"], rql.parse(
        "SELECT chunk.id FROM chunk USING semantic('paginated list of orders'), lexical('token')"))
    alone = searcher.search_plan(ctx["config"], rql.parse("SELECT chunk.id FROM chunk USING semantic('paginated list of orders')"))
    other = searcher.search_plan(ctx["config"], rql.parse("SELECT chunk.id FROM chunk USING semantic('token')"))
    cosine = {r.chunk_id: r.scores.vector for r in alone.results}
    assert both.stats.mode == "hybrid" and both.results
    for r in both.results:  # the vector leg searched the semantic text, not the lexical one
        assert r.scores.vector == pytest.approx(cosine[r.chunk_id], abs=1e-9)
    assert {r.chunk_id: r.scores.vector for r in other.results} != cosine
    assert {r.chunk_id for r in both.results if r.scores.fts is not None} <= {
        cid for cid, v in ctx["values"].items() if "token" in v["chunk.text"].lower()}


def test_from_doc_using_scores_each_document_by_its_best_chunk(ctx):
    chunks = _run(ctx, "SELECT chunk.doc_id, score FROM chunk USING semantic('auth token rotation'), lexical('auth token')")
    docs = _run(ctx, "SELECT doc.id, score FROM doc USING semantic('auth token rotation'), lexical('auth token')")
    best: dict[str, float] = {}
    for r in chunks.rows:
        best[r["chunk.doc_id"]] = max(best.get(r["chunk.doc_id"], r["score"]), r["score"])
    assert {r["doc.id"]: r["score"] for r in docs.rows} == best
    assert len(docs.rows) == len(best) and [r["score"] for r in docs.rows] == sorted(best.values(), reverse=True)


def test_using_with_order_by_and_pages_is_deterministic(ctx):
    statement = ("SELECT chunk.id, doc.mtime, score FROM chunk USING semantic('deploy queue'), lexical('auth') "
                 "ORDER BY doc.mtime DESC")
    first = _run(ctx, statement).rows
    assert first == _run(ctx, statement).rows  # same statement, unchanged index: same rows
    assert [r["chunk.id"] for r in first] == [r["chunk.id"] for r in sorted(first, key=lambda r: _sort_key(
        {**r, **ctx["values"][r["chunk.id"]]},
        [("doc.mtime", True), ("score", True), ("doc.path", False), ("chunk.offset", False), ("chunk.id", False)]))]
    paged = [r for start in (0, 4, 8, 12, 16) for r in _run(ctx, f"{statement} LIMIT 4 OFFSET {start}").rows]
    assert paged == first[:20]


_text_fields = st.sampled_from(["doc.path", "doc.title", "doc.source_type", "chunk.text", "doc.thread_id"])
_predicates = st.one_of(
    st.builds(lambda f, v: f"{f} = '{v}'", st.sampled_from(["doc.source_type", "doc.path", "doc.context"]),
              st.sampled_from(["note", "repo", "codex_session", "src/auth.py", "ideas.md", "Q", "P"])),
    st.builds(lambda op, v: f"doc.role {op} '{v}'", st.sampled_from(["=", "!="]), st.sampled_from(["code", "test", "docs"])),
    st.builds(lambda f, v: f"{f} LIKE '{v}'", _text_fields,
              st.sampled_from(["%auth%", "%src/auth.py%", "%Auth%", "ops/%", "%", "019c9000-%"])),
    st.builds(lambda v: f"doc.path GLOB '{v}'", st.sampled_from(["src/*", "**/*.md", "ops/**", "*.py", "**/test_*"])),
    st.builds(lambda op, v: f"doc.mtime {op} '{v}'", st.sampled_from(["<", "<=", ">", ">=", "!="]),
              st.sampled_from(["2026-01-01", "2026-03", "2026-03-20T09:00:11.000Z", "2026-04-01"])),
    st.builds(lambda op, n: f"chunk.offset {op} {n}", st.sampled_from(["<", ">=", "=", "!="]), st.integers(0, 200)),
    st.builds(lambda op, n: f"chunk.line_start {op} {n}", st.sampled_from(["<=", ">"]), st.integers(0, 6)),
    st.builds(lambda vs: "doc.role IN (" + ", ".join(f"'{v}'" for v in vs) + ")",
              st.lists(st.sampled_from(["code", "test", "docs", "config", "fixture"]), min_size=1, max_size=3)),
    st.builds(lambda vs: "doc.tag IN (" + ", ".join(f"'{v}'" for v in vs) + ")",
              st.lists(st.sampled_from(["ops", "runbook", "security", "none"]), min_size=1, max_size=2)),
    st.builds(lambda op, v: f"doc.stale {op} {v}", st.sampled_from(["=", "!="]), st.sampled_from(["true", "false"])),
    st.just("doc.thread_id = '019c9000-0000-7000-8000-000000000002'"),
)
_expressions = st.recursive(_predicates, lambda inner: st.one_of(
    st.builds(lambda a, b, op: f"({a}) {op} ({b})", inner, inner, st.sampled_from(["AND", "OR"])),
    st.builds(lambda a: f"NOT ({a})", inner)), max_leaves=4)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(expression=_expressions)
def test_from_chunk_filter_is_exactly_the_chunks_that_satisfy_it(ctx, expression):
    rows = _run(ctx, f"SELECT chunk.id FROM chunk FILTER {expression} LIMIT 10000").rows
    tree = fel.parse(expression)
    want = sorted((v for v in ctx["values"].values() if _holds(tree, v)),
                  key=lambda v: _sort_key(v, [("doc.path", False), ("chunk.offset", False), ("chunk.id", False)]))
    assert [r["chunk.id"] for r in rows] == [v["chunk.id"] for v in want], expression
    docs = _run(ctx, f"SELECT doc.id FROM doc FILTER {expression} LIMIT 10000").rows
    assert {r["doc.id"] for r in docs} == {v["doc.id"] for v in want}, expression


# -- the command ------------------------------------------------------------------------------------

def test_cli_json_explain_and_statement_file(ctx, tmp_path):
    env = ctx["env"]
    statement = tmp_path / "march.rql"
    statement.write_text("-- Codex sessions of March 2026 that touched src/auth.py\n"
                         "SELECT doc.thread_id, doc.mtime FROM doc\n"
                         "FILTER doc.source_type = 'codex_session' AND doc.mtime >= '2026-03-01'\n"
                         "   AND doc.mtime < '2026-04-01' AND chunk.text LIKE '%src/auth.py%'\n"
                         "ORDER BY doc.mtime DESC;\n")
    found = run_cli("query", "--context", "Q", "--rql", f"@{statement}", "--json", "--explain", env=env)
    assert found.code == 0, found
    out = found.json
    assert out["ok"] and out["columns"] == ["doc.thread_id", "doc.mtime"]
    assert [r["doc.thread_id"] for r in out["rows"]] == ["019c9000-0000-7000-8000-000000000001"]
    assert out["query"]["limit"] == rql.DEFAULT_LIMIT and out["stats"]["mode"] == "sql"
    explained = out["explain"]
    assert explained["mode"] == "sql" and explained["legs"] == [] and "?" in explained["sql"]
    assert explained["params"][:3] == ["codex_session", "2026-03-01", "2026-04-01"]
    assert [o["key"] for o in explained["order"]] == ["doc.mtime", "doc.path", "doc.id"]

    human = run_cli("query", "--context", "Q", "--explain", "--rql",
                    "SELECT doc.path, chunk.line_start, score FROM chunk USING semantic('token refresh retries'), "
                    "lexical('refresh_token') FILTER doc.role = 'code' LIMIT 2", env=env)
    assert human.code == 0, human
    assert "hybrid search of the 200 best chunks" in human.stdout and "vector leg: semantic(" in human.stdout
    assert "score DESC (default)" in human.stdout and "src/auth.py" in human.stdout
    assert "2 rows (hybrid search" in human.stdout


@pytest.mark.parametrize("args, message", [
    (["--rql", "SELECT doc.path FROM doc FILTER doc.colour = 'red'"], "error: --rql at column 33: unknown field doc.colour"),
    (["--rql", "SELECT doc.path FROM doc LIMIT x"], "error: --rql at column 32: unexpected 'x' (expected a number)"),
    (["--rql", "@/nonexistent/query.rql"], "error: --rql @/nonexistent/query.rql: no such file"),
])
def test_cli_mistakes_are_one_line_usage_errors(ctx, args, message):
    result = run_cli("query", "--context", "Q", *args, env=ctx["env"])
    assert_no_traceback(result)
    assert result.code == 2 and result.stderr.strip() == result.stderr.strip().splitlines()[0]
    assert result.stderr.startswith(message), result
