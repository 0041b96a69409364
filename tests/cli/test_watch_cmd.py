"""`chinvex watch`'s human lines: times as `2026-11-24 14:03 UTC` like every other human output,
counts in English. The watcher itself runs for real in tests/ingest/test_watch.py."""

from __future__ import annotations

from chinvex.cli.watch_cmd import _human


def _run(**changes) -> dict:
    event = {"event": "ingest", "context": "Proj", "at": "2026-11-29T09:30:11.503Z", "duration_s": 0.61,
             "trigger": "change", "sources": {"indexed": 1, "removed": 0, "errors": 0},
             "chunks": {"written": 1, "deleted": 0}}
    event.update(changes)
    return event


def test_a_run_line_has_a_readable_utc_time_and_english_counts():
    assert _human(_run()) == "2026-11-29 09:30 UTC Proj: 1 ingested, 0 removed, 1 chunk new, 0 deleted (0.6 s, change)"
    line = _human(_run(sources={"indexed": 2, "removed": 0, "errors": 1}, chunks={"written": 5, "deleted": 2}))
    assert "2 ingested, 0 removed, 5 chunks new, 2 deleted, 1 error (" in line


def test_the_first_line_counts_folders():
    assert _human({"event": "watching", "roots": ["/a"], "contexts": ["Proj"]}) == \
        "watching 1 folder for Proj (Ctrl-C to stop)"
    assert _human({"event": "watching", "roots": ["/a", "/b"], "contexts": ["A", "B"]}).startswith(
        "watching 2 folders for A, B")
