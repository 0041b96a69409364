"""RECALL v0.3 tools added for issue 18 (`recall_list`, `recall_context`, `recall_index`) and
`chinvex_pack`'s neighbours, driven through the official MCP client against `chinvex mcp`."""

from __future__ import annotations

import textwrap

import pytest
from mcp import Client

from mcp_harness import World, _cli, call, call_error, run_session


@pytest.fixture(scope="module")
def small(tmp_path_factory) -> World:
    base = tmp_path_factory.mktemp("recall_tools")
    repo, other, outside = base / "shop", base / "other", base / "outside"
    (repo / "src").mkdir(parents=True)
    (repo / "docs" / "adr").mkdir(parents=True)
    other.mkdir()
    outside.mkdir()
    (repo / "src" / "cart.py").write_text(textwrap.dedent('''\
        """Shopping cart totals."""


        def cart_total(items):
            """Sum of price times quantity over the cart's items."""
            return sum(i.price * i.quantity for i in items)
        '''))
    (repo / "README.md").write_text("# Shop\n\nThe cart lives in src/cart.py and sums prices.\n")
    (repo / "docs" / "adr" / "0001-decimal-money.md").write_text(
        "# 1. Money is Decimal\n\nAll amounts are Decimal, never float, so totals are exact.\n")
    (outside / "secret-plans.md").write_text("# Plans\n\nNot part of any context.\n")
    world = World(home=base / "home", repo=repo, other=other, outside=outside)
    _cli(world, "context", "create", "shop", "--repo", str(repo))
    _cli(world, "context", "create", "global")
    _cli(world, "ingest", "--context", "shop")
    return world


def _session(world: World, body):
    return run_session(world, body, args=("mcp", "--context", "shop"))


def test_recall_list_by_type_sort_and_scope(small):
    async def body(client: Client):
        added = await call(client, "recall_add", type="decision", title="Round totals half-even",
                           content="Cart totals round half-even to cents.", related_files=["src/cart.py"])
        code = await call(client, "recall_list", type="code")
        docs = await call(client, "recall_list", type="documentation", sort="title")
        adrs = await call(client, "recall_list", type="adr")
        one = await call(client, "recall_list", type="adr", limit=1)
        glob = await call(client, "recall_list", type="decision", scope="global")
        bad = await call_error(client, "recall_list", "INVALID_ARGUMENT", type="code", sort="size")
        return added, code, docs, adrs, one, glob, bad

    added, code, docs, adrs, one, glob, bad = _session(small, body)
    assert [e["source"] for e in code["items"]] == ["src/cart.py"]
    assert code["items"][0]["scope"] == "project" and code["items"][0]["context"] == "shop"
    assert [e["title"] for e in docs["items"]] == sorted((e["title"] for e in docs["items"]), key=str.lower)
    assert {e["source"] for e in docs["items"]} >= {"README.md", "docs/adr/0001-decimal-money.md"}
    ids = [e["id"] for e in adrs["items"]]
    assert added["id"] in ids and any(e["source"] == "docs/adr/0001-decimal-money.md" for e in adrs["items"])
    assert adrs["items"][0]["id"] == added["id"]  # newest first
    assert len(one["items"]) == 1 and one["truncated"] and one["total"] == adrs["total"]
    assert glob["items"] == [] and glob["scope"] == "global"
    assert "sort" in bad


def test_recall_context_names_chunks_mentions_and_decisions(small):
    async def body(client: Client):
        await call(client, "recall_add", type="decision", title="Cart totals are exact",
                   content="Use Decimal for cart totals.", related_files=["src/cart.py"])
        found = await call(client, "recall_context", file_path="src/cart.py")
        missing = await call(client, "recall_context", file_path="src/nothing.py")
        bad = await call_error(client, "recall_context", "INVALID_ARGUMENT", file_path="src/cart.py",
                               context_types=["gossip"])
        return found, missing, bad

    found, missing, bad = _session(small, body)
    assert found["indexed"] and found["relative_path"] == "src/cart.py"
    assert any("cart_total" in (c["header"] or "") + c["first_line"] for c in found["file_chunks"])
    assert [m["where"] for m in found["mentioned_in_docs"]] == ["README.md"]
    titles = {d["title"]: d["via"] for d in found["decisions"]}
    assert titles.get("Cart totals are exact") == "related_files"
    assert not missing["indexed"] and missing["file_chunks"] == [] and missing["notes"]
    assert "gossip" in bad


