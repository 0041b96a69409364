"""chinvex as a library: open a context and search, answer, pack, read, ingest and blame it
from a script or a notebook, with the same engine and results as the CLI.

    import chinvex

    with chinvex.open("myproject") as ctx:          # or chinvex.open(): CHINVEX_CONTEXT, else
        hits = ctx.search("retry backoff", k=5)      # the context holding the current folder
        print(hits.results[0].source_uri)

Results are the pydantic models the CLI prints with `--json` (SearchResponse, AnswerResponse,
PackResponse, IngestSummary) or the JSON-able dicts of `get`, `blame`, `timeline` and `stats`.
Errors are `chinvex.errors.ChinvexError` subclasses with a one-line `message`.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

if TYPE_CHECKING:
    from chinvex.ingest.summary import IngestSummary
    from chinvex.models import (
        AnswerResponse,
        ContextConfig,
        PackResponse,
        SearchResponse,
    )
    from chinvex.retrieval.search import SearchRequest, Searcher

_ADVICE = "pass a context name to chinvex.open() or set CHINVEX_CONTEXT"


class Context:
    """One context: its configuration and one warm searcher shared by its calls. Close it (or use
    it as a context manager) to release the vector store."""

    def __init__(self, config: ContextConfig):
        self.config = config
        self._engine: Engine | None = None

    @property
    def name(self) -> str:
        return self.config.name

    def __repr__(self) -> str:
        return f"<chinvex.Context {self.name!r}>"

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._engine is not None:
            self._engine.close()
            self._engine = None

    def _search_engine(self) -> Searcher:
        if self._engine is None:
            self._engine = Engine()
        return self._engine.searcher

    def search(self, query: str, *, k: int = 8, source_types: Sequence[str] | None = None,
               path: str | None = None, since: str | None = None, until: str | None = None,
               mode: str = "hybrid", filter: str | None = None, per_doc: int | None = None,
               explain: bool = False) -> SearchResponse:
        """Hybrid search, as `chinvex search` (dates as `YYYY-MM-DD` or ISO times; `filter` in the
        filter language of `--filter`)."""
        from chinvex.errors import UsageError
        from chinvex.retrieval.filters import DATE_FORMS, date_bound
        from chinvex.retrieval.search import SearchRequest

        if not query.strip():
            raise UsageError("query is empty")
        if mode not in ("hybrid", "fts", "vector"):
            raise UsageError(f"mode {mode!r}: expected hybrid, fts or vector")
        try:
            start = date_bound(since, end_of_day=False) if since else None
            end = date_bound(until, end_of_day=True) if until else None
        except ValueError:
            raise UsageError(f"since/until: not a date; use {DATE_FORMS}") from None
        request = SearchRequest(query=query, k=k, source_types=list(source_types) if source_types else None,
                                path_glob=path, since=start, until=end, explain=explain, mode=mode,
                                filter_expression=filter, per_doc=per_doc)  # type: ignore[arg-type]
        return self._search_engine().search([self.config], request)

    def answer(self, query: str, *, k: int = 8, grounded: bool = True, source_types: Sequence[str] | None = None,
               generator: str | None = None, model: str | None = None, filter: str | None = None,
               min_confidence: float | None = None) -> AnswerResponse:
        """A short answer with citations and its `confidence`, or a refusal when the sources do
        not say (`grounded`) or the confidence is below `min_confidence` (default: context.json
        answer.min_confidence, else the built-in default)."""
        from chinvex.answer.service import answer

        return answer(self.config, query, k=k, grounded=grounded, source_types=list(source_types or []) or None,
                      generator=generator, model=model, searcher=self._search_engine(), filter_expression=filter,
                      min_confidence=min_confidence)

    def pack(self, task: str, *, budget_tokens: int = 2000, diversity: int | None = None,
             source_types: Sequence[str] | None = None, filter: str | None = None) -> PackResponse:
        """Ranked chunks packed into a token budget, each with its provenance."""
        from chinvex.pack.service import build_pack

        return build_pack([self.config], task, budget=budget_tokens, diversity=diversity,
                          source_types=list(source_types) if source_types else None,
                          searcher=self._search_engine(), filter_expression=filter)

    def _connect(self, *, readonly: bool = False) -> sqlite3.Connection:
        return open_index(self.config, readonly=readonly, advice="call ingest() first")

    def get(self, identifier: str) -> dict[str, Any] | None:
        """A conversation by its session or thread id (or a unique prefix of 8+ characters), with
        its turns; else a chunk by id; None when neither is in this context."""
        from chinvex.storage.chunk_reads import fetch_chunks
        from chinvex.storage.threads import conversation, find_thread

        conn = self._connect(readonly=True)
        try:
            row = find_thread(conn, identifier)
            if row is not None:
                return conversation(conn, row, self.name)
            chunks = fetch_chunks(conn, [identifier], self.name)
            return {"kind": "chunk", "chunk": chunks[0]} if chunks else None
        finally:
            conn.close()

    def ingest(self, *, full: bool = False, wait: bool = False, yes: bool = False) -> IngestSummary:
        """Index what changed in the context's sources (`full`: everything again). Vanished
        sources holding more than 5 % of the documents are removed only with `yes`; otherwise
        they stay and the summary's errors say so."""
        from chinvex.ingest.pipeline import IngestOptions, run_ingest

        summary = run_ingest(self.config, IngestOptions(full=full, wait=wait, yes=yes))
        self.close()  # the next search sees the new index
        return summary

    def blame(self, path: str | os.PathLike[str], lines: int | tuple[int, int] | None = None) -> dict[str, Any]:
        """The commit and the agent sessions behind each line of a file (`chinvex blame --json`)."""
        from chinvex.blame.service import Target, blame_in
        from chinvex.errors import UsageError

        first, last = (lines, lines) if isinstance(lines, int) else (lines or (None, None))
        if first is not None and (first < 1 or last is None or last < first):
            raise UsageError("lines must be N or (FIRST, LAST) with 1 <= FIRST <= LAST")
        conn = self._connect()
        try:
            return blame_in(conn, self.config, Target(Path(path).expanduser(), first, last))
        finally:
            conn.close()

    def timeline(self, since: str | None = "7d", until: str | None = None,
                 project: str | os.PathLike[str] | None = None, agent: str | None = None) -> dict[str, Any]:
        """Sessions and commits day by day (`chinvex timeline --json`)."""
        from chinvex.blame.timeline import parse_when, timeline

        conn = self._connect()
        try:
            return timeline(conn, context=self.name, repos=list(self.config.includes.repos),
                            since=parse_when(since, "since"), until=parse_when(until, "until"),
                            project=Path(project).expanduser().resolve() if project else None,
                            agent=agent.lower() if agent else None)
        finally:
            conn.close()

    def stats(self) -> dict[str, Any]:
        """Documents and chunks by source type, conversations by agent, the last run, sizes."""
        from chinvex.ingest.stats import collect_stats

        return collect_stats(self.config)


