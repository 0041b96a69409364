"""Checks of fingerprints, documents and their origins: every document is accounted for by a
source, every source that parsed has its document, no document is left without chunks."""

from __future__ import annotations

import os
import sqlite3
from collections import defaultdict
from typing import Any

import orjson

from chinvex.doctor.findings import Findings
from chinvex.doctor.report import Check
from chinvex.doctor.runs import is_path
from chinvex.models import ContextConfig
from chinvex.storage import consistency as cons
from chinvex.storage import doctor_reads as reads


SINGLE_DOCUMENT_ADAPTERS = frozenset({"repo", "notes", "cx_sessions_jsonl", "cx_appserver"})
"""Adapters that turn every source they accept into exactly one document (or raise). The others
may legitimately produce none: an export without conversations, a transcript with no turn yet."""


def check_fingerprints(conn: sqlite3.Connection, config: ContextConfig, f: Findings) -> Check:
    """A fingerprint says "indexed, unchanged": if its documents are not there, the next ingest
    would skip the source forever."""
    check = Check("fingerprints_without_documents")
    documents = reads.document_ids(conn)
    # Documents removed with `chinvex rm` are missing on purpose: their tombstones keep them out.
    removed = reads.tombstoned_documents(conn)
    documents |= set(removed)
    removed_origins = set(removed.values())
    ledger: dict[str, set[str]] = defaultdict(set)
    for doc_id, origin in reads.ledger_entries(conn):
        ledger[origin].add(doc_id)
    for doc_id, origin in reads.document_origins(conn):
        ledger[origin].add(doc_id)
    bad: list[str] = []
    for uri, doc_id, adapter in reads.indexed_fingerprints(conn, config.name):
        if doc_id and doc_id not in documents:
            bad.append(uri)
        elif not doc_id and not ledger.get(uri) and adapter in SINGLE_DOCUMENT_ADAPTERS \
                and uri not in removed_origins:
            bad.append(uri)
    # A source being removed (or rewritten) is journaled as pending before its documents go and
    # until its fingerprint does: a run killed in between left it, and the next ingest finishes.
    pending = reads.pending_source_uris(conn)
    interrupted = [uri for uri in bad if uri in pending]
    bad = [uri for uri in bad if uri not in pending]
    f.fingerprints_without_docs = bad
    if not bad and interrupted:
        return check.problem("warning", interrupted, "sources an interrupted ingest was removing "
                             "or rewriting; the next 'chinvex ingest' finishes them",
                             repairable=False)
    if bad:
        return check.problem("error", bad, "sources recorded as indexed whose documents are "
                             "missing; repair clears their fingerprints so the next ingest "
                             "reads them again", repairable=True)
    check.message = "every indexed source has its documents"
    return check


def _blank_conversation(conn: sqlite3.Connection, doc_id: str, metadata: dict[str, Any]) -> bool:
    if metadata.get("turn_count") == 0:
        return True
    for turn_json in reads.conversation_turn_jsons(conn, doc_id):
        turn = orjson.loads(turn_json)
        if str(turn.get("text") or "").strip() or (turn.get("tool") or {}).get("input"):
            return False
    return True


def _blank_file(path: str, limit: int = 8 * 1024 * 1024) -> bool:
    """True when the file holds nothing but whitespace: such a document has no chunk."""
    try:
        if os.path.getsize(path) > limit:
            return False
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError:
        return False
    return not data.decode("utf-8", "replace").replace("\ufeff", "").strip()


def check_documents_without_chunks(conn: sqlite3.Connection, f: Findings) -> Check:
    check = Check("documents_without_chunks")
    bad: list[tuple[str, str]] = []
    for doc_id, origin, metadata_json in reads.documents_without_chunks(conn):
        metadata = orjson.loads(metadata_json or "{}")
        metadata = metadata if isinstance(metadata, dict) else {}
        if metadata.get("doc_type") == "conversation":
            if _blank_conversation(conn, doc_id, metadata):
                continue
        elif is_path(origin):
            path = origin.split("#", 1)[0]
            if not os.path.exists(path) or _blank_file(path):
                continue  # gone (stale_sources says so) or nothing but whitespace
        bad.append((doc_id, origin))
    f.docs_without_chunks = bad
    if bad:
        return check.problem("error", [f"{d} ({o})" for d, o in bad],
                             "documents with content but no chunk (unsearchable); repair makes "
                             "the next ingest write them again", repairable=True)
    check.message = "every non-empty document has chunks"
    return check


