"""How an ingest run reads one source: decide from its fingerprint, parse it (continuing from
the saved state when the change allows), prepare and hand each document to the writer, and
record the new fingerprint, or the failure without losing what was indexed before. A part of
chinvex.ingest.pipeline.IngestRun."""

from __future__ import annotations

import hashlib
import sqlite3
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

from chinvex.errors import StorageError
from chinvex.ingest import fingerprints as fps
from chinvex.ingest.adapters import adapter as load_adapter
from chinvex.ingest.origins import precedence_of
from chinvex.ingest.prepare import MAX_MESSAGE_CHARS, prepare
from chinvex.ingest.run_state import RunState, SourceWork
from chinvex.ingest.summary import SourceMessage
from chinvex.models import ConversationDoc
from chinvex.models.sources import ParseReport, SourceCandidate, SourceError, UnrecognisedSource
from chinvex.storage import origins as origin_rows
from chinvex.storage import pending as pending_rows
from chinvex.storage import tombstones as tombstone_rows
from chinvex.storage.writer_rows import stored_turns

HASH_LIMIT_BYTES = 8 * 1024 * 1024
"""Files up to this size get a content hash, so that a `touch` is not mistaken for a change."""

RESUMABLE_REASONS = {
    fps.SIZE_CHANGED, fps.CONTENT_CHANGED, fps.MTIME_CHANGED, fps.THREAD_UPDATED,
    fps.RETRY_AFTER_ERROR,
}
"""Reasons for which an adapter may continue from its saved state (append-aware re-ingest).
Not `chunker_upgraded` nor `embed_model_changed`: those change what every stored turn and chunk
must be (the chunker version includes the redaction switch, and a resumed read keeps the stored
turns as they were: switching redaction on would leave their secrets in the index), or need a
vector from the new model for every chunk; the whole source is parsed again, as for
`full_reingest`."""

CONTENT_SKIP_REASONS = {fps.SIZE_CHANGED, fps.CONTENT_CHANGED, fps.MTIME_CHANGED,
                        fps.RETRY_AFTER_ERROR, fps.THREAD_UPDATED, fps.NEW_FILE, fps.NEW_THREAD,
                        fps.INTERRUPTED}
"""Reasons for which a document whose parsed content is unchanged need not be rewritten (a
document row is committed with its chunks, and its vectors before them, so a stored content
hash equal to the parsed one means the document is complete — also after a crash)."""


def _sha256_file(path: Path) -> str | None:
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    except OSError:
        return None
    return digest.hexdigest()


def _doc_hash(doc: Any, tag: str) -> str:
    return hashlib.sha256(doc.model_dump_json().encode("utf-8", "surrogatepass") + tag.encode()).hexdigest()


class _NeedFullParse(Exception):
    """The stored turns do not match the adapter's resume point: parse the whole source."""


class _WriteFailed(Exception):
    """Writing the index failed while an adapter was producing documents: the writer's error
    (a full disk, an embedder that stopped working, possibly for a batch of other sources still
    in flight), not the adapter's, so it must stop the run rather than fail this source."""

    def __init__(self, error: BaseException):
        super().__init__(str(error))
        self.error = error


