"""The filter expression language (`--filter`, chinvex.retrieval.fel): every operator, precedence,
quoting and error message; and, over a real index, that a filtered search returns exactly the
unfiltered results that satisfy the predicate, checked by a Python evaluator written here
independently of the SQL compiler (hypothesis draws the predicates)."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chinvex.models.filter_expr import Junction, Member, Not
from chinvex.retrieval import fel
from chinvex.storage import filter_sql
from helpers import assert_no_traceback, run_cli


# -- grammar --------------------------------------------------------------------------------------

def test_operators_precedence_and_quoting():
    tree = fel.parse("doc.title = 'a' OR doc.title = 'b' AND NOT chunk.offset > 3")
    assert isinstance(tree, Junction) and tree.op == "OR"  # AND binds tighter
    assert tree.terms[1].op == "AND" and isinstance(tree.terms[1].terms[1], Not)
    grouped = fel.parse("(doc.title = 'a' OR doc.title = 'b') and not chunk.offset > 3")
    assert grouped.op == "AND" and grouped.terms[0].op == "OR"  # keywords in any case
    for op in ("=", "!=", "<", "<=", ">", ">="):
        assert fel.parse(f"chunk.offset {op} 5").op == op
    assert fel.parse("doc.path LIKE 'src/%'").op == "LIKE"
    assert fel.parse("doc.path glob 'src/**'").op == "GLOB"
    assert fel.parse("doc.tag IN ('a', \"b\", 'c''d')").values == ("a", "b", "c'd")
    assert fel.parse('doc.title = "say ""hi"""').value == 'say "hi"'
    assert fel.parse("doc.mtime >= '2026-03-01T10:00:00Z'").value == "2026-03-01T10:00:00Z"


@pytest.mark.parametrize("text, message", [
    ("", "empty expression"),
    ("doc.size = 3", "column 1: unknown field doc.size"),
    ("title = 'x'", "column 1: unexpected"),
    ("doc.title = 3", "column 1: doc.title is text; quote 3"),
    ("chunk.offset = 'x'", "column 1: chunk.offset is a number"),
    ("chunk.offset LIKE '%'", "chunk.offset is a number"),
    ("doc.mtime > 'last week'", "not ISO-8601"),
    ("doc.title = ", "column 12: unexpected end of expression"),
    ("doc.title = 'x' AND", "unexpected end of expression"),
    ("doc.title == 'x'", "column 12: unexpected"),
    ("doc.title = 'x", "unexpected"),
    ("(doc.title = 'x'", "unexpected end of expression"),
    ("doc.title IN ()", "unexpected"),
    ("doc.stale = 1", "column 1: doc.stale is true or false; 1 is neither"),
    ("doc.stale LIKE 'tr%'", "column 1: doc.stale is true or false; compare it with = or !=, not LIKE"),
    ("doc.title = true", "column 1: doc.title is text, not true or false"),
    ("chunk.offset != FALSE", "column 1: chunk.offset is a number, not true or false"),
    ("doc.source_type = 'repo' AND doc.role = 'tests'", "column 30: doc.role is one of code, docs, config, "
                                                       "bench, test, fixture; 'tests' is none of them"),
    ("doc.role IN ('code', 'src')", "'src' is none of them"),
])
def test_errors_name_the_column(text, message):
    with pytest.raises(fel.FilterError) as caught:
        fel.parse(text)
    assert message in str(caught.value) and str(caught.value).startswith("--filter")


def test_every_field_has_its_sql_and_every_sql_column_is_a_field():
    """The catalogue a user reads (fel.FIELDS) and the SQL storage compiles (filter_sql.COLUMNS)
    name the same fields, so no field parses and then fails to compile, or the reverse."""
    assert set(fel.FIELDS) == set(filter_sql.COLUMNS)
    assert {f for f, spec in fel.FIELDS.items() if spec.kind == "tags"} == filter_sql.TAG_FIELDS


