"""AppServerSource over replayed transcripts: listing, paging, reading, fallbacks."""

from __future__ import annotations

import copy
from chinvex.models.sources import ParseReport
from chinvex_adapters.cx_appserver import schemas as s
from chinvex_adapters.cx_appserver.source import DEFAULT_SOURCE_KINDS
from replay_support import (
    CODEMIE,
    FakeAppServer,
    LARGE_0106,
    PAGINATED,
    add_history_routes,
    recorded,
    reply,
    source_over,
)


def test_list_threads_pages_with_cursor_and_sorts():
    fake = FakeAppServer(runs=("run3b",))
    page1 = recorded("run3b", "thread/list", limit=2)
    full = recorded("run3b", "thread/list", modelProviders=[])
    cursor = page1.response["result"]["nextCursor"]
    assert cursor and "|" in cursor  # an opaque "<timestamp>|<thread id>" string

    def page2(_params):
        # Not recorded: the rest of the recorded full listing, as the server would page it.
        first_ids = {t["id"] for t in page1.response["result"]["data"]}
        rest = [t for t in full.response["result"]["data"] if t["id"] not in first_ids]
        return [{"id": 0, "result": {"data": rest, "nextCursor": None, "backwardsCursor": None}}]

    fake.route("thread/list", lambda p: p.get("cursor") == cursor, page2)
    fake.route("thread/list", lambda p: "cursor" not in p, reply(page1))
    with source_over(fake) as source:
        threads = source.list_threads()
    calls = fake.requests("thread/list")
    assert len(calls) == 2
    assert "cursor" not in calls[0]["params"] and calls[1]["params"]["cursor"] == cursor
    for call in calls:
        assert call["params"]["modelProviders"] == []
        assert call["params"]["sourceKinds"] == list(DEFAULT_SOURCE_KINDS)
        assert "archived" not in call["params"]
    ids = [t.thread_id for t in threads]
    assert sorted(ids) == sorted(t["id"] for t in full.response["result"]["data"])
    assert len(ids) == 6
    assert [t.created_at for t in threads] == sorted(t.created_at for t in threads)
    by_id = {t.thread_id: t for t in threads}
    assert by_id[PAGINATED].history_mode == "paginated"
    assert by_id[LARGE_0106].source_kind == "cli" and by_id[CODEMIE].source_kind == "vscode"
    assert by_id[CODEMIE].updated_at == "2026-11-22T02:31:51.000Z"  # unix seconds → ISO
    assert by_id[CODEMIE].path.endswith(f"{CODEMIE}.jsonl")
    assert by_id[CODEMIE].source_uri == f"codex://thread/{CODEMIE}"
    assert fake.unmatched == []


def test_list_threads_subagents_and_archived_passes():
    fake = FakeAppServer(runs=("run3b",))
    full = recorded("run3b", "thread/list", modelProviders=[])
    empty = {"id": 0, "result": {"data": [], "nextCursor": None}}
    fake.route("thread/list", lambda p: p.get("archived") is True, lambda p: [empty])
    fake.route("thread/list", lambda p: True, reply(full))
    with source_over(fake) as source:
        threads = source.list_threads(include_subagents=True, include_archived=True)
    calls = [c["params"] for c in fake.requests("thread/list")]
    assert len(calls) == 2 and calls[1]["archived"] is True
    assert set(s.SUBAGENT_KINDS) <= set(calls[0]["sourceKinds"])
    assert len(threads) == 6 and not any(t.archived for t in threads)


def test_listing_survives_one_invalid_thread_and_dedupes_ids():
    fake = FakeAppServer(runs=("run3b",))
    full = recorded("run3b", "thread/list", modelProviders=[])
    data = copy.deepcopy(full.response["result"]["data"])
    broken = copy.deepcopy(data[1])
    del broken["createdAt"]  # required
    broken["id"] = "broken-thread"
    copy_of_first = copy.deepcopy(data[2])
    copy_of_first["path"] = copy_of_first["path"].replace("/sessions/", "/sessions/copy/")
    response = {"id": 0, "result": {"data": data + [broken, copy_of_first], "nextCursor": None}}
    fake.route("thread/list", lambda p: True, lambda p: [response])
    with source_over(fake) as source:
        threads = source.list_threads()
        assert len(threads) == 6
        assert source.list_errors and "broken-thread" in source.list_errors[0]
        assert source.list_counts["duplicate_thread_ids"] == 1
    dup = next(t for t in threads if t.thread_id == data[2]["id"])
    assert len(dup.duplicate_paths) == 1


