"""chinvex.memory without the MCP server: making, storing and listing memories, feedback and
stats, the flight recorder, and promotion pointers, on a real (empty) hybrid.db."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import orjson
import pytest

from chinvex.memory.events import log_event
from chinvex.memory.feedback import count_retrievals, memory_stats, recent_feedback, record_feedback
from chinvex.memory.items import (
    get_memory,
    insert_memory,
    list_memories,
    make_memory,
    mark_indexed,
    memories_for_docs,
    pending_memories,
    to_document,
)
from chinvex.memory.vocabulary import MEMORY_ID, MEMORY_SOURCE_TYPE
from chinvex.storage import db
from chinvex.storage.memories import turn_into_pointer


@pytest.fixture
def conn(tmp_path: Path):
    connection = db.connect(tmp_path / "hybrid.db", create=True)
    yield connection
    connection.close()


def _stored(conn: sqlite3.Connection, title: str, memory_type: str = "decision"):
    memory = make_memory(memory_type, title, f"{title}: the content", scope="project", tags=["t"],
                         metadata={"related_files": ["a.py"]})
    insert_memory(conn, memory)
    return memory


def test_a_memory_round_trips_through_its_row(conn):
    memory = _stored(conn, "Retry webhooks")
    assert MEMORY_ID.match(memory.item_id) and memory.item_id.startswith("D-")
    got = get_memory(conn, memory.item_id)
    assert got == memory and got.indexed_at is None
    assert memories_for_docs(conn, [memory.doc_id, "nope"]) == {memory.doc_id: memory}
    assert get_memory(conn, "D-00000000") is None
    document = to_document(memory)
    assert document.source_type == MEMORY_SOURCE_TYPE == "memory"
    assert document.source_uri == f"memory://{memory.item_id}"
    assert memory.as_result()["metadata"]["source_type"] == "memory"


def test_pending_memories_until_marked_indexed_and_listing_skips_pointers(conn):
    first, second = _stored(conn, "First"), _stored(conn, "Second", "pattern")
    assert {m.item_id for m in pending_memories(conn)} == {first.item_id, second.item_id}
    mark_indexed(conn, [first.item_id])
    assert [m.item_id for m in pending_memories(conn)] == [second.item_id]
    assert [m.item_id for m in list_memories(conn, memory_type="pattern")] == [second.item_id]
    turn_into_pointer(conn, first.item_id, scope="promoted", metadata_json=orjson.dumps({}).decode(),
                      stamp="2999-01-01T00:00:00Z")
    assert [m.item_id for m in list_memories(conn)] == [second.item_id]
    assert [m.item_id for m in list_memories(conn, include_promoted=True)] == [first.item_id, second.item_id]


def test_secrets_are_redacted_when_a_memory_is_made():
    secret = "AKIA" + "IOSFODNN7EXAMPLE"
    memory = make_memory("decision", "keys", f"the key is {secret}", scope="project", tags=[], metadata={})
    assert secret not in memory.content


def test_feedback_counts_and_recent_notes(conn):
    memory = _stored(conn, "Judged")
    count_retrievals(conn, [memory.item_id, memory.item_id])
    count_retrievals(conn, [])
    record_feedback(conn, item_id=memory.item_id, session_id="s", kind="useful", context="right on",
                    duplicate_of=None)
    stats = memory_stats(conn, memory.item_id)
    assert stats["retrieval_count"] == 1 and stats["useful_count"] == 1 and stats["usefulness_rate"] == 1.0
    notes = recent_feedback(conn, memory.item_id, 5)
    assert [(n["feedback"], n["context"]) for n in notes] == [("useful", "right on")]
    assert memory_stats(conn, "X-00000000")["usefulness_rate"] is None


def test_the_flight_recorder_keeps_redacted_entries(conn):
    secret = "AKIA" + "IOSFODNN7EXAMPLE"
    logged = log_event(conn, session_id="s1", event_type="decision", content=f"used {secret}",
                       rationale="because", metadata={"files": ["a.py"]})
    row = conn.execute("SELECT * FROM flight_recorder WHERE entry_id=?", (logged["event_id"],)).fetchone()
    assert row["session_id"] == "s1" and row["rationale"] == "because" and secret not in row["content"]
    assert orjson.loads(row["metadata_json"]) == {"files": ["a.py"]}