def test_role_stale_thread_and_context_fields():
    assert {"doc.role", "doc.stale", "doc.thread_id", "doc.source_type", "doc.context"} <= set(fel.FIELDS)
    assert fel.parse("doc.stale = TRUE").value is True and fel.parse("doc.stale != false").value is False
    assert fel.parse("doc.role IN ('code', 'test')").values == ("code", "test")
    assert fel.parse("doc.role LIKE 'co%'").op == "LIKE"  # patterns are not role names
    where, params = filter_sql.expression_where(fel.parse("doc.stale = true OR doc.role = 'docs'"), "C")
    assert params == [1, "docs"] and filter_sql.STALE_FUNCTION in where and filter_sql.ROLE_FUNCTION in where


def test_errors_carry_line_and_column_for_a_larger_statement():
    with pytest.raises(fel.FilterError) as caught:
        fel.parse("doc.title = 'a'\n  AND doc.colour = 'b'")
    assert (caught.value.line, caught.value.column) == (2, 7)
    assert caught.value.reason.startswith("unknown field doc.colour") and "--filter" not in caught.value.reason


@pytest.mark.parametrize("text", [
    "doc.title = 'it''s' OR doc.title = \"say \"\"hi\"\"\" AND NOT chunk.offset >= -3",
    "NOT (doc.tag IN ('a', 'b') OR doc.stale = true) AND doc.path GLOB 'src/**'",
    "(doc.mtime < '2026-03-01' OR doc.mtime > '2026-04') AND chunk.text LIKE '%50\\%%'",
])
def test_unparse_gives_text_that_parses_to_the_same_tree(text):
    tree = fel.parse(text)
    again = fel.parse(fel.unparse(tree))
    assert fel.unparse(again) == fel.unparse(tree)
    assert filter_sql.expression_where(again, "C") == filter_sql.expression_where(tree, "C")


def test_role_is_the_search_role_and_stale_is_the_freshness_check(tmp_path):
    import os

    assert fel.role("repo", "tests/test_auth.py") == "test" and fel.role("repo", "src/auth.py") == "code"
    assert fel.role("repo", "docs/guide.md") == "docs" and fel.role("repo", None) is None
    assert fel.role("note", "tests/notes.md") is None  # only repository files have roles
    source = tmp_path / "a.py"
    source.write_text("x = 1\n")
    st = source.stat()
    state = json.dumps({"_mtime_ns": st.st_mtime_ns})
    assert fel.stale(str(source), st.st_size, int(st.st_mtime), state) == 0
    source.write_text("x = 12\n")
    assert fel.stale(str(source), st.st_size, int(st.st_mtime), state) == 1  # modified
    os.utime(source, ns=(st.st_mtime_ns, st.st_mtime_ns))
    source.write_text("x = 2\n")
    os.utime(source, ns=(st.st_mtime_ns + 10**9, st.st_mtime_ns + 10**9))
    assert fel.stale(str(source), st.st_size, int(st.st_mtime), state) == 1  # same size, newer
    source.unlink()
    assert fel.stale(str(source), st.st_size, int(st.st_mtime), state) == 1  # deleted
    assert fel.stale("memory://P-1234abcd", None, None, None) == 0  # not a file


def test_values_are_parameters_never_sql_text():
    where, params = filter_sql.expression_where(fel.parse("doc.title = 'x''); DROP TABLE chunks; --'"), "C")
    assert "DROP" not in where and params == ["x'); DROP TABLE chunks; --"]


def test_like_is_case_sensitive_and_glob_knows_path_segments():
    assert fel.like("Auth.py", "Auth%") and not fel.like("auth.py", "Auth%") and fel.like("ab", "a_")
    assert fel.glob("src/api/x.py", "src/**") and fel.glob("src/x.py", "src/*.py")
    assert not fel.glob("src/api/x.py", "src/*.py") and fel.glob("x.py", "**/x.py")
    assert fel.like(None, "%") is None and fel.glob(None, "*") is None


# -- against a real index -------------------------------------------------------------------------