def check_ledger(conn: sqlite3.Connection, f: Findings) -> list[Check]:
    """doc_origins and documents describe the same set: every (document, writing source) pair is
    in the ledger, and every ledger entry names an existing document."""
    orphan_check, missing_check = Check("origins_without_documents"), Check("documents_without_origins")
    orphans = reads.ledger_entries_without_documents(conn)
    # A source records its ledger entries before it writes its documents, and is journaled as
    # pending before either: entries of a pending source are an interrupted run's, which the
    # next ingest settles (it reads the source again, or removes what it wrote).
    pending = reads.pending_source_uris(conn)
    interrupted = [(d, o) for d, o in orphans if o in pending]
    orphans = [(d, o) for d, o in orphans if o not in pending]
    missing = reads.documents_missing_from_ledger(conn)
    # Removing a source drops its ledger entries before its documents (both after it is
    # journaled as pending): a run killed in between left documents of a pending source.
    removing = [(d, o) for d, o in missing if o in pending]
    missing = [(d, o) for d, o in missing if o not in pending]
    f.origins_without_docs, f.docs_without_origins = orphans, missing
    if orphans:
        orphan_check.problem("error", [f"{d} <- {o}" for d, o in orphans],
                             "sources are recorded as producing documents that are not indexed "
                             "(a stale entry can keep another source's copy out of the index); "
                             "repair drops them and has those sources read again",
                             repairable=True)
    elif interrupted:
        orphan_check.problem("warning", [f"{d} <- {o}" for d, o in interrupted],
                             "origin entries of sources an interrupted ingest was writing; the "
                             "next 'chinvex ingest' reads those sources again and settles them",
                             repairable=False)
    else:
        orphan_check.message = "every origin entry names an indexed document"
    if missing:
        missing_check.problem("error", [f"{d} <- {o}" for d, o in missing],
                              "documents whose writing source is not in the origin ledger; "
                              "repair records it", repairable=True)
    elif removing:
        missing_check.problem("warning", [f"{d} <- {o}" for d, o in removing],
                              "documents of sources an interrupted ingest was removing; the next "
                              "'chinvex ingest' finishes removing them", repairable=False)
    else:
        missing_check.message = "every document's source is in the origin ledger"
    return [orphan_check, missing_check]


def check_untracked_documents(conn: sqlite3.Connection, config: ContextConfig,
                              f: Findings) -> Check:
    """Documents written by a source that has no fingerprint: an ingest died between writing
    them and recording the source. If the source still exists the next ingest reads it again;
    if it is gone, nothing would ever remove them (they would be found by search forever)."""
    check = Check("untracked_documents")
    known = reads.fingerprinted_uris(conn, config.name)
    origins = reads.all_origin_uris(conn)
    untracked = sorted(o for o in origins - known if not o.startswith(cons.MEMORY_PREFIX))
    journaled = reads.pending_source_uris(conn)
    # Gone and journaled as pending: an interrupted run wrote them, and the next ingest removes
    # them (it settles every pending source); gone without a journal entry, nothing would.
    gone = [o for o in untracked if is_path(o) and not os.path.lexists(o.split("#", 1)[0])
            and o not in journaled]
    pending = [o for o in untracked if o not in gone]
    f.untracked_gone = gone
    if gone:
        return check.problem("error", gone + pending, f"{len(gone)} sources are gone but their "
                             "documents were never recorded as indexed, so ingest would never "
                             "remove them; repair removes them", repairable=True)
    if pending:
        return check.problem("warning", pending, "sources written by an interrupted ingest; "
                             "the next 'chinvex ingest' reads them again", repairable=False)
    check.message = "every document comes from a recorded source"
    return check
