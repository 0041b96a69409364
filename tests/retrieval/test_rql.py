"""The Recall Query Language's grammar (chinvex.retrieval.rql): every clause, every FILTER
operator, precedence, quoting, comments, each error message with its position, and values kept
as parameters. Execution over a real context is in test_rql_run.py.
"""

from __future__ import annotations

import pytest

from chinvex.models.filter_expr import Not
from chinvex.retrieval import fel, rql
from chinvex.storage import rql_sql

# -- grammar ----------------------------------------------------------------------------------------


def test_every_clause():
    plan = rql.parse("SELECT doc.path, chunk.text, score FROM chunk USING semantic('token refresh'), "
                     "lexical(\"auth.py\") FILTER doc.source_type = 'repo' ORDER BY doc.mtime DESC, "
                     "chunk.line_start LIMIT 5 OFFSET 10;")
    assert plan.table == "chunk" and plan.columns == ("doc.path", "chunk.text", "score")
    assert (plan.semantic, plan.lexical, plan.mode) == ("token refresh", "auth.py", "hybrid")
    assert plan.filter_text == "doc.source_type = 'repo'"
    assert [str(k) for k in plan.order] == ["doc.mtime DESC", "chunk.line_start ASC", "score DESC",
                                            "doc.path ASC", "chunk.offset ASC", "chunk.id ASC"]
    assert [k.implicit for k in plan.order] == [False, False, True, True, True, True]
    assert (plan.limit, plan.offset, plan.limit_given) == (5, 10, True)


def test_optional_clauses_keywords_comments_and_lines():
    plan = rql.parse("select doc.id from doc")
    assert (plan.mode, plan.filter, plan.limit, plan.offset, plan.limit_given) == ("sql", None, rql.DEFAULT_LIMIT, 0, False)
    assert [str(k) for k in plan.order] == ["doc.path ASC", "doc.id ASC"]  # total without USING too
    spread = rql.parse("-- notes of the quarter\nSELECT doc.path -- the file\n  FROM doc\n"
                       "  FILTER doc.tag = 'ops' -- only ops\n  limit 3 offset 1;\n")
    assert (spread.filter_text, spread.limit, spread.offset) == ("doc.tag = 'ops'", 3, 1)
    assert rql.parse("SELECT doc.path FROM doc FILTER doc.title = 'a -- b'").filter.value == "a -- b"


def test_using_legs_and_quoting():
    assert rql.parse("SELECT score FROM chunk USING semantic('x')").mode == "vector"
    assert rql.parse("SELECT score FROM chunk USING LEXICAL('x')").mode == "fts"
    both = rql.parse("SELECT score FROM chunk USING lexical('it''s'), semantic(\"say \"\"hi\"\"\")")
    assert (both.mode, both.lexical, both.semantic) == ("hybrid", "it's", 'say "hi"')
    searched = rql.parse("SELECT doc.id FROM doc USING semantic('x')")
    assert [str(k) for k in searched.order] == ["score DESC", "doc.path ASC", "doc.id ASC"]


def test_columns_star_and_unqualified_names():
    assert rql.parse("SELECT * FROM doc").columns == rql.STAR_COLUMNS["doc"]
    assert rql.parse("SELECT * FROM chunk USING lexical('x')").columns == rql.STAR_COLUMNS["chunk"] + ("score",)
    assert rql.parse("SELECT id, path, text, offset FROM chunk").columns == (
        "chunk.id", "doc.path", "chunk.text", "chunk.offset")
    assert rql.parse("SELECT id, title, id FROM doc").columns == ("doc.id", "doc.title")  # once each
    assert [k.column for k in rql.parse("SELECT id FROM doc ORDER BY mtime DESC").order][:1] == ["doc.mtime"]


FEL_EXPRESSIONS = [
    "doc.title = 'a' OR doc.title = 'b' AND NOT chunk.offset > 3",  # AND binds tighter than OR
    "(doc.title = 'a' OR doc.title = 'b') and not chunk.offset > 3",
    "chunk.offset != 1 AND chunk.offset < 2 AND chunk.offset <= 3 AND chunk.offset > 4 AND chunk.offset >= 5",
    "doc.path LIKE 'src/%' OR doc.path GLOB 'src/**' OR doc.tag IN ('a', \"b\", 'c''d')",
    "NOT NOT doc.stale = TRUE AND doc.role IN ('code', 'test') AND doc.thread_id = 'x'",
    "doc.mtime >= '2026-03-01T10:00:00Z' AND doc.context = 'Q' AND doc.source_type != 'note'",
]