@pytest.fixture(scope="module")
def filtered_index(tmp_path_factory):
    base = tmp_path_factory.mktemp("fel")
    notes = base / "notes"
    (notes / "ops").mkdir(parents=True)
    (notes / "archive").mkdir()
    specs = [("ops/deploy.md", ["ops", "runbook"], "2026-01-10"), ("ops/rollback.md", ["ops"], "2026-03-05"),
             ("archive/old.md", ["history"], "2025-06-01"), ("ideas.md", [], "2026-02-20"),
             ("Auth.md", ["security"], "2026-03-20")]
    for name, tags, date in specs:
        front = f"---\ntags: [{', '.join(tags)}]\ndate: {date}\n---\n" if tags else f"---\ndate: {date}\n---\n"
        body = "\n\n".join(f"## Part {i}\n\nThe service deploy step {i} in {name} uses the queue and the "
                           f"auth token rotation." for i in range(3))
        (notes / name).write_text(f"{front}# {name}\n\n{body}\n")
    env = {"CHINVEX_HOME": str(base / "home")}
    assert run_cli("context", "create", "F", "--note-root", str(notes), env=env).code == 0
    assert run_cli("ingest", "--context", "F", env=env).code == 0
    return {"env": env, "db": base / "home" / "indexes" / "F" / "hybrid.db", "home": base / "home"}


def _values(db: Path) -> dict[str, dict]:
    """Every chunk's field values, read straight from SQLite."""
    conn = sqlite3.connect(db)
    out = {}
    for cid, doc_id, offset, line_start, line_end, text, source_type, uri, title, updated, created, meta in conn.execute(
            "SELECT c.chunk_id, c.doc_id, c.char_start, c.line_start, c.line_end, c.text, d.source_type, "
            "d.source_uri, d.title, d.updated_at, d.created_at, d.metadata_json FROM chunks c "
            "JOIN documents d ON d.doc_id = c.doc_id"):
        meta = json.loads(meta or "{}")
        tags = (meta.get("front_matter") or {}).get("tags")
        out[cid] = {"doc.id": doc_id, "doc.path": meta.get("path") or uri, "doc.source": uri,
                    "doc.source_type": source_type, "doc.title": title, "doc.updated_at": updated,
                    "doc.created_at": created, "doc.mtime": updated or created, "doc.context": "F",
                    "doc.tag": tags if isinstance(tags, list) else ([tags] if tags is not None else []),
                    "chunk.id": cid, "chunk.doc_id": doc_id, "chunk.offset": offset,
                    "chunk.line_start": line_start, "chunk.line_end": line_end, "chunk.text": text}
    conn.close()
    return out


def _holds(node, row: dict) -> bool:
    """The predicate, evaluated in Python with the module docstring's semantics."""
    if isinstance(node, Junction):
        parts = [_holds(t, row) for t in node.terms]
        return all(parts) if node.op == "AND" else any(parts)
    if isinstance(node, Not):
        return not _holds(node.term, row)
    value = row[node.field]
    candidates = value if node.field == "doc.tag" else [value]
    return any(_one(node, v) for v in candidates)


def _one(node, value) -> bool:
    if value is None:
        return False
    if isinstance(node, Member):
        return value in node.values
    want, op = node.value, node.op
    if op == "LIKE":
        return re.fullmatch("".join(".*" if c == "%" else "." if c == "_" else re.escape(c) for c in want),
                            str(value), re.DOTALL) is not None
    if op == "GLOB":
        parts = want.split("**")
        pattern = "(?:.*)".join("".join("[^/]*" if c == "*" else "[^/]" if c == "?" else re.escape(c)
                                        for c in part) for part in parts)
        pattern = pattern.replace("(?:.*)/", "(?:.*/)?")
        return re.fullmatch(pattern, str(value), re.DOTALL) is not None
    return {"=": value == want, "!=": value != want, "<": value < want, "<=": value <= want,
            ">": value > want, ">=": value >= want}[op]


