"""The `cx_appserver` adapter: Codex sessions through `codex app-server`, with the rollout files
as the reader of legacy threads and the fallback for everything the server cannot give.

Why a composite: the app-server is the best *enumerator* (it knows every thread, its history
mode and its `updatedAt`, so unchanged threads are skipped without reading) and the only reader
of *paginated* threads that sees their SQLite projection, but codex 0.169.0's `thread/read` of
a *legacy* thread drops every tool call and the assistant text that exists only as
response_item, which the rollout parser keeps.

Which reader a root gets (`choose_reader`, context.json `codex_appserver.mode`): `off` and
roots that are no CODEX_HOME read the rollout files only; `on` uses the server; `auto` (the
default) uses it when its executable (`command[0]`, or CHINVEX_CODEX_BIN) exists, and reads the
rollout files without a word otherwise. With the server, per CODEX_HOME:

1. the server lists the threads (one child process per CODEX_HOME and run, started lazily);
2. a listed thread whose rollout file is under the root is a candidate *for that file*: legacy
   threads are read by the rollout parser (`legacy_read = "rollout"`, the default), paginated
   ones (and, with `legacy_read = "appserver"`, legacy ones) through the server, which falls back
   to the file when it gives no turns or fails (one warning and a count per thread);
3. a listed thread without a rollout file under the root is the candidate
   `codex://thread/<id>`, fingerprinted by `updatedAt` (only the server can give it);
4. every rollout file under the root that no listed thread covers (CRLF and era-B files, files
   the server skipped, archived or sub-agent files not listed) is a candidate read by the rollout
   parser, so the index never depends on what the server can list.

When the server cannot start or list, the root is read exactly as without it, with one warning.

A thread's identity does not depend on its reader: every candidate is this adapter's (the
rollout parser reads through it), a thread with a file is keyed by that file's path and
fingerprinted by its stat whichever reader reads it, and its doc id comes from the thread id.
So turning the server on or off, or installing Codex under `auto`, reads nothing again that
did not change (the rollout file is Codex's source of truth; the server's SQLite projection is
derived from it). `precedence_key` makes a real server read win over a rollout copy of the
same thread elsewhere, and a fallback read compete like any rollout copy.

Run-level output (the warning above, which reader each root got and why, which path each thread
took, listing counts) cannot travel through `ParseReport`, so the adapter keeps it per run — a
run is identified by the `AdapterOptions` object the pipeline hands to every `enumerate` of one
run — and returns it from
`end_run(options)`, which also stops the run's app-server children. Children of a run whose
`end_run` is never called are stopped when its options object is collected, or at exit.
"""

from __future__ import annotations

import logging
import math
import os
import threading
import weakref
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from chinvex.files.excludes import exclude_spec
from chinvex.files.walk import inside as _inside
from chinvex.models import ConversationDoc
from chinvex.models.sources import (
    AdapterDefaults,
    AdapterOptions,
    ParseReport,
    SkippedSource,
    SourceCandidate,
    SourceError,
)
from chinvex_adapters.cx_sessions_jsonl.adapter import CodexRolloutAdapter
from chinvex_adapters.cx_sessions_jsonl.discover import find_rollout_for_thread

from .errors import (
    AppServerClientError,
    AppServerDied,
    AppServerTimeout,
    AppServerUnavailable,
)
from .normalize import SOURCE, SOURCE_TYPE, source_uri_for
from .reader_choice import (
    PATH_APPSERVER,
    PATH_FALLBACK,
    PATH_ROLLOUT,
    READER_APPSERVER,
    READER_JSONL,
    ROLLOUT_ADAPTER,
    AppServerSettings,
    ReaderChoice,
    choose_reader,
    codex_home_for,
)
from .run_state import (
    ClientFactoryBuilder,
    HomeSession,
    RunState,
    close_run,
    default_client_factory,
    excluded_under_root,
    one_line,
    real_path,
)
from .source import AppServerSource, AppServerSourceOptions
from .threads import ThreadSummary, resolve_rollout_path

log = logging.getLogger(__name__)



def _server_reads(candidate: SourceCandidate) -> bool:
    """A candidate `parse` reads through the server (else the rollout parser reads its file)."""
    return candidate.extra.get("reader") == PATH_APPSERVER or candidate.source_uri.startswith("codex://thread/")



