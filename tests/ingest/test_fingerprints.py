"""The fingerprint decision (chinvex/ingest/fingerprints.py) as a pure function: every reason
code of DESIGN.md §5 that `decide()` and `verified()` can give, and which one wins when several
apply. The reason is what `ingest --verbose` and the run summary show the user, so it must name
the change that forced the read, not merely that something did.

Fingerprints and candidates are built by hand; the one storage test (the table access is
chinvex/storage/fingerprints.py) uses a real hybrid.db."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from chinvex.ingest import fingerprints as fps
from chinvex.ingest.fingerprints import Decision, Fingerprint, Versions, decide, verified
from chinvex.models.sources import SourceCandidate

VERSIONS = Versions(parser_version="repo-3", chunker_version="chunk-7+redact-2",
                    embedded_model="builtin:all-MiniLM-L6-v2-int8")
MTIME_NS = 1_767_000_000_123_456_789
SHA = "a" * 64


def file_fp(**changes: object) -> Fingerprint:
    """The fingerprint a healthy earlier ingest of /r/a.py wrote with VERSIONS."""
    base = Fingerprint(
        source_uri="/r/a.py", context_name="T", source_type="repo", doc_id="d1",
        size_bytes=120, mtime_unix=MTIME_NS // 1_000_000_000, content_sha256=SHA,
        thread_updated_at=None, last_turn_id=None, parser_version=VERSIONS.parser_version,
        chunker_version=VERSIONS.chunker_version, embedded_model=VERSIONS.embedded_model,
        last_ingested_at_unix=1_767_000_100, last_status="ok", last_error=None,
        source_root="/r", adapter="repo", state=None, mtime_ns=MTIME_NS,
    )
    return replace(base, **changes)


def file_cand(**changes: object) -> SourceCandidate:
    """The candidate enumeration yields for /r/a.py when nothing about it changed."""
    base = SourceCandidate(source_uri="/r/a.py", source_type="repo", adapter="repo", root="/r",
                           path=Path("/r/a.py"), size_bytes=120, mtime_ns=MTIME_NS)
    return replace(base, **changes)


def thread_fp(**changes: object) -> Fingerprint:
    return file_fp(source_uri="codex://thread/t1", source_type="codex_session", size_bytes=None,
                   mtime_unix=None, mtime_ns=None, content_sha256=None,
                   thread_updated_at="2026-05-11T10:00:00Z", last_turn_id="turn-4",
                   adapter="cx_appserver", **changes)


def thread_cand(**changes: object) -> SourceCandidate:
    base = SourceCandidate(source_uri="codex://thread/t1", source_type="codex_session",
                           adapter="cx_appserver", root="/home/u/.codex", thread_id="t1",
                           thread_updated_at="2026-05-11T10:00:00Z", last_turn_id="turn-4")
    return replace(base, **changes)


# -- one reason at a time ---------------------------------------------------------------------


def test_unchanged_file_and_thread_are_skipped() -> None:
    assert decide(file_fp(), file_cand(), VERSIONS, full=False) == Decision(False, fps.UNCHANGED)
    assert decide(thread_fp(), thread_cand(), VERSIONS, full=False) == Decision(False, fps.UNCHANGED)


def test_unknown_source_is_new_file_or_new_thread() -> None:
    assert decide(None, file_cand(), VERSIONS, full=False) == Decision(True, fps.NEW_FILE)
    assert decide(None, thread_cand(), VERSIONS, full=False) == Decision(True, fps.NEW_THREAD)
    # A thread read from its rollout file (it has a path) is a file, whatever its timestamps.
    rollout = thread_cand(path=Path("/home/u/.codex/sessions/rollout.jsonl"), size_bytes=10)
    assert decide(None, rollout, VERSIONS, full=False).reason == fps.NEW_FILE
    # --full never hides that a source is new.
    assert decide(None, file_cand(), VERSIONS, full=True).reason == fps.NEW_FILE


def test_size_change_is_size_changed_without_hashing() -> None:
    decision = decide(file_fp(), file_cand(size_bytes=121, mtime_ns=MTIME_NS + 1), VERSIONS, full=False)
    assert decision == Decision(True, fps.SIZE_CHANGED)
    assert not decision.verify_content, "a new size proves the change; hashing would be waste"


def test_mtime_move_with_a_stored_hash_asks_for_the_content_to_be_compared() -> None:
    decision = decide(file_fp(), file_cand(mtime_ns=MTIME_NS + 1), VERSIONS, full=False)
    assert decision == Decision(True, fps.MTIME_CHANGED, verify_content=True)


def test_mtime_move_without_a_stored_hash_is_mtime_changed() -> None:
    """Files over the hashing limit, and sources whose adapter keeps a resume state, have no
    stored hash: the content was not compared, so the reason is what was seen."""
    decision = decide(file_fp(content_sha256=None), file_cand(mtime_ns=MTIME_NS + 5_000_000_000),
                      VERSIONS, full=False)
    assert decision == Decision(True, fps.MTIME_CHANGED, verify_content=False)


def test_mtime_is_compared_in_nanoseconds_and_in_seconds_for_old_fingerprints() -> None:
    sub_second = file_cand(mtime_ns=MTIME_NS + 1_000)  # same second, later nanoseconds
    assert decide(file_fp(), sub_second, VERSIONS, full=False).reason == fps.MTIME_CHANGED
    # A fingerprint written before nanoseconds were kept only knows the second.
    old = file_fp(mtime_ns=None)
    assert decide(old, sub_second, VERSIONS, full=False) == Decision(False, fps.UNCHANGED)
    next_second = file_cand(mtime_ns=MTIME_NS + 1_000_000_000)
    assert decide(old, next_second, VERSIONS, full=False).reason == fps.MTIME_CHANGED


@pytest.mark.parametrize("field, value, reason", [
    ("parser_version", "repo-2", fps.PARSER_UPGRADED),
    ("chunker_version", "chunk-6+redact-2", fps.CHUNKER_UPGRADED),
    ("chunker_version", "chunk-7+redaction-off", fps.CHUNKER_UPGRADED),  # redaction switched
    ("embedded_model", "ollama:mxbai-embed-large", fps.EMBED_MODEL_CHANGED),
    ("embedded_model", None, fps.EMBED_MODEL_CHANGED),
])
def test_version_changes_force_a_read_of_an_unchanged_source(field: str, value: object,
                                                             reason: str) -> None:
    for fp, cand in ((file_fp(**{field: value}), file_cand()),
                     (thread_fp(**{field: value}), thread_cand())):
        assert decide(fp, cand, VERSIONS, full=False) == Decision(True, reason)


def test_source_that_failed_last_time_is_retried() -> None:
    failed = file_fp(last_status="error", last_error="/r/a.py: Permission denied")
    assert decide(failed, file_cand(), VERSIONS, full=False) == Decision(True, fps.RETRY_AFTER_ERROR)
    assert decide(thread_fp(last_status="error"), thread_cand(), VERSIONS,
                  full=False) == Decision(True, fps.RETRY_AFTER_ERROR)


def test_thread_updated_by_timestamp_or_by_a_new_last_turn() -> None:
    later = thread_cand(thread_updated_at="2026-05-11T10:05:00Z")
    assert decide(thread_fp(), later, VERSIONS, full=False) == Decision(True, fps.THREAD_UPDATED)
    # Same second, one more turn: the turn id tells what the timestamp's resolution hides.
    new_turn = thread_cand(last_turn_id="turn-5")
    assert decide(thread_fp(), new_turn, VERSIONS, full=False) == Decision(True, fps.THREAD_UPDATED)
    # A lister that does not report turn ids says nothing about them.
    no_turn_id = thread_cand(last_turn_id=None)
    assert decide(thread_fp(), no_turn_id, VERSIONS, full=False) == Decision(False, fps.UNCHANGED)


def test_interrupted_write_is_read_again_even_when_the_stat_matches() -> None:
    assert decide(file_fp(), file_cand(), VERSIONS, full=False,
                  interrupted=True) == Decision(True, fps.INTERRUPTED)


def test_full_reingest_and_the_embedder_change_it_was_needed_for() -> None:
    assert decide(file_fp(), file_cand(), VERSIONS, full=True) == Decision(True, fps.FULL_REINGEST)
    other_model = file_fp(embedded_model="ollama:mxbai-embed-large")
    assert decide(other_model, file_cand(), VERSIONS, full=True) == Decision(True, fps.EMBED_MODEL_CHANGED)
    assert decide(thread_fp(embedded_model="x:y"), thread_cand(), VERSIONS,
                  full=True).reason == fps.EMBED_MODEL_CHANGED
    # --full reads everything: never a hash-and-refresh, whatever the stat says.
    touched = decide(file_fp(), file_cand(mtime_ns=MTIME_NS + 1), VERSIONS, full=True)
    assert touched == Decision(True, fps.FULL_REINGEST)


# -- which reason wins --------------------------------------------------------------------------


def test_precedence_when_several_things_changed() -> None:
    """Everything changed at once: each reason in turn wins once the ones above it are undone."""
    everything = dict(last_status="error", parser_version="old-p", chunker_version="old-c",
                      embedded_model="old-m", size_bytes=1, mtime_ns=1)
    order = [("last_status", "ok", fps.RETRY_AFTER_ERROR),
             ("parser_version", VERSIONS.parser_version, fps.PARSER_UPGRADED),
             ("chunker_version", VERSIONS.chunker_version, fps.CHUNKER_UPGRADED),
             ("embedded_model", VERSIONS.embedded_model, fps.EMBED_MODEL_CHANGED),
             ("size_bytes", 120, fps.SIZE_CHANGED),
             ("mtime_ns", MTIME_NS, fps.MTIME_CHANGED)]
    changed = dict(everything)
    cand = file_cand(mtime_ns=MTIME_NS + 7)
    assert decide(file_fp(**changed), cand, VERSIONS, full=False, interrupted=True).reason == fps.INTERRUPTED
    for field, healthy, reason in order:
        assert decide(file_fp(**changed), cand, VERSIONS, full=False).reason == reason, field
        changed[field] = healthy
    # With the mtime back too, nothing is left to report.
    assert decide(file_fp(**changed), file_cand(), VERSIONS, full=False).reason == fps.UNCHANGED


# -- the second step of an mtime move: comparing the content -----------------------------------


def test_same_content_after_an_mtime_move_only_refreshes() -> None:
    first = decide(file_fp(), file_cand(mtime_ns=MTIME_NS + 1), VERSIONS, full=False)
    settled = verified(first, file_fp(), SHA)
    assert settled == Decision(False, fps.MTIME_CHANGED, refresh_only=True)


def test_other_content_after_an_mtime_move_is_content_changed() -> None:
    first = decide(file_fp(), file_cand(mtime_ns=MTIME_NS + 1), VERSIONS, full=False)
    assert verified(first, file_fp(), "b" * 64) == Decision(True, fps.CONTENT_CHANGED)


def test_content_that_cannot_be_hashed_stays_mtime_changed() -> None:
    """Nothing was compared; the ingest reads the file and reports why it could not."""
    first = decide(file_fp(), file_cand(mtime_ns=MTIME_NS + 1), VERSIONS, full=False)
    assert verified(first, file_fp(), None) == Decision(True, fps.MTIME_CHANGED)


def test_decisions_that_asked_for_no_comparison_pass_through() -> None:
    for decision in (Decision(True, fps.SIZE_CHANGED), Decision(False, fps.UNCHANGED),
                     Decision(True, fps.MTIME_CHANGED)):
        assert verified(decision, file_fp(), "b" * 64) == decision
        assert verified(decision, file_fp(), SHA) == decision


# -- storage ------------------------------------------------------------------------------------


def test_nanosecond_mtime_and_state_survive_the_table(tmp_path: Path) -> None:
    """mtime_ns rides in state_json (the table has seconds only); losing it would turn every
    sub-second edit into `unchanged`."""
    from chinvex.storage import db
    from chinvex.storage import fingerprints as rows

    conn = db.connect(tmp_path / "hybrid.db", create=True)
    try:
        stored = file_fp(state={"offset": 42})
        rows.write(conn, file_fp(mtime_ns=MTIME_NS - 1, state=None, last_status="error"))
        rows.write(conn, stored)  # the upsert of the next run replaces every field
        rows.write(conn, file_fp(source_uri="/r/b.py", mtime_ns=None, state=None))
        loaded = rows.load_all(conn, "T")
    finally:
        conn.close()
    assert loaded["/r/a.py"] == stored
    assert loaded["/r/b.py"].mtime_ns is None and loaded["/r/b.py"].state is None
    sub_second = file_cand(mtime_ns=MTIME_NS + 1_000)
    assert decide(loaded["/r/a.py"], sub_second, VERSIONS, full=False).reason == fps.MTIME_CHANGED