_text_fields = st.sampled_from(["doc.path", "doc.title", "doc.source_type", "chunk.text"])
_predicates = st.one_of(
    st.builds(lambda f, v: f"{f} = '{v}'", st.sampled_from(["doc.source_type", "doc.path"]),
              st.sampled_from(["note", "ops/deploy.md", "ideas.md", "Auth.md"])),
    st.builds(lambda f, v: f"{f} LIKE '{v}'", _text_fields, st.sampled_from(["%ops%", "%Auth%", "%auth%", "ops/%", "%"])),
    st.builds(lambda v: f"doc.path GLOB '{v}'", st.sampled_from(["ops/*", "**/*.md", "archive/**", "*.md", "*/rollback.md"])),
    st.builds(lambda op, v: f"doc.mtime {op} '{v}'", st.sampled_from(["<", "<=", ">", ">=", "!="]),
              st.sampled_from(["2026-01-01", "2026-03", "2025-12-31T23:59:59Z"])),
    st.builds(lambda op, n: f"chunk.offset {op} {n}", st.sampled_from(["<", ">=", "=", "!="]), st.integers(0, 400)),
    st.builds(lambda vs: "doc.tag IN (" + ", ".join(f"'{v}'" for v in vs) + ")",
              st.lists(st.sampled_from(["ops", "runbook", "security", "history", "none"]), min_size=1, max_size=3)),
    st.builds(lambda v: f"doc.tag = '{v}'", st.sampled_from(["ops", "security"])),
)
_expressions = st.recursive(_predicates, lambda inner: st.one_of(
    st.builds(lambda a, b, op: f"({a}) {op} ({b})", inner, inner, st.sampled_from(["AND", "OR"])),
    st.builds(lambda a: f"NOT ({a})", inner)), max_leaves=4)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(expression=_expressions)
def test_filtered_search_is_exactly_the_unfiltered_results_that_satisfy_it(filtered_index, expression):
    import os

    from chinvex.context.registry import Registry
    from chinvex.retrieval.search import SearchRequest, Searcher

    os.environ["CHINVEX_HOME"] = str(filtered_index["home"])
    config = Registry().resolve("F")
    values = _values(filtered_index["db"])
    searcher = _searcher()
    everything = searcher.search([config], SearchRequest(query="deploy queue auth token", k=200, mode="fts")).results
    assert len(everything) == len(values)  # k covers the whole index
    want = {r.chunk_id for r in everything if _holds(fel.parse(expression), values[r.chunk_id])}
    got = searcher.search([config], SearchRequest(query="deploy queue auth token", k=200, mode="fts",
                                                  filter_expression=expression)).results
    assert {r.chunk_id for r in got} == want, expression


_SEARCHER = None


def _searcher():
    global _SEARCHER
    if _SEARCHER is None:
        from chinvex.retrieval.search import Searcher

        _SEARCHER = Searcher()
    return _SEARCHER


def test_cli_filter_on_search_answer_and_pack(filtered_index):
    env = filtered_index["env"]
    found = run_cli("search", "deploy", "--context", "F", "--filter", "doc.tag = 'runbook'", "--json", env=env)
    assert found.code == 0, found
    assert found.json["results"] and {r["metadata"].get("path") or r["source_uri"].rsplit("/notes/", 1)[-1]
                                      for r in found.json["results"]} <= {"ops/deploy.md"}
    packed = run_cli("pack", "deploy", "--context", "F", "--filter", "doc.path GLOB 'archive/**'", "--json", env=env)
    assert packed.code == 0 and packed.json["chunks"]
    assert all("archive" in c["source_uri"] for c in packed.json["chunks"])
    answered = run_cli("answer", "How does the deploy step work?", "--context", "F", "--filter",
                       "doc.mtime < '2026-01-01'", "--json", env=env)
    assert_no_traceback(answered)
    assert all("archive" in c["source_uri"] for c in answered.json["citations"])
    bad = run_cli("search", "deploy", "--context", "F", "--filter", "doc.colour = 'red'", env=env)
    assert bad.code == 2 and "column 1: unknown field doc.colour" in bad.stderr


def test_eval_takes_the_filter_too(filtered_index, tmp_path):
    golden = tmp_path / "golden.json"
    golden.write_text(json.dumps({"name": "f", "k": 5, "queries": [
        {"id": "q1", "query": "deploy step queue", "expected": [{"path": "ops/deploy.md"}]}]}))
    env = filtered_index["env"]
    plain = run_cli("eval", "--context", "F", "--golden", str(golden), "--json", env=env)
    assert plain.code == 0, plain
    narrowed = run_cli("eval", "--context", "F", "--golden", str(golden), "--filter",
                       "doc.path GLOB 'archive/**'", "--json", env=env)
    assert narrowed.code == 0, narrowed
    assert plain.json["metrics"]["hit"] == 1.0 and narrowed.json["metrics"]["hit"] == 0.0
