"""`chinvex query`'s table: dates read `2026-11-24 14:03 UTC` as in every human output (the
README's examples and --json keep what the rows hold). The query engine is tested in
tests/retrieval/test_rql_run.py."""

from __future__ import annotations

from chinvex.cli.query_cmd import _cell


def test_date_columns_read_as_utc_minutes_and_other_cells_are_untouched():
    for column in ("doc.mtime", "doc.updated_at", "doc.created_at"):
        assert _cell(column, "2026-05-11T11:48:14.988Z") == "2026-05-11 11:48 UTC"
    assert _cell("doc.thread_id", "019e1695-0522-7c83") == "019e1695-0522-7c83"
    assert _cell("score", 0.84512) == "0.845" and _cell("doc.mtime", None) == "–"