@pytest.mark.parametrize("expression", FEL_EXPRESSIONS)
def test_filter_is_the_filter_expression_language(expression):
    """FILTER parses to the tree `--filter` parses the same text to (positions aside)."""
    filtered = rql.parse(f"SELECT doc.id FROM doc FILTER {expression} LIMIT 1").filter
    assert fel.unparse(filtered) == fel.unparse(fel.parse(expression))
    assert fel.unparse(fel.parse(fel.unparse(filtered))) == fel.unparse(filtered)  # round trip


def test_precedence_in_the_tree():
    tree = rql.parse("SELECT doc.id FROM doc FILTER doc.title = 'a' OR doc.title = 'b' AND NOT chunk.offset > 3").filter
    assert tree.op == "OR" and tree.terms[1].op == "AND" and isinstance(tree.terms[1].terms[1], Not)
    assert rql.parse("SELECT doc.id FROM doc FILTER (doc.title = 'a' OR doc.title = 'b') AND doc.id = 'x'").filter.op == "AND"


@pytest.mark.parametrize("statement, message", [
    ("", "--rql empty statement"),
    ("   ", "--rql empty statement"),
    ("SELEC doc.id FROM doc", "at column 1: unexpected 'SELEC' (expected SELECT)"),
    ("SELECT", "at column 7: unexpected end of statement (expected '*', a column or a field)"),
    ("SELECT doc.id", "at column 14: unexpected end of statement (expected ',' or FROM)"),
    ("SELECT doc.id FORM doc", "at column 15: unexpected 'FORM' (expected ',' or FROM)"),
    ("SELECT doc.id FROM docs", "at column 20: unexpected 'docs' (expected doc or chunk)"),
    ("SELECT doc.id FROM table", "at column 20: unexpected 'table' (expected doc or chunk)"),
    ("SELECT doc.id FROM doc #", "at column 24: unexpected '#'"),
    ("SELECT doc.id FROM doc LIMIT", "at column 29: unexpected end of statement (expected a number)"),
    ("SELECT doc.id FROM doc LIMIT 5 OFFSET", "at column 38: unexpected end of statement (expected a number)"),
    ("SELECT doc.id FROM doc LIMIT -1", "at column 30: LIMIT -1: expected 0 to 10000"),
    ("SELECT doc.id FROM doc LIMIT 10001", "at column 30: LIMIT 10001: expected 0 to 10000"),
    ("SELECT doc.id FROM doc LIMIT 1 OFFSET -2", "at column 39: OFFSET -2: expected 0 or more"),
    ("SELECT doc.id FROM doc ORDER doc.path", "at column 30: unexpected 'doc.path' (expected BY)"),
    ("SELECT doc.id FROM doc ORDER BY doc.path, doc.path", "at column 43: ORDER BY names doc.path twice"),
    ("SELECT doc.id FROM doc ORDER BY doc.tag", "at column 33: doc.tag has several values per document"),
    ("SELECT doc.id FROM doc ORDER BY score", "at column 33: score needs USING semantic(...) or lexical(...)"),
    ("SELECT score FROM doc", "at column 8: score needs USING"),
    ("SELECT doc.size FROM doc", "at column 8: unknown column doc.size; columns: doc.id,"),
    ("SELECT colour FROM chunk", "at column 8: unknown column colour"),
    ("SELECT chunk.text FROM doc", "at column 8: chunk.text is a chunk field; FROM doc gives one row per document"),
    ("SELECT doc.id FROM doc USING", "at column 29: unexpected end of statement (expected semantic(...) or lexical(...))"),
    ("SELECT doc.id FROM doc USING vector('x')", "at column 30: unexpected 'vector'"),
    ("SELECT doc.id FROM doc USING semantic(x)", "at column 39: unexpected 'x' (expected a quoted string)"),
    ("SELECT doc.id FROM doc USING semantic('a'), semantic('b')", "at column 45: semantic(...) is given twice"),
    ("SELECT doc.id FROM doc USING lexical(' ')", "at column 38: lexical('') is empty"),
    ("SELECT doc.id FROM doc FILTER", "at column 30: unexpected end of statement (expected '(', NOT or a field)"),
    ("SELECT doc.id FROM doc FILTER title = 'x'", "at column 31: unexpected 'title' (FILTER fields are qualified: doc.title)"),
    ("SELECT doc.id FROM doc FILTER colour = 'x'", "at column 31: unexpected 'colour' (FILTER fields are qualified: doc.* or chunk.*)"),
    ("SELECT doc.id FROM doc FILTER doc.colour = 'red'", "at column 31: unknown field doc.colour; fields: doc.id,"),
    ("SELECT doc.id FROM doc FILTER doc.title = 3", "at column 31: doc.title is text; quote 3"),
    ("SELECT doc.id FROM doc FILTER chunk.offset = '3'", "at column 31: chunk.offset is a number"),
    ("SELECT doc.id FROM doc FILTER chunk.offset LIKE '%'", "at column 31: chunk.offset is a number; LIKE"),
    ("SELECT doc.id FROM doc FILTER doc.mtime > 'last week'", "at column 31: doc.mtime is a date; 'last week' is not ISO-8601"),
    ("SELECT doc.id FROM doc FILTER doc.stale = 1", "at column 31: doc.stale is true or false; 1 is neither"),
    ("SELECT doc.id FROM doc FILTER doc.stale > false", "at column 31: doc.stale is true or false; compare it with = or !="),
    ("SELECT doc.id FROM doc FILTER doc.title = true", "at column 31: doc.title is text, not true or false"),
    ("SELECT doc.id FROM doc FILTER doc.role = 'tests'", "at column 31: doc.role is one of code, docs, config, bench, test, fixture"),
    ("SELECT doc.id FROM doc FILTER doc.title == 'x'", "at column 42: unexpected '='"),
    ("SELECT doc.id FROM doc FILTER doc.title = 'x", "at column 43: unexpected"),
    ("SELECT doc.id FROM doc FILTER (doc.title = 'x'", "at column 47: unexpected end of statement (expected ')')"),
    ("SELECT doc.id FROM doc FILTER doc.title IN ()", "at column 45: unexpected ')' (expected a number, a quoted string or true or false)"),
    ("SELECT doc.id FROM doc FILTER doc.title = 'x' AND", "at column 50: unexpected end of statement"),
    ("SELECT doc.id FROM doc LIMIT 1 FILTER doc.id = 'x'", "at column 32: unexpected 'FILTER' (expected ';' or OFFSET)"),
    ("SELECT doc.id FROM doc; SELECT", "at column 25: unexpected 'SELECT' (expected the end)"),
])
def test_each_error_names_its_position(statement, message):
    with pytest.raises(rql.RqlError) as caught:
        rql.parse(statement)
    text = str(caught.value)
    assert text.startswith("--rql ") and message in text, text
    assert "\n" not in text and caught.value.exit_code == 2


