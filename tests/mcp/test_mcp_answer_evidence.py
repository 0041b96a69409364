"""The compact MCP answer's one evidence line names each of the best places once, with how many
of the retrieved chunks came from it (issue 41: it used to repeat one path three times)."""

from __future__ import annotations

from chinvex.mcp.chinvex_answer import compact_answer


def _payload(paths: list[str]) -> dict:
    chunks = [{"chunk_id": f"c{i}", "metadata": {"path": p}} for i, p in enumerate(paths)]
    return {"schema_version": 1, "context": "c", "query": "q", "grounded": True, "answer": "a",
            "citations": [], "errors": [], "evidence_pack": {"chunks": chunks},
            "retrieval": {"mode": "hybrid", "generator": "extractive"}}


def test_places_are_named_once_with_their_chunk_counts():
    line = compact_answer(_payload(["docs/a.md", "docs/a.md", "src/b.py", "docs/a.md", "c.txt", "d.txt"]))["evidence"]
    assert line == "6 chunks retrieved (hybrid, extractive); best: docs/a.md (3 chunks), src/b.py, c.txt"
    assert compact_answer(_payload([]))["evidence"].endswith("best: none")