def test_recall_index_inside_roots_only(small):
    note = small.repo / "docs" / "payments.md"
    note.write_text("# Payments\n\nRefunds go through the zanzibarmarker queue.\n")

    async def body(client: Client):
        indexed = await call(client, "recall_index", path="docs/payments.md")
        found = await call(client, "chinvex_search", query="zanzibarmarker refunds queue", k=3)
        outside = await call_error(client, "recall_index", "INVALID_ARGUMENT",
                                   path=str(small.outside / "secret-plans.md"))
        gone = await call_error(client, "recall_index", "NOT_FOUND", path="docs/none.md")
        return indexed, found, outside, gone

    indexed, found, outside, gone = _session(small, body)
    assert indexed["context"] == "shop" and indexed["documents_for_path"] == 1 and indexed["indexed"] >= 1
    assert any("zanzibarmarker" in r["text"] for r in found["results"])
    assert "outside the source folders" in outside and str(small.repo) in outside
    assert "does not exist" in gone


# -- token discipline ---------------------------------------------------------------------------

def test_default_tool_list_is_the_core_four_under_4000_characters(small):
    import json as _json

    from chinvex.mcp.profiles import CORE

    async def body(client: Client):
        return await client.list_tools()

    listed = run_session(small, body, args=("mcp", "--context", "shop"), env={"CHINVEX_MCP_TOOLS": ""})
    names = [t.name for t in listed.tools]
    assert names == list(CORE)
    size = len(_json.dumps([t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in listed.tools],
                           separators=(",", ":")))
    assert size < 4000, size
    neighbours = {"chinvex_answer": "chinvex_pack", "chinvex_search": "chinvex_answer", "chinvex_pack": "before"}
    for tool in listed.tools:
        if tool.name in neighbours:  # each says when to use it rather than the others
            assert neighbours[tool.name] in tool.description, tool.description
        assert "title" not in _json.dumps(tool.input_schema["properties"])


def test_tool_profiles_and_a_bad_one(small):
    async def body(client: Client):
        return await client.list_tools()

    recall = run_session(small, body, args=("mcp", "--context", "shop", "--tools", "recall"), env={"CHINVEX_MCP_TOOLS": ""})
    assert {t.name for t in recall.tools} == set(__import__("chinvex.mcp.profiles", fromlist=["RECALL"]).RECALL)
    picked = run_session(small, body, env={"CHINVEX_MCP_TOOLS": "chinvex_search,recall_list"})
    assert [t.name for t in picked.tools] == ["chinvex_search", "recall_list"]
    from helpers import run_cli

    bad = run_cli("mcp", "--tools", "everything", env=small.env())
    assert bad.code == 2 and "everything" in bad.stderr and "Traceback" not in bad.stderr
    bad_env = run_cli("mcp", env=small.env(CHINVEX_MCP_TOOLS="nope"))
    assert bad_env.code == 2 and "nope" in bad_env.stderr and "Traceback" not in bad_env.stderr


def test_max_tokens_caps_search_and_says_so(small):
    from chinvex.embedding.tokenizer import count_tokens

    async def body(client: Client):
        wide = await call(client, "chinvex_search", query="cart totals decimal money", k=10, max_tokens=100_000)
        capped = await call(client, "chinvex_search", query="cart totals decimal money", k=10, max_tokens=100)
        answer = await call(client, "chinvex_answer", query="How is the cart total computed?",
                            include_evidence=True, max_tokens=100)
        low = await call_error(client, "chinvex_search", "INVALID_ARGUMENT", query="x", max_tokens=5)
        return wide, capped, answer, low

    wide, capped, answer, low = _session(small, body)
    assert not wide["budget"]["truncated"] and wide["budget"]["dropped"] == 0
    assert {r["scope"] for r in wide["results"]} == {"project"}  # every result carries its scope label
    assert sum(count_tokens(r["text"]) for r in capped["results"]) == capped["budget"]["used_tokens"] <= 100
    assert capped["budget"]["truncated"] or sum(count_tokens(r["text"]) for r in wide["results"]) <= 100
    assert answer["budget"]["used_tokens"] <= 100
    assert "max_tokens" in low


