"""List and read Codex threads through `codex app-server` (the primary Codex source).

The ingest adapter calls `list_threads()` (cheap: metadata only: each thread's history mode,
`updated_at` and rollout file, so unchanged threads are skipped without reading) and
`read_thread()` for the threads that changed. When the
server cannot give a thread's content — a paginated thread whose SQLite projection is missing
(FORMATS.md §1.5), or a thread it fails to read — the summary's `rollout_path` lets the
pipeline hand that one thread to the rollout-file adapter instead.

Decisions:
- `thread/list` always passes `modelProviders: []`; without it only the currently configured
  provider's threads come back (verified on 0.169.0).
- Default source kinds are every top-level kind: cli, vscode, exec, appServer and unknown (the
  server's own default is cli+vscode only). `codex exec` runs and threads started by other
  app-server clients are work the developer asked for, and the rollout-file fallback reads
  every file anyway; listing fewer here would make the index depend on whether the binary is
  installed. Sub-agent kinds (review, compact, spawned agents) only on request: their content
  is derived from the parent thread.
- Legacy threads are read with `thread/read includeTurns`, paginated ones with
  `thread/turns/list itemsView=full` (all pages, ascending) and, for any turn that still comes
  back partial, `thread/items/list` for that turn.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from pydantic import ValidationError

from chinvex.models import ConversationDoc
from chinvex.models.sources import ParseReport

from . import schemas
from .client import AppServerClient
from .errors import (
    METHOD_NOT_FOUND,
    AppServerError,
    AppServerTimeout,
    AppServerUnavailable,
)
from .item_text import NormalizeOptions
from .launch import ClientConfig
from .normalize import (
    thread_to_conversation,
)
from .threads import (
    ThreadReadError,
    ThreadReadOutcome,
    ThreadSummary,
    resolve_rollout_path,
    summarize,
)

log = logging.getLogger(__name__)

DEFAULT_SOURCE_KINDS: tuple[str, ...] = schemas.TOP_LEVEL_KINDS
MAX_PAGES = 10_000


@dataclass
class AppServerSourceOptions:
    source_kinds: Sequence[str] = DEFAULT_SOURCE_KINDS
    list_page_size: int = 100
    turns_page_size: int = 50
    items_page_size: int = 200
    # "read": legacy threads come from thread/read; "fallback": report them as unreadable
    # here so the rollout-file adapter reads them (0.169.0's legacy replay drops tool calls
    # and assistant text that exists only as response_items — see the report).
    legacy_policy: Literal["read", "fallback"] = "read"
    max_restarts: int = 2
    normalize: NormalizeOptions = field(default_factory=NormalizeOptions)




def _short(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        first = exc.errors()[0] if exc.errors() else {}
        loc = ".".join(str(p) for p in first.get("loc", ()))
        return f"invalid response ({exc.error_count()} errors; first at {loc}: {first.get('msg')})"
    return str(exc).splitlines()[0]


class AppServerSource:
    """Lists and reads threads over one (lazily started, restartable) app-server child."""

    def __init__(
        self,
        client_factory: Callable[[], AppServerClient],
        options: AppServerSourceOptions | None = None,
    ):
        self._factory = client_factory
        self.options = options or AppServerSourceOptions()
        self._client: AppServerClient | None = None
        self._starts = 0
        self.list_errors: list[str] = []
        self.list_counts: Counter[str] = Counter()

    # -- client lifecycle ------------------------------------------------------------------
    def client(self) -> AppServerClient:
        """The running client; a dead one is replaced (at most `max_restarts` times)."""
        if self._client is not None and self._client_alive(self._client):
            return self._client
        if self._client is not None:
            self._discard()
        if self._starts > self.options.max_restarts:
            raise AppServerUnavailable(
                f"codex app-server failed {self._starts} times; giving up for this run"
            )
        self._starts += 1
        client = self._factory()
        try:
            client.start()
        except BaseException:
            client.close()
            raise
        self._client = client
        return client

    @staticmethod
    def _client_alive(client: AppServerClient) -> bool:
        return not client.closed

    def _discard(self) -> None:
        if self._client is not None:
            try:
                self._client.close()
            finally:
                self._client = None

    @property
    def codex_home(self) -> str | None:
        if self._client is None or not self._client.initialize_result:
            return None
        return self._client.initialize_result.get("codexHome")

    def close(self) -> None:
        self._discard()

    def __enter__(self) -> "AppServerSource":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _request(self, method: str, params: dict[str, Any]) -> Any:
        client = self.client()
        try:
            return client.request(method, params)
        except AppServerTimeout:
            self._discard()  # a stuck child is not reused: the next call starts a fresh one
            raise
        except AppServerUnavailable:
            self._discard()
            raise

    # -- listing ---------------------------------------------------------------------------
    def list_threads(self, include_subagents: bool = False, include_archived: bool = False) -> list[ThreadSummary]:
        """Every thread the server knows, deduplicated by id, sorted by (created_at, id)."""
        self.list_errors = []
        self.list_counts = Counter()
        kinds = list(self.options.source_kinds)
        if include_subagents:
            kinds += [k for k in schemas.SUBAGENT_KINDS if k not in kinds]
        found: list[ThreadSummary] = []
        found += self._list_pass(kinds, archived=False)
        if include_archived:
            found += self._list_pass(kinds, archived=True)
        if not include_subagents:
            # sourceKinds is a server-side filter; this guards against a server ignoring it.
            kept = [t for t in found if not t.is_subagent]
            self.list_counts["subagents_filtered"] += len(found) - len(kept)
            found = kept
        return self._dedupe(found)

    def _list_pass(self, kinds: list[str], archived: bool) -> list[ThreadSummary]:
        params: dict[str, Any] = {
            "modelProviders": [],
            "sourceKinds": kinds,
            "limit": self.options.list_page_size,
            "sortKey": "created_at",
            "sortDirection": "asc",
        }
        if archived:
            params["archived"] = True
        out: list[ThreadSummary] = []
        cursor: str | None = None
        seen_cursors: set[str] = set()
        for _ in range(MAX_PAGES):
            page_params = dict(params, cursor=cursor) if cursor else params
            result = self._request("thread/list", page_params)
            threads, next_cursor = self._validate_list_page(result)
            out += [summarize(t, archived) for t in threads]
            self.list_counts["pages"] += 1
            if not next_cursor:
                break
            if next_cursor in seen_cursors:
                self.list_errors.append(f"thread/list returned cursor {next_cursor!r} twice; stopped paging")
                break
            seen_cursors.add(next_cursor)
            cursor = next_cursor
        return out

    def _validate_list_page(self, result: Any) -> tuple[list[schemas.Thread], str | None]:
        try:
            page = schemas.ThreadListResponse.model_validate(result)
            return page.data, page.next_cursor
        except ValidationError:
            pass
        # One bad thread must not hide the others: validate entries one by one.
        if not isinstance(result, dict) or not isinstance(result.get("data"), list):
            raise AppServerError(0, f"thread/list returned an unexpected shape: {str(result)[:200]}", method="thread/list")
        threads: list[schemas.Thread] = []
        for raw in result["data"]:
            try:
                threads.append(schemas.Thread.model_validate(raw))
            except ValidationError as exc:
                tid = raw.get("id") if isinstance(raw, dict) else None
                self.list_errors.append(f"thread {tid}: {_short(exc)}")
                self.list_counts["threads_invalid"] += 1
        cursor = result.get("nextCursor")
        return threads, cursor if isinstance(cursor, str) else None

    def _dedupe(self, found: list[ThreadSummary]) -> list[ThreadSummary]:
        """Copies of one rollout (same thread id in several files) are listed once per file;
        the server reads only one of them by id, so we keep one summary and remember the
        other paths."""
        by_id: dict[str, list[ThreadSummary]] = {}
        for summary in found:
            by_id.setdefault(summary.thread_id, []).append(summary)
        unique: list[ThreadSummary] = []
        for thread_id, group in by_id.items():
            group.sort(key=lambda t: (t.updated_at_unix, t.path or ""), reverse=True)
            keep = group[0]
            if len(group) > 1:
                self.list_counts["duplicate_thread_ids"] += len(group) - 1
                others = tuple(sorted({t.path for t in group[1:] if t.path and t.path != keep.path}))
                keep = replace(keep, duplicate_paths=others)
            unique.append(keep)
        unique.sort(key=lambda t: (t.created_at, t.thread_id))
        return unique

    # -- reading ---------------------------------------------------------------------------
    def read_thread(self, thread: ThreadSummary | str, report: ParseReport | None = None) -> ConversationDoc | None:
        """The thread as a document; None when the server has no content for it (reason in
        `report`). Raises ThreadReadError (a SourceError) for a per-thread failure and
        AppServerUnavailable/AppServerTimeout when the server itself is gone."""
        outcome = self.read_thread_outcome(thread)
        if report is not None:
            report.counts.update(outcome.counts)
            report.warnings.extend(outcome.warnings)
            if outcome.doc is None and outcome.reason and not outcome.error:
                report.warnings.append(f"{outcome.reason}: {outcome.detail}")
                report.counts[f"fallback_{outcome.reason}"] += 1
        if outcome.error:
            raise ThreadReadError(outcome)
        return outcome.doc

    def read_thread_outcome(self, thread: ThreadSummary | str) -> ThreadReadOutcome:
        summary = thread if isinstance(thread, ThreadSummary) else None
        thread_id = summary.thread_id if summary else str(thread)
        fallback = summary.rollout_path if summary else None
        mode = summary.history_mode if summary else None
        meta: schemas.Thread | None = None
        try:
            if mode is None:
                meta = self._read_meta(thread_id)
                mode = meta.history_mode
                fallback = resolve_rollout_path(meta.path)
            if mode == "legacy":
                if self.options.legacy_policy == "fallback":
                    return ThreadReadOutcome(thread_id, None, "legacy_prefer_jsonl",
                                             "legacy thread left to the rollout-file adapter", fallback)
                response = schemas.ThreadReadResponse.model_validate(
                    self._request("thread/read", {"threadId": thread_id, "includeTurns": True})
                )
                full, turns, counts = response.thread, response.thread.turns, Counter[str]()
            else:
                # Full hydration is deprecated for paginated threads (the server says so in a
                # deprecationNotice): metadata from thread/read, history from the list methods.
                full = meta or self._read_meta(thread_id)
                turns, counts = self.list_turns(thread_id)
        except ValidationError as exc:
            return ThreadReadOutcome(thread_id, None, "invalid_response", _short(exc), fallback, error=True)
        except AppServerError as exc:
            return ThreadReadOutcome(thread_id, None, "server_error", _short(exc), fallback, error=True)

        fallback = resolve_rollout_path(full.path) or fallback
        if not turns:
            if full.history_mode != "legacy":
                reason, detail = ("paginated_projection_missing",
                                  "the server returned no turns for a paginated thread (its "
                                  "thread_history projection is missing); read the rollout file")
            elif full.preview.strip():
                reason, detail = "no_turns", "the server returned no turns although the thread has a preview"
            else:
                reason, detail = "empty_thread", "the thread has no turns"
            return ThreadReadOutcome(thread_id, None, reason, detail, fallback, counts)

        doc, doc_counts = thread_to_conversation(full, turns, self.options.normalize)
        counts.update(doc_counts)
        warnings = []
        if counts.get("unknown_items_kept") or counts.get("unknown_items_dropped"):
            warnings.append(
                f"{counts['unknown_items_kept'] + counts['unknown_items_dropped']} item(s) of unknown type "
                f"({counts['unknown_items_dropped']} without text dropped)"
            )
        return ThreadReadOutcome(thread_id, doc, None, "", fallback, counts, warnings)

    def _read_meta(self, thread_id: str) -> schemas.Thread:
        return schemas.ThreadReadResponse.model_validate(
            self._request("thread/read", {"threadId": thread_id, "includeTurns": False})
        ).thread

    def list_turns(self, thread_id: str) -> tuple[list[schemas.Turn], Counter[str]]:
        """All turns of a thread, oldest first, with full items: thread/turns/list pages, then
        thread/items/list for any turn that still came back partial."""
        counts: Counter[str] = Counter()
        turns: list[schemas.Turn] = []
        cursor: str | None = None
        seen: set[str] = set()
        for _ in range(MAX_PAGES):
            params: dict[str, Any] = {
                "threadId": thread_id,
                "sortDirection": "asc",
                "itemsView": "full",
                "limit": self.options.turns_page_size,
            }
            if cursor:
                params["cursor"] = cursor
            page = schemas.ThreadTurnsListResponse.model_validate(self._request("thread/turns/list", params))
            turns += page.data
            counts["turn_pages"] += 1
            if not page.next_cursor or page.next_cursor in seen:
                break
            seen.add(page.next_cursor)
            cursor = page.next_cursor
        items_supported = True
        for index, turn in enumerate(turns):
            if turn.items_view == "full":
                continue
            if not items_supported:
                counts["turns_items_partial"] += 1
                continue
            try:
                items = self._turn_items(thread_id, turn, counts)
            except AppServerError as exc:
                if exc.code != METHOD_NOT_FOUND:
                    raise
                # Legacy threads: "thread/items/list is not supported yet" — keep what the
                # turn has and stop asking for this thread.
                items_supported = False
                counts["turns_items_partial"] += 1
                continue
            if items is not None:
                turns[index] = turn.model_copy(update={"items": items, "items_view": "full"})
        return turns, counts

    def _turn_items(self, thread_id: str, turn: schemas.Turn, counts: Counter[str]) -> list[Any] | None:
        items: list[Any] = []
        cursor: str | None = None
        seen: set[str] = set()
        for _ in range(MAX_PAGES):
            params: dict[str, Any] = {"threadId": thread_id, "turnId": turn.id, "limit": self.options.items_page_size}
            if cursor:
                params["cursor"] = cursor
            page = schemas.ThreadItemsListResponse.model_validate(self._request("thread/items/list", params))
            items += [entry.item for entry in page.data if entry.turn_id == turn.id]
            counts["item_pages"] += 1
            if not page.next_cursor or page.next_cursor in seen:
                break
            seen.add(page.next_cursor)
            cursor = page.next_cursor
        if not items and turn.items:
            counts["turns_items_partial"] += 1
            return None  # keep the summary items rather than nothing
        return items


def client_factory_from(
    config: Any = None,
    *,
    codex_home: str | None = None,
    binary: str | None = None,
) -> Callable[[], AppServerClient]:
    """A factory from context.json's `codex_appserver` block (CodexAppServerConfig): `command`,
    `timeout_s`, and the optional extra keys `codex_home` and `offline` (default true: start
    the server with plugin sync disabled so it makes no network request)."""
    command = list(getattr(config, "command", None) or ("codex", "app-server"))
    timeout = float(getattr(config, "timeout_s", 30.0) or 30.0)
    extra = getattr(config, "model_extra", None) or {}
    home = codex_home or extra.get("codex_home")
    offline = bool(extra.get("offline", True))

    def factory() -> AppServerClient:
        return AppServerClient(
            ClientConfig(
                command=command,
                binary=binary,
                codex_home=str(home) if home else None,
                offline=offline,
                request_timeout_s=timeout,
                startup_timeout_s=timeout,
            )
        )

    return factory


__all__ = [
    "DEFAULT_SOURCE_KINDS",
    "AppServerSource",
    "AppServerSourceOptions",
    "client_factory_from",
]