class SourceIngester:
    """Reads sources for a run: uses the run state's writer, ledger, fingerprints, tombstones
    and counters, and reports through it."""

    def __init__(self, state: RunState):
        self.state = state

    def process(self, item: SourceWork) -> None:
        cand = item.candidate
        fp = self.state.known.get(cand.source_uri)
        versions = self.state.versions(item.adapter)
        decision = fps.decide(fp, cand, versions, full=self.state.options.full,
                              interrupted=cand.source_uri in self.state.pending)
        content_sha = None
        if decision.verify_content and cand.path is not None:
            content_sha = _sha256_file(cand.path)
            decision = fps.verified(decision, fp, content_sha)
        if decision.refresh_only and fp is not None:
            self.state.out.source_done(replace(
                fp, mtime_unix=cand.mtime_unix, mtime_ns=cand.mtime_ns,
                last_ingested_at_unix=fps.now_unix()))
            self.state.summary.sources.refreshed += 1
            self.state.decide_log(cand.source_uri, item.adapter, "refreshed", decision.reason,
                                  "content unchanged")
            return
        if not decision.ingest:
            self.state.summary.sources.unchanged += 1
            self.state.decide_log(cand.source_uri, item.adapter, "skipped", decision.reason)
            return
        self.state.reasons[decision.reason] += 1
        self.ingest(item, fp, decision.reason, versions, content_sha)

    def ingest(self, item: SourceWork, fp: fps.Fingerprint | None, reason: str,
               versions: fps.Versions, content_sha: str | None) -> None:
        cand = item.candidate
        adapter = load_adapter(item.adapter)
        resume_state = fp.state if (fp is not None and reason in RESUMABLE_REASONS
                                    and fp.parser_version == versions.parser_version) else None
        produced: list[str] = []
        report = ParseReport()
        # Before the first ledger entry or document: a crash from here on leaves the source
        # pending, and the next run reads it again or removes what it wrote.
        pending_rows.mark_pending(self.state.conn, cand.source_uri, cand.root, item.adapter)
        try:
            try:
                report = ParseReport()
                produced = self._consume(adapter, cand, report, resume_state, reason)
            except _NeedFullParse:
                report = ParseReport()
                produced = self._consume(adapter, cand, report, None, reason)
        except _WriteFailed as failed:
            raise failed.error from None
        except (sqlite3.Error, StorageError):
            # The index could not be written (a full disk, a file-size limit, a damaged file):
            # not this source's fault, and no later source would fare better. The run stops;
            # the source stays pending, so the next run reads it again.
            raise
        except UnrecognisedSource as exc:
            self._source_unrecognised(cand, item.adapter, fp, versions, str(exc))
            return
        except SourceError as exc:
            self._source_failed(cand, item.adapter, fp, versions, str(exc))
            return
        except OSError as exc:
            self._source_failed(cand, item.adapter, fp, versions,
                                f"{cand.source_uri}: {exc.strerror or exc}")
            return
        except Exception as exc:
            self._source_failed(cand, item.adapter, fp, versions,
                                f"{cand.source_uri}: internal error in adapter {item.adapter}: "
                                f"{type(exc).__name__}: {exc}")
            return

        produced_set = set(produced)
        gone = [d for d in self.state.ledger.docs_of(cand.source_uri) if d not in produced_set]
        if gone:
            detached = self.state.ledger.detach(cand.source_uri, gone)
            self.state.out.delete_docs(detached.delete_docs)
            self.state.reingest |= detached.reingest_origins
        for warning in report.warnings:
            self.state.summary.warnings.append(SourceMessage(source_uri=cand.source_uri,
                                                       adapter=item.adapter, message=warning))
        self.state.adapter_counts.setdefault(item.adapter, Counter()).update(report.counts)
        if content_sha is None and report.state is None and cand.path is not None \
                and (cand.size_bytes or 0) <= HASH_LIMIT_BYTES:
            content_sha = _sha256_file(cand.path)
        # A fingerprint names its document only when the source has exactly one; a source with
        # none or several (an export) names none, so it never keeps naming a document it lost.
        doc_id = produced[0] if len(produced) == 1 else ""
        self.state.out.source_done(fps.Fingerprint(
            source_uri=cand.source_uri, context_name=self.state.config.name,
            source_type=cand.source_type, doc_id=doc_id or "", size_bytes=cand.size_bytes,
            mtime_unix=cand.mtime_unix, content_sha256=content_sha,
            thread_updated_at=cand.thread_updated_at,
            last_turn_id=(report.state or {}).get("last_turn_id", cand.last_turn_id),
            parser_version=versions.parser_version, chunker_version=versions.chunker_version,
            embedded_model=versions.embedded_model, last_ingested_at_unix=fps.now_unix(),
            last_status="ok", last_error=None, source_root=cand.root, adapter=item.adapter,
            state=self.state.redactor.value(report.state), mtime_ns=cand.mtime_ns,
        ))
        self.state.summary.sources.indexed += 1
        self.state.decide_log(cand.source_uri, item.adapter, "ingested", reason,
                              f"{len(produced)} document(s)" if len(produced) != 1 else None)

    def _consume(self, adapter: Any, cand: SourceCandidate, report: ParseReport,
                 resume_state: dict[str, Any] | None, reason: str) -> list[str]:
        produced: list[str] = []
        tag = f"{self.state.chunker_version}|{adapter.parser_version}"
        may_skip = reason in CONTENT_SKIP_REASONS
        for doc in adapter.parse(cand, report, resume_state):
            append_from = report.append_from if isinstance(doc, ConversationDoc) else None
            prior = None
            if append_from is not None:
                prior = stored_turns(self.state.conn, doc.doc_id)
                if len(prior) < append_from:
                    raise _NeedFullParse()
                report.counts["sessions_resumed"] += 1  # only the turns after append_from were read
            # Hashed once, here: the tombstone check, the skip check and the stored row use it.
            # A resumed conversation's row stores the hash of the whole merged conversation,
            # which `prepare` computes (the parsed document holds only the new turns).
            content_hash = _doc_hash(doc, tag) if append_from is None else None
            if doc.doc_id in self.state.tombstones:
                content_hash = content_hash or _doc_hash(doc, tag)
                if self.state.tombstones[doc.doc_id] == content_hash:
                    report.counts["documents_removed_by_user"] += 1  # `chinvex rm`: stays removed
                    continue
                # Its content changed since it was removed: it is a new document now.
                tombstone_rows.lift(self.state.conn, doc.doc_id)
                del self.state.tombstones[doc.doc_id]
            produced.append(doc.doc_id)
            if not self.state.ledger.record(doc.doc_id, cand.source_uri, precedence_of(adapter, doc)):
                # Another source holds a better copy of this document (e.g. a newer export).
                report.counts["documents_shadowed"] += 1
                continue
            if append_from is None and may_skip \
                    and origin_rows.written_from(self.state.conn, doc.doc_id) == (cand.source_uri, content_hash):
                continue
            prepared = prepare(doc, origin_uri=cand.source_uri, redact=self.state.redact,
                               stored_turns=prior, append_from=append_from,
                               content_hash=content_hash if append_from is None else None)
            self.state.redactions.update(prepared.redactions)
            if prepared.messages_cut:
                report.counts["messages_cut"] += prepared.messages_cut
                report.warnings.append(f"{doc.title or doc.doc_id}: {prepared.messages_cut} message(s) over "
                                       f"{MAX_MESSAGE_CHARS // 1024} KB indexed up to that size only")
            try:
                self.state.out.add(prepared)
            except Exception as exc:
                raise _WriteFailed(exc) from exc
        return produced

    def _source_unrecognised(self, cand: SourceCandidate, adapter: str,
                             fp: fps.Fingerprint | None, versions: fps.Versions,
                             message: str) -> None:
        """A file that is not a session of its root's kind: reported once, then remembered by
        its fingerprint (status `skipped`) so that later runs pass over it silently until it
        changes. What it indexed before, if it ever was a session, is kept."""
        message = self.state.redactor.text(message)
        self.state.summary.sources.skipped_unrecognised += 1
        self.state.summary.unrecognised.append(SourceMessage(source_uri=cand.source_uri, adapter=adapter,
                                                       message=message))
        self.state.decide_log(cand.source_uri, adapter, "excluded", "not_a_session", message)
        self._record_status(cand, adapter, fp, versions, "skipped", message)

    def _source_failed(self, cand: SourceCandidate, adapter: str, fp: fps.Fingerprint | None,
                       versions: fps.Versions, message: str) -> None:
        message = self.state.redactor.text(message)
        self.state.error(cand.source_uri, adapter, message)
        self._record_status(cand, adapter, fp, versions, "error", message)

    def _record_status(self, cand: SourceCandidate, adapter: str, fp: fps.Fingerprint | None,
                       versions: fps.Versions, status: str, message: str) -> None:
        if fp is not None:
            failed = replace(fp, last_status=status, last_error=message,
                             size_bytes=cand.size_bytes if status == "skipped" else fp.size_bytes,
                             mtime_unix=cand.mtime_unix if status == "skipped" else fp.mtime_unix,
                             mtime_ns=cand.mtime_ns if status == "skipped" else fp.mtime_ns,
                             parser_version=(versions.parser_version if status == "skipped"
                                             else fp.parser_version),
                             last_ingested_at_unix=fps.now_unix())
        else:
            failed = fps.Fingerprint(
                source_uri=cand.source_uri, context_name=self.state.config.name,
                source_type=cand.source_type, doc_id="", size_bytes=cand.size_bytes,
                mtime_unix=cand.mtime_unix, content_sha256=None,
                thread_updated_at=cand.thread_updated_at, last_turn_id=None,
                parser_version=versions.parser_version, chunker_version=versions.chunker_version,
                embedded_model=versions.embedded_model, last_ingested_at_unix=fps.now_unix(),
                last_status=status, last_error=message, source_root=cand.root, adapter=adapter,
                state=None, mtime_ns=cand.mtime_ns,
            )
        self.state.out.source_done(failed)