def test_fit_keeps_rank_order_and_cuts_the_first_overflow():
    from chinvex.mcp.budget import MIN_KEPT_TOKENS, fit

    count = lambda text: len(text.split())  # noqa: E731
    prefix = lambda text, n: " ".join(text.split()[:n])  # noqa: E731
    items = [{"text": "a " * 50}, {"text": "b " * 50}, {"text": "c " * 50}]
    kept, note = fit(items, "text", 80, count=count, prefix_of=prefix)
    assert [k["text"][0] for k in kept] == ["a", "b"] and kept[1]["truncated"] and count(kept[1]["text"]) == 30
    assert note == {"max_tokens": 80, "used_tokens": 80, "truncated": True, "dropped": 1}
    kept, note = fit(items, "text", 50 + MIN_KEPT_TOKENS - 1, count=count, prefix_of=prefix)
    assert len(kept) == 1 and note["dropped"] == 2 and note["truncated"]


# -- scopes: promotion from project to global --------------------------------------------------

def test_promotion_over_mcp_moves_the_item_and_keeps_a_pointer(small):
    async def body(client: Client):
        added = await call(client, "recall_add", type="pattern", title="Retry idempotent calls only",
                           content="Only retry calls that are idempotent: the quokkamarker rule.")
        before = await call(client, "recall_search", query="quokkamarker idempotent retry", scope="all")
        moved = await call(client, "recall_promote", item_id=added["id"])
        after = await call(client, "recall_search", query="quokkamarker idempotent retry", scope="all")
        global_only = await call(client, "recall_search", query="quokkamarker idempotent retry", scope="global")
        fetched = await call(client, "recall_get", id=added["id"])
        listed = await call(client, "recall_list", type="pattern", scope="all")
        again = await call_error(client, "recall_promote", "INVALID_ARGUMENT", item_id=added["id"])
        missing = await call_error(client, "recall_promote", "NOT_FOUND", item_id="P-00000000")
        return added, before, moved, after, global_only, fetched, listed, again, missing

    added, before, moved, after, global_only, fetched, listed, again, missing = _session(small, body)
    item = added["id"]
    hits = lambda result: [r for r in result["results"] if r["id"] == item]  # noqa: E731
    assert [h["metadata"]["scope"] for h in hits(before)] == ["project"]
    assert moved["from"] == "shop" and moved["to"] == "global"
    assert [h["metadata"]["context"] for h in hits(after)] == ["global"]  # found once, in global
    assert hits(global_only) and all(h["metadata"]["scope"] == "global" for h in hits(global_only))
    assert fetched["metadata"]["context"] == "global" and fetched["scope"] == "global"
    assert fetched["metadata"]["found_via_pointer_in"] == "shop"
    assert fetched["metadata"]["promoted_from"]["context"] == "shop"
    assert [(e["context"], e["scope"]) for e in listed["items"] if e["id"] == item] == [("global", "global")]
    assert "already promoted" in again
    assert "P-00000000" in missing


def test_memory_cli_lists_by_scope_and_promotes(small):
    from helpers import run_cli

    async def body(client: Client):
        return await call(client, "recall_add", type="lesson", title="Pin the toolchain",
                          content="Pin compiler versions per project.")

    added = _session(small, body)
    env = small.env(CHINVEX_CONTEXT="shop")
    listed = run_cli("memory", "list", "--scope", "project", "--json", env=env)
    assert listed.code == 0, listed
    assert any(r["id"] == added["id"] and r["scope"] == "project" for r in listed.json["items"])
    promoted = run_cli("memory", "promote", added["id"], "--json", env=env)
    assert promoted.code == 0, promoted
    assert promoted.json["to"] == "global"
    glob = run_cli("memory", "list", "--scope", "global", "--json", env=env).json["items"]
    assert any(r["id"] == added["id"] and r["scope"] == "global" for r in glob)
    project = run_cli("memory", "list", "--scope", "project", "--promoted", "--json", env=env).json["items"]
    assert [r["scope"] for r in project if r["id"] == added["id"]] == ["promoted"]
    again = run_cli("memory", "promote", added["id"], env=env)
    assert again.code == 2 and "already promoted" in again.stderr and "Traceback" not in again.stderr
    unknown = run_cli("memory", "promote", "L-99999999", env=env)
    assert unknown.code == 1 and "L-99999999" in unknown.stderr
    bad_scope = run_cli("memory", "list", "--scope", "everywhere", env=env)
    assert bad_scope.code == 2 and "--scope" in bad_scope.stderr