class CodexAppServerAdapter(AdapterDefaults):
    name = SOURCE
    source_type = SOURCE_TYPE
    parser_version = f"cx_appserver_v2+{CodexRolloutAdapter.parser_version}"  # v2: fileChange edits
    """Both readers' versions: every Codex source is this adapter's, whichever reader reads it,
    so a new version of either must read the sources again."""
    include_key = "codex_session_roots"

    def __init__(self, rollout: CodexRolloutAdapter | None = None,
                 client_factory: ClientFactoryBuilder = default_client_factory):
        self.rollout = rollout or CodexRolloutAdapter()
        self._client_factory = client_factory
        self._runs: dict[int, RunState] = {}
        self._finalizers: dict[int, weakref.finalize] = {}
        self._lock = threading.Lock()

    # -- run bookkeeping ----------------------------------------------------------------------

    def _run(self, options: AdapterOptions) -> tuple[int, RunState]:
        key = id(options)
        with self._lock:
            state = self._runs.get(key)
            if state is None:
                state = self._runs[key] = RunState()
                # Stops the children when the run's options object goes away (or at exit) if
                # the pipeline never calls end_run.
                self._finalizers[key] = weakref.finalize(options, close_run, self._runs,
                                                         self._finalizers, key)
            return key, state

    def end_run(self, options: AdapterOptions) -> dict[str, Any] | None:
        """Stop this run's app-server children and hand over what only the run can say:
        `{"warnings": [(source_uri, message)], "errors": [(source_uri, message)], "counts": {...},
        "paths": {source_uri: {...}}, "readers": {root: {"reader", "why", "mode", ...}}}`."""
        key = id(options)
        with self._lock:
            state = self._runs.pop(key, None)
            finalizer = self._finalizers.pop(key, None)
        if finalizer is not None:
            finalizer.detach()
        if state is None:
            return None
        state.close()
        return state.report()

    def _session(self, state: RunState, home: Path, settings: AppServerSettings) -> HomeSession:
        key = real_path(home)
        with state.lock:
            session = state.sessions.get(key)
            if session is None:
                source = AppServerSource(self._client_factory(settings, home), AppServerSourceOptions())
                session = state.sessions[key] = HomeSession(home=str(home), source=source)
            return session

    # -- enumerate -------------------------------------------------------------------------------

    def enumerate(self, root: Path, options: AdapterOptions) -> Iterator[SourceCandidate | SkippedSource]:
        root_abs = Path(os.path.abspath(os.path.expanduser(os.fspath(root))))
        if not root_abs.exists():
            raise SourceError(f"{root_abs}: Codex sessions folder not found")
        settings = AppServerSettings.from_options(options)
        key, state = self._run(options)
        home = codex_home_for(root_abs)
        choice = choose_reader(settings, home)

        listed: list[ThreadSummary] | None = None
        if choice.reader == READER_APPSERVER:
            assert home is not None
            session = self._session(state, home, settings)
            listed, problem = self._list(session, settings)
            if listed is None:
                choice = ReaderChoice(READER_JSONL, f"codex app-server unavailable ({problem})")
                state.warnings.append((str(root_abs), f"{choice.why}; reading rollout files directly"))
                state.counts["roots_appserver_unavailable"] += 1
                session.close()
        with state.lock:
            state.readers[str(root_abs)] = {"reader": choice.reader, "why": choice.why, "mode": settings.mode,
                                            "codex_home": str(home) if home is not None else None}

        # Listing first: the server may back-fill its own state before files are walked.
        files = list(self.rollout.enumerate(root_abs, options))
        if listed is None:
            for item in files:
                if isinstance(item, SourceCandidate):
                    state.counts["threads_rollout"] += 1
                    state.note(item.source_uri, item.thread_id, PATH_ROLLOUT, choice.why)
                    item = self._owned(item, PATH_ROLLOUT)
                yield item
            return
        assert home is not None
        yield from self._route(root_abs, home, key, state, settings, listed, files, options.excludes)

    def _owned(self, item: SourceCandidate, reader: str, **extra: Any) -> SourceCandidate:
        """A rollout file's candidate as this adapter's, whichever reader will read it: the
        fingerprint's adapter and parser version must not change when the reader does, or a
        switch would read every thread again."""
        return replace(item, adapter=self.name, extra={**item.extra, **extra, "reader": reader})

    def _list(self, session: HomeSession, settings: AppServerSettings) -> tuple[list[ThreadSummary] | None, str]:
        """The threads the server lists, or None and why not. A server that dies or stalls
        while listing gets one more try (the source restarts it); one that cannot start does
        not (it would fail the same way)."""
        if session.unavailable is not None or session.source is None:
            return None, session.unavailable or "stopped"
        problem = ""
        for attempt in range(2):
            try:
                threads = session.source.list_threads(include_subagents=settings.config.include_subagents,
                                                      include_archived=settings.config.include_archived)
            except (AppServerTimeout, AppServerUnavailable) as exc:
                problem = one_line(exc)
                if attempt == 0 and isinstance(exc, (AppServerTimeout, AppServerDied)):
                    continue
                break
            except AppServerClientError as exc:
                problem = f"thread/list failed: {one_line(exc)}"
                break
            except Exception as exc:
                log.exception("listing Codex threads in %s", session.home)
                problem = f"internal error while listing: {type(exc).__name__}: {one_line(exc)}"
                break
            session.summaries.update({t.thread_id: t for t in threads})
            return threads, ""
        session.unavailable = problem
        return None, problem

    def _route(self, root: Path, home: Path, key: int, state: RunState, settings: AppServerSettings,
               listed: list[ThreadSummary], files: list[SourceCandidate | SkippedSource],
               excludes: list[str]) -> Iterator[SourceCandidate | SkippedSource]:
        root_real = real_path(root)
        spec = exclude_spec(excludes, root_real)
        session = self._session(state, home, settings)
        for problem in (session.source.list_errors if session.source else []):
            state.warnings.append((str(root), f"codex app-server listing: {problem}"))
        if session.source is not None:
            for name, count in session.source.list_counts.items():
                if count:
                    state.counts[f"listing_{name}"] += count

        by_real: dict[str, SourceCandidate] = {}
        skipped_real: set[str] = set()
        for item in files:
            if isinstance(item, SourceCandidate) and item.path is not None:
                by_real[real_path(item.path)] = item
            elif isinstance(item, SkippedSource):
                skipped_real.add(real_path(item.source_uri))

        covered: set[str] = set()
        for thread in listed:
            state.counts["threads_listed"] += 1
            file = thread.rollout_path
            if file is None:
                found = find_rollout_for_thread([home], thread.thread_id)
                file = str(found) if found is not None else None
            real = real_path(file) if file else None
            if real is not None and not _inside(real, root_real):
                state.counts["threads_outside_root"] += 1  # e.g. archived threads of a sessions/ root
                continue
            if real is not None and (real in skipped_real or excluded_under_root(real, root_real, spec)):
                # An excluded or skipped file (or one in an excluded folder, which the walk
                # does not enter): honour it, as the rollout files alone would.
                state.counts["threads_excluded"] += 1
                continue
            jsonl = by_real.get(real) if real is not None else None
            if jsonl is not None:
                if real in covered:
                    continue
                covered.add(real)  # type: ignore[arg-type]
                yield self._listed_file(jsonl, thread, key, home, state, settings)
                continue
            state.counts["threads_appserver"] += 1
            candidate = self._thread_candidate(root, home, key, thread, file)
            state.note(candidate.source_uri, thread.thread_id, PATH_APPSERVER,
                       f"{thread.history_mode} thread without a rollout file under the root",
                       history_mode=thread.history_mode, read=False)
            yield candidate

        for item in files:
            if isinstance(item, SourceCandidate) and item.path is not None and real_path(item.path) in covered:
                continue
            if isinstance(item, SourceCandidate):
                state.counts["rollout_files_not_listed"] += 1
                state.note(item.source_uri, item.thread_id, PATH_ROLLOUT,
                           "rollout file not listed by the app-server")
                item = self._owned(item, PATH_ROLLOUT)
            yield item

    def _thread_candidate(self, root: Path, home: Path, key: int, thread: ThreadSummary,
                          file: str | None) -> SourceCandidate:
        """A listed thread without a rollout file under the root: only the server can read it,
        so it is keyed by its thread URI and fingerprinted by `updatedAt`."""
        return SourceCandidate(
            source_uri=source_uri_for(thread.thread_id),
            source_type=SOURCE_TYPE,
            adapter=self.name,
            root=str(root),
            path=None,  # fingerprinted by updatedAt: there is no file to stat
            thread_id=thread.thread_id,
            thread_updated_at=thread.updated_at,
            # Only updatedAt, although the seed spec (§5) pairs it with the last turn id:
            # thread/list gives no cheap last turn id in 0.169.0. `Thread.turns` is always
            # empty in list responses (the schema fills it only for thread/read
            # includeTurns, resume and fork), and the one turn id the response carries,
            # `readStates[id].firstUnread.turnId`, is the *first unread* turn: it moves when
            # any client marks the thread read and is null when nothing is unread (observed:
            # a fresh paginated thread names its *first* turn, legacy threads give null and
            # `revision: "initial:<id>"`). The real last turn would cost one
            # thread/turns/list call (desc, limit 1) per thread on every run — the reading
            # this fingerprint exists to skip. updatedAt moves with every turn written; the
            # last turn id that was read is kept in the parse state (`last_turn_id`).
            last_turn_id=None,
            extra={"run": key, "reader": PATH_APPSERVER, "codex_home": str(home),
                   "history_mode": thread.history_mode, "rollout_path": file,
                   "source_kind": thread.source_kind, "archived": thread.archived},
        )

    def _listed_file(self, jsonl: SourceCandidate, thread: ThreadSummary, key: int, home: Path,
                     state: RunState, settings: AppServerSettings) -> SourceCandidate:
        """The candidate of a listed thread that has its rollout file under the root: keyed and
        fingerprinted by that file (so the thread is the same source without the server), read
        by the rollout parser (legacy threads, by default) or through the server."""
        extra = {"listed_by_appserver": True, "run": key, "codex_home": str(home),
                 "history_mode": thread.history_mode, "source_kind": thread.source_kind,
                 "archived": thread.archived}
        if thread.history_mode == "legacy" and settings.legacy_read == "rollout":
            state.counts["threads_rollout_legacy"] += 1
            state.note(jsonl.source_uri, thread.thread_id, PATH_ROLLOUT,
                       "legacy thread: its rollout file holds the tool calls the server's replay drops")
            reader = PATH_ROLLOUT
        else:
            state.counts["threads_appserver"] += 1
            why = ("paginated thread" if thread.history_mode != "legacy"
                   else "legacy thread (codex_appserver.legacy_read = appserver)")
            state.note(jsonl.source_uri, thread.thread_id, PATH_APPSERVER, why,
                       history_mode=thread.history_mode, read=False)
            reader = PATH_APPSERVER
        # updatedAt is kept with the fingerprint for information only: a candidate with a path
        # is decided by its stat, which is what the rollout parser alone would see.
        return replace(self._owned(jsonl, reader, **extra), thread_id=thread.thread_id,
                       thread_updated_at=thread.updated_at)

    # -- parse -------------------------------------------------------------------------------

    def parse(self, candidate: SourceCandidate, report: ParseReport,
              previous_state: dict[str, Any] | None) -> Iterator[ConversationDoc]:
        """A candidate the server reads: the server's copy of the thread, or its rollout file's
        when the server has no turns for it or fails (saying so). Every other candidate is a
        rollout file, read by the rollout parser (append-aware from `previous_state`)."""
        if not _server_reads(candidate):
            # A state the server's read left ({"via": ...}) is no resume point for the parser.
            resumable = previous_state if previous_state and "via" not in previous_state else None
            yield from self.rollout.parse(candidate, report, resumable)
            return
        thread_id = candidate.thread_id or candidate.source_uri.rsplit("/", 1)[-1]
        state = self._runs.get(candidate.extra.get("run", -1))
        home = candidate.extra.get("codex_home")
        session = state.sessions.get(real_path(home)) if state is not None and home else None

        reason, detail = "no_session", "no app-server session for this run"
        fallback = str(candidate.path) if candidate.path is not None else candidate.extra.get("rollout_path")
        if session is not None and session.gave_up:
            reason, detail = "appserver_gave_up", session.gave_up
        elif session is not None and session.source is not None:
            summary = session.summaries.get(thread_id, thread_id)
            try:
                outcome = session.source.read_thread_outcome(summary)
            except (AppServerTimeout, AppServerDied) as exc:
                # This thread's read was lost with the child; the source starts a fresh one
                # for the next thread (within its restart budget).
                reason, detail = "appserver_failed", one_line(exc)
            except AppServerUnavailable as exc:
                # No child could be started (restart budget spent, binary gone): stop trying,
                # and say so as an error of this CODEX_HOME's server, once.
                reason, detail = "appserver_gave_up", one_line(exc)
                session.gave_up = detail
                if state is not None:
                    with state.lock:
                        state.errors.append((session.home, (
                            f"codex app-server for {session.home} stopped answering mid-ingest ({detail}); "
                            "the remaining threads of this run were read from their rollout files")))
                    state.stopped(session.home, detail)
            except AppServerClientError as exc:
                reason, detail = "appserver_error", one_line(exc)
            else:
                report.counts.update(outcome.counts)
                report.warnings.extend(outcome.warnings)
                if outcome.doc is not None and outcome.doc.turns:
                    doc = outcome.doc
                    doc.metadata["read_via"] = PATH_APPSERVER
                    if candidate.path is not None:
                        # The thread's durable address is its file, whichever reader read it.
                        doc.source_uri = candidate.source_uri
                    last = doc.turns[-1].meta.get("codex_turn_id")
                    report.state = {"via": PATH_APPSERVER, "last_turn_id": last}
                    report.counts["threads_read_appserver"] += 1
                    if state is not None:
                        entry = state.paths.setdefault(candidate.source_uri, {
                            "thread_id": thread_id, "path": PATH_APPSERVER, "reason": "listed"})
                        entry["read"] = True
                    yield doc
                    return
                reason = outcome.reason or "no_turns"
                detail = outcome.detail or "the server returned no turns"
                if candidate.path is None:
                    fallback = outcome.fallback_path or fallback
        yield from self._fallback(candidate, thread_id, state, home, fallback, reason, detail, report)

    def _fallback(self, candidate: SourceCandidate, thread_id: str, state: RunState | None,
                  home: str | None, fallback: str | None, reason: str, detail: str,
                  report: ParseReport) -> Iterator[ConversationDoc]:
        path = self._rollout_file(fallback, home, thread_id)
        if path is None:
            raise SourceError(f"codex thread {thread_id}: {reason}: {detail}; no rollout file to read instead")
        report.warnings.append(f"codex thread {thread_id}: {reason} ({detail}); indexed from its rollout file {path}")
        report.counts["threads_fallback"] += 1
        report.counts[f"fallback_{reason}"] += 1
        sub = SourceCandidate(source_uri=str(path), source_type=SOURCE_TYPE, adapter=ROLLOUT_ADAPTER,
                              root=candidate.root, path=path, thread_id=thread_id)
        try:
            docs = list(self.rollout.parse(sub, report, None))
        except SourceError as exc:
            raise SourceError(f"codex thread {thread_id}: {reason} ({detail}), and its rollout file "
                              f"failed too: {one_line(exc)}") from None
        rollout_state = report.state or {}
        report.state = {"via": PATH_FALLBACK, "reason": reason, "rollout_path": str(path),
                        "last_turn_id": rollout_state.get("last_turn_id")}
        report.append_from = None  # the stored turns may come from another reader: never splice
        if state is not None:
            state.note(candidate.source_uri, thread_id, PATH_FALLBACK, f"{reason}: {detail}",
                       history_mode=candidate.extra.get("history_mode"),
                       file=None if candidate.path is not None else str(path), read=True)
        for doc in docs:
            if doc.thread_id != thread_id:
                report.warnings.append(f"codex thread {thread_id}: its rollout file {path} holds thread "
                                       f"{doc.thread_id}")
            doc.metadata["read_via"] = PATH_FALLBACK
            doc.metadata["fallback_reason"] = reason
            yield doc

    @staticmethod
    def _rollout_file(fallback: str | None, home: str | None, thread_id: str) -> Path | None:
        resolved = resolve_rollout_path(fallback) if fallback else None
        if resolved is not None:
            return Path(resolved)
        if home:
            found = find_rollout_for_thread([Path(home)], thread_id)
            if found is not None:
                return found
        return None

    # -- precedence --------------------------------------------------------------------------

    @staticmethod
    def precedence_key(doc: Any) -> tuple[Any, ...]:
        """A thread the server really read (with turns) beats any rollout copy of it; anything
        else (a fallback read) ranks like the rollout adapter's copies: by updated_at, then by
        number of turns (the ledger's default)."""
        updated = doc.updated_at.timestamp() if getattr(doc, "updated_at", None) else -math.inf
        turns = len(doc.turns) if isinstance(doc, ConversationDoc) else 0
        if isinstance(doc, ConversationDoc) and doc.source == SOURCE and turns:
            return (math.inf, updated, turns)
        return (updated, turns)