def has_index(config: ContextConfig) -> bool:
    """Whether the context has been ingested (its hybrid.db exists)."""
    return Path(config.index.sqlite_path).exists()


def open_index(config: ContextConfig, *, readonly: bool = False, advice: str | None = None) -> sqlite3.Connection:
    """A connection to the context's hybrid.db, for the front ends and scripts that read it
    through `chinvex.storage` functions. Never creates an index: a context not ingested yet is a
    NotFoundError whose message says what to run (`advice`, else the CLI command)."""
    from chinvex.errors import NotFoundError
    from chinvex.storage import db

    path = Path(config.index.sqlite_path)
    if not path.exists():
        hint = advice or f"run 'chinvex ingest --context {config.name}'"
        raise NotFoundError(f"context {config.name!r} has no index yet; {hint}")
    return db.connect(path, create=False, readonly=readonly)


@contextmanager
def reading(config: ContextConfig) -> Iterator[sqlite3.Connection | None]:
    """A read-only connection for as long as the block runs, or None when the context has no
    index yet (a page or a listing must never create one by looking)."""
    if not has_index(config):
        yield None
        return
    conn = open_index(config, readonly=True)
    try:
        yield conn
    finally:
        conn.close()


class Engine:
    """The search engine a front end keeps: one searcher (connections, vector stores, embedders)
    built on first use and shared by every thread and context. Long-running servers (`chinvex
    mcp`, `chinvex ui`) keep one for their lifetime (`server=True` also settles the heap once it
    is warm); a one-shot command makes one per call."""

    def __init__(self, *, server: bool = False):
        self._server = server
        self._shared: Any = None
        self._one: Searcher | None = None

    @property
    def searcher(self) -> Searcher:
        if self._server:
            if self._shared is None:
                from chinvex.retrieval.shared import SharedSearcher

                self._shared = SharedSearcher()
            return self._shared.get()
        if self._one is None:
            from chinvex.retrieval.search import Searcher

            self._one = Searcher()
        return self._one

    def search(self, configs: Sequence[ContextConfig], request: SearchRequest) -> SearchResponse:
        return self.searcher.search(list(configs), request)

    def warm(self, configs: Sequence[ContextConfig]) -> None:
        """One throwaway search, so the first real one finds the connections, the vector stores
        and the embedder's model loaded. A server calls it on a background thread once its
        handshake is done. A failure here is left for the first real search to report."""
        from chinvex.retrieval.search import SearchRequest

        try:
            self.searcher.search(list(configs), SearchRequest(query="warm up", k=1))
        except Exception:  # noqa: BLE001  (reported by the real search, with its context)
            pass

    def close(self) -> None:
        """Release the searcher's handles; the next use builds a new one."""
        if self._shared is not None:
            self._shared.close()
        if self._one is not None:
            self._one.close()
            self._one = None


def open(name: str | None = None) -> Context:
    """The context named (or aliased) `name`; without one, CHINVEX_CONTEXT, else the context whose
    source folders contain the current directory. Raises ChinvexError when there is none."""
    from chinvex.context.default import resolve_default
    from chinvex.context.registry import Registry
    from chinvex.errors import UsageError

    if name is not None:
        return Context(Registry().resolve(name))
    found = resolve_default(Registry(), given=None, env=os.environ, cwd=os.getcwd(), advice=_ADVICE)
    if found.config is None:
        if found.cause is not None:
            raise found.cause
        raise UsageError(found.error or f"No context given; {_ADVICE}.")
    return Context(found.config)


def contexts() -> list[str]:
    """The names of every context, in the registry's order."""
    from chinvex.context.default import context_names
    from chinvex.context.registry import Registry

    return context_names(Registry())


def create(name: str, *, repos: Sequence[str | os.PathLike[str]] = (), notes: Sequence[str | os.PathLike[str]] = (),
           chat_roots: Sequence[str | os.PathLike[str]] = (), sessions: Sequence[str] = ()) -> Context:
    """A new context over these sources (`sessions`: "auto" or "KIND=PATH" entries), not yet
    ingested: call `ingest()` on it."""
    from chinvex.context.registry import Registry
    from chinvex.ingest.session_stores import checked_entry

    includes = {"repos": [str(Path(p).expanduser().resolve()) for p in repos],
                "note_roots": [str(Path(p).expanduser().resolve()) for p in notes],
                "chat_roots": [str(Path(p).expanduser().resolve()) for p in chat_roots],
                "sessions": [checked_entry(s) for s in sessions]}
    return Context(Registry().create(name, includes={k: v for k, v in includes.items() if v}).config)
