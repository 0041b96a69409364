"""A document's content hash is computed once on the ingest path (chinvex.ingest.source_ingest):
the tombstone check, the check that skips an unchanged document and the stored row all use it;
`prepare` stores the hash it is given instead of hashing the document again."""

from __future__ import annotations

from pathlib import Path

from helpers import run_cli_in_process


def _counting(monkeypatch, module, name: str) -> list[str]:
    calls: list[str] = []
    original = getattr(module, name)

    def counted(*args, **kwargs):
        result = original(*args, **kwargs)
        calls.append(result)
        return result

    monkeypatch.setattr(module, name, counted)
    return calls


def test_each_document_is_hashed_once_and_the_row_keeps_that_hash(chinvex_home: Path, repo: Path,
                                                                  monkeypatch, index_db):
    from chinvex.ingest import prepare, source_ingest

    pipeline_hashes = _counting(monkeypatch, source_ingest, "_doc_hash")
    prepare_hashes = _counting(monkeypatch, prepare, "_content_hash")
    assert run_cli_in_process("context", "create", "Hash", "--repo", str(repo)).code == 0
    result = run_cli_in_process("ingest", "--context", "Hash", "--json")
    assert result.code == 0, result
    with index_db(chinvex_home, "Hash") as conn:
        stored = sorted(row[0] for row in conn.execute("SELECT content_hash FROM documents"))
    assert len(stored) == 2
    assert sorted(pipeline_hashes) == stored
    assert prepare_hashes == []

    # An mtime change with the same content: the stored hash matches, nothing is rewritten.
    (repo / "README.md").write_text((repo / "README.md").read_text() + "\nMore about gadgets.\n")
    (repo / "hello.py").touch()
    pipeline_hashes.clear()
    again = run_cli_in_process("ingest", "--context", "Hash", "--json")
    assert again.code == 0, again
    assert again.json["documents"]["written"] == 1  # README.md only
    assert len(pipeline_hashes) == 1 and prepare_hashes == []  # hello.py: only refreshed