def test_paginated_thread_without_projection_returns_none_with_reason():
    fake = FakeAppServer(runs=("run3", "run3b"))
    add_history_routes(fake)
    listing = recorded("run3b", "thread/list", modelProviders=[])
    fake.route("thread/list", lambda p: True, reply(listing))
    with source_over(fake) as source:
        summary = next(t for t in source.list_threads() if t.thread_id == PAGINATED)
        report = ParseReport()
        assert source.read_thread(summary, report) is None
        outcome = source.read_thread_outcome(summary)
    assert outcome.reason == "paginated_projection_missing"
    assert report.counts["fallback_paginated_projection_missing"] == 1
    assert any("paginated_projection_missing" in w for w in report.warnings)
    # the source asked the paginated way: metadata read, then thread/turns/list, full items
    turns_calls = fake.requests("thread/turns/list")
    assert turns_calls[0]["params"]["itemsView"] == "full"
    assert turns_calls[0]["params"]["sortDirection"] == "asc"
    assert fake.requests("thread/read")[0]["params"]["includeTurns"] is False


def test_items_list_unsupported_on_legacy_keeps_turn_items():
    """thread/turns/list pages (cursor) for a legacy thread; its summary-view turns need
    thread/items/list, which legacy threads refuse with -32601: the turns keep their items."""
    fake = FakeAppServer(runs=("run3", "run2"))
    page1 = recorded("run3", "thread/turns/list", threadId=CODEMIE)
    cursor = page1.response["result"]["nextCursor"]
    full_read = recorded("run3", "thread/read", threadId=CODEMIE)
    legacy_refusal = recorded("run2", "thread/items/list")
    assert legacy_refusal.response["error"]["code"] == -32601

    def page2(_params):
        # Not recorded: the remaining turn (from the recorded full read) in summary view.
        third = copy.deepcopy(full_read.response["result"]["thread"]["turns"][2])
        third["itemsView"] = "summary"
        return [{"id": 0, "result": {"data": [third], "nextCursor": None, "backwardsCursor": None}}]

    fake.route("thread/turns/list", lambda p: p.get("cursor") == cursor, page2)
    fake.route("thread/turns/list", lambda p: "cursor" not in p, reply(page1))
    fake.route("thread/items/list", lambda p: True, reply(legacy_refusal))
    with source_over(fake) as source:
        turns, counts = source.list_turns(CODEMIE)
    assert [t.id for t in turns] == ["rollout-1", "rollout-30", "rollout-32"]
    assert all(len(t.items) == 1 and t.items[0].type == "userMessage" for t in turns)
    assert counts["turns_items_partial"] == 3 and counts["turn_pages"] == 2
    assert len(fake.requests("thread/items/list")) == 1  # not asked again after -32601


def test_paginated_turns_with_summary_view_are_completed_by_items_list():
    fake = FakeAppServer(runs=("run1",))
    summary_page = copy.deepcopy(recorded("run1", "thread/turns/list", limit=2).response)
    summary_page["result"]["nextCursor"] = None
    items = recorded("run1", "thread/items/list")

    def items_for(params):
        entries = [e for e in items.response["result"]["data"] if e["turnId"] == params["turnId"]]
        return [{"id": 0, "result": {"data": entries, "nextCursor": None}}]

    fake.route("thread/turns/list", lambda p: True, lambda p: [summary_page])
    fake.route("thread/items/list", lambda p: True, items_for)
    with source_over(fake) as source:
        turns, counts = source.list_turns(PAGINATED)
    assert [len(t.items) for t in turns] == [3, 4]  # summary view had 2 and 2
    assert [i.type for i in turns[1].items] == ["userMessage", "reasoning", "commandExecution", "agentMessage"]
    assert counts["item_pages"] == 2
