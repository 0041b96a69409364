"""`chinvex_search` with `per_doc` (the MCP side of `chinvex search --per-doc`): an agent asking
which files handle something gets each file once, in the order of its best chunk. Real index,
real embedder, a real MCP client talking to `chinvex mcp` over stdio."""

from __future__ import annotations

import pytest
from mcp import Client

from mcp_harness import World, _cli, call, call_error, run_session

SECTIONS = ("Retries", "Backoff", "Signatures", "Ordering", "Dead letters", "Replays")


@pytest.fixture(scope="module")
def runbook(tmp_path_factory) -> World:
    base = tmp_path_factory.mktemp("per_doc")
    repo = base / "hooks"
    (repo / "src").mkdir(parents=True)
    # One long runbook whose every section is about webhook delivery (several chunks of one
    # file), and two short files on the same topic.
    body = "\n\n".join(
        f"## {title}\n\n" + " ".join(
            f"Webhook delivery step {i} for {title.lower()}: the dispatcher retries a failed webhook "
            f"with exponential backoff and records attempt {i} in the delivery log." for i in range(12))
        for title in SECTIONS)
    (repo / "RUNBOOK.md").write_text(f"# Webhook runbook\n\n{body}\n", encoding="utf-8")
    (repo / "src" / "retry.py").write_text(
        '"""Webhook retries."""\n\n\ndef backoff(attempt: int) -> float:\n'
        '    """Exponential backoff before the next webhook delivery attempt."""\n'
        '    return min(30.0, 0.5 * 2 ** attempt)\n', encoding="utf-8")
    (repo / "NOTES.md").write_text("# Notes\n\nFailed webhook deliveries are retried with backoff.\n",
                                   encoding="utf-8")
    world = World(home=base / "home", repo=repo, other=base, outside=base)  # one context: no other folders
    _cli(world, "context", "create", "hooks", "--repo", str(repo))
    _cli(world, "ingest", "--context", "hooks")
    return world


def test_per_doc_lists_each_file_once_in_the_order_of_its_best_chunk(runbook):
    async def body(client: Client):
        query = "webhook delivery retries with exponential backoff"
        every = await call(client, "chinvex_search", query=query, k=12)
        files = await call(client, "chinvex_search", query=query, k=12, per_doc=1)
        two = await call(client, "chinvex_search", query=query, k=12, per_doc=2)
        await call_error(client, "chinvex_search", "INVALID_ARGUMENT", query=query, per_doc=-1)
        return every, files, two

    every, files, two = run_session(runbook, body, args=("mcp", "--context", "hooks"))
    ranked = [r["doc_id"] for r in every["results"]]
    assert len(ranked) > len(set(ranked)), "precondition: the runbook has several chunks among the hits"
    distinct = [r["doc_id"] for r in files["results"]]
    assert len(distinct) == len(set(distinct)) == 3  # all three files, where the runbook filled the list
    seen = list(dict.fromkeys(ranked))
    assert distinct[:len(seen)] == seen  # files ranked by their best chunk, which is kept
    assert [r["chunk_id"] for r in files["results"][:len(seen)]] == [
        next(r["chunk_id"] for r in every["results"] if r["doc_id"] == d) for d in seen]
    counts = [r["doc_id"] for r in two["results"]]
    assert max(counts.count(d) for d in counts) == 2