def test_errors_in_a_statement_of_several_lines_name_the_line():
    with pytest.raises(rql.RqlError) as caught:
        rql.parse("SELECT doc.path\nFROM doc\nFILTER doc.tag = 'ops'\n  AND doc.titel = 'x'")
    assert str(caught.value).startswith("--rql at line 4, column 7: unknown field doc.titel")
    with pytest.raises(rql.RqlError) as caught:
        rql.parse("SELECT doc.path\nFROM doc\nLIMIT")
    assert str(caught.value).startswith("--rql at line 3, column 6: unexpected end of statement")


def test_the_search_depth_is_one_the_search_accepts():
    from chinvex.retrieval.request import MAX_K

    assert 1 <= rql.SEARCH_DEPTH <= MAX_K


def test_values_are_parameters_never_sql_text():
    plan = rql.parse("SELECT doc.id, doc.context FROM doc USING lexical('x''); DROP TABLE chunks; --') "
                     "FILTER doc.title = 'y''); DROP TABLE documents; --' LIMIT 7 OFFSET 2")
    query = rql_sql.select(plan, "Q")
    assert "DROP" not in query.sql and "7" not in query.sql
    assert query.params == (rql_sql.HITS, "Q", "y'); DROP TABLE documents; --", 7, 2)
    assert plan.lexical == "x'); DROP TABLE chunks; --"  # handed to the search, never to SQL
