"""The `chat_export` adapter: ChatGPT and claude.ai data exports (`conversations.json`, the
export `.zip`; each entry read by the parser of its shape) and markdown chat exports under a
context's `chat_roots`.

Identity across exports: users re-export their account regularly and keep the old archives, so
the same conversation arrives from several files. A conversation's doc_id is therefore
`thread_doc_id("chat", conversation_id)` and does not depend on the file: the index holds it
once. When two sources yield the same doc_id, `precedence_key` decides which copy wins, the
same way whatever order the files are read in (newest `updated_at`, then more turns, then the
JSON export over a markdown rendering, then the greater source_uri).
"""

from __future__ import annotations

import zipfile
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

from chinvex.models import ConversationDoc
from chinvex.models.sources import (
    AdapterDefaults,
    AdapterOptions,
    ParsedDoc,
    ParseReport,
    SkippedSource,
    SourceCandidate,
    SourceError,
    UnrecognisedSource,
)
from chinvex_adapters.kit.walk import WalkEntry, walk
from chinvex_adapters.walked import source_candidate, walked_sources

from .chatgpt import conversation_to_doc, thread_id_of
from .claude_ai import claude_conversation_to_doc, is_claude_conversation
from .claude_ai import thread_id_of as claude_thread_id
from .json_stream import (
    MAX_NESTING,
    SNIFF_BYTES,
    NotAnArray,
    StreamProblems,
    array_start,
    iter_array,
)
from .markdown_chat import parse_markdown

CONVERSATIONS_JSON = "conversations.json"
MARKDOWN_SUFFIXES = (".md", ".markdown")
DEFAULT_MARKDOWN_MAX_BYTES = 20_000_000
MAX_WARNINGS_PER_SOURCE = 10
_CONVERSATION_KEYS = ("mapping", "current_node", "conversation_id", "chat_messages")


def precedence_key(doc: ParsedDoc) -> tuple[Any, ...]:
    """Sort key among documents sharing a doc_id: the greatest is the copy to keep."""
    updated = doc.updated_at.timestamp() if doc.updated_at else float("-inf")
    is_conv = isinstance(doc, ConversationDoc)
    turns = len(doc.turns) if is_conv else 0
    rank = 1 if is_conv and doc.source in ("chatgpt_export", "claude_ai") else 0
    return (updated, turns, rank, doc.source_uri)


def _sniff_conversations_array(path: Path, *, require_mapping: bool) -> str | None:
    """None when the file looks like a ChatGPT conversations array, else why not."""
    try:
        with path.open("rb") as handle:
            head = handle.read(SNIFF_BYTES)
    except OSError as exc:
        return f"unreadable: {exc}"
    try:
        array_start(head)
    except NotAnArray as exc:
        return f"JSON that is not a conversations array ({exc})"
    if require_mapping and b'"mapping"' not in head and b'"chat_messages"' not in head:
        return "JSON array without ChatGPT or claude.ai conversations"
    return None


def _zip_members(path: Path) -> list[str]:
    with zipfile.ZipFile(path) as archive:
        return sorted(
            name for name in archive.namelist()
            if name.rsplit("/", 1)[-1] == CONVERSATIONS_JSON and not name.startswith("__MACOSX/")
        )


def classify(path: Path) -> tuple[str | None, str, dict[str, Any]]:
    """(kind, reason-if-not, extra) from the name and at most the first bytes of a file."""
    name = path.name.lower()
    if name.endswith(MARKDOWN_SUFFIXES):
        return "markdown", "", {}
    if name.endswith(".json"):
        if name == CONVERSATIONS_JSON:
            return "chatgpt_json", "", {}  # a broken one is reported by parse, not hidden
        why = _sniff_conversations_array(path, require_mapping=True)
        return (None, why, {}) if why else ("chatgpt_json", "", {})
    if name.endswith(".zip"):
        try:
            members = _zip_members(path)
        except (zipfile.BadZipFile, OSError, ValueError) as exc:
            return None, f"unreadable zip: {exc}", {}
        if not members:
            return None, "zip archive without conversations.json", {}
        return "chatgpt_zip", "", {"members": members}
    return None, "not a chat export (conversations.json, export .zip or markdown)", {}


def _entry_key(conv: Any, index: int) -> str:
    if is_claude_conversation(conv):
        return claude_thread_id(conv, index)[0]
    if isinstance(conv, dict):
        if isinstance(conv.get("conversation_id"), str) or isinstance(conv.get("id"), str):
            return thread_id_of(conv, index)[0]
        return repr((conv.get("title"), conv.get("create_time"), conv.get("update_time"),
                     conv.get("current_node")))[:500]
    return f"#{index}"


class ChatExportAdapter(AdapterDefaults):
    name = "chat_export"
    source_type = "chat"
    parser_version = "chat_export_v1"
    include_key = "chat_roots"

    def enumerate(
        self, root: Path, options: AdapterOptions
    ) -> Iterator[SourceCandidate | SkippedSource]:
        root_str = str(Path(root).expanduser().absolute())
        md_limit = int(options.settings.get("chat_markdown_max_bytes", DEFAULT_MARKDOWN_MAX_BYTES))
        yield from walked_sources(walk(Path(root), options.excludes), self.source_type,
                                  lambda entry: self._source(entry, root_str, md_limit))

    def _source(self, entry: WalkEntry, root: str, md_limit: int) -> SourceCandidate | SkippedSource:
        """What a file the walk kept becomes: a candidate, or the reason it is not one."""
        uri = str(entry.path)
        kind, why, extra = classify(entry.path)
        if kind is None:
            reason = "unreadable" if why.startswith("unreadable") else "not_supported"
            return SkippedSource(uri, self.source_type, reason, why)
        if kind == "markdown" and entry.size_bytes is not None and entry.size_bytes > md_limit:
            return SkippedSource(uri, self.source_type, "too_large",
                                 f"{entry.size_bytes} bytes > {md_limit}")
        return source_candidate(entry, source_type=self.source_type, adapter=self.name, root=root,
                                extra={"kind": kind, **extra})

    def parse(
        self, candidate: SourceCandidate, report: ParseReport, previous_state: dict[str, Any] | None
    ) -> Iterator[ParsedDoc]:
        path = Path(candidate.path or candidate.source_uri).absolute()
        kind = candidate.extra.get("kind") or classify_by_name(path)
        if kind == "markdown":
            try:
                doc = parse_markdown(path, report)
            except OSError as exc:
                raise SourceError(f"{path}: cannot read: {exc.strerror or exc}") from None
            # Like repo files and notes, a document names itself by its path under the root, so
            # chunk headers (embedded with the text) are not dominated by an absolute path.
            try:
                doc.metadata.setdefault("path", path.relative_to(candidate.root).as_posix())
            except ValueError:
                pass
            yield doc
        elif kind == "chatgpt_zip":
            yield from self._parse_zip(path, report)
        else:
            yield from parse_conversations(lambda: path.open("rb"), str(path), str(path), report)

    def _parse_zip(self, path: Path, report: ParseReport) -> Iterator[ParsedDoc]:
        try:
            archive = zipfile.ZipFile(path)
        except (zipfile.BadZipFile, OSError, ValueError) as exc:
            raise UnrecognisedSource(f"{path}: not a readable zip archive ({exc})") from None
        with archive:
            members = sorted(
                n for n in archive.namelist()
                if n.rsplit("/", 1)[-1] == CONVERSATIONS_JSON and not n.startswith("__MACOSX/")
            )
            if not members:
                raise UnrecognisedSource(f"{path}: not a chat export (zip archive without "
                                         "conversations.json)")
            for member in members:
                def opener(member: str = member) -> IO[bytes]:
                    try:
                        return archive.open(member)
                    except (RuntimeError, NotImplementedError, zipfile.BadZipFile) as exc:
                        raise SourceError(f"{path}!{member}: cannot open ({exc})") from None

                yield from parse_conversations(opener, f"{path}!{member}", str(path), report,
                                               member=member)


def classify_by_name(path: Path) -> str:
    name = path.name.lower()
    if name.endswith(MARKDOWN_SUFFIXES):
        return "markdown"
    return "chatgpt_zip" if name.endswith(".zip") else "chatgpt_json"


def _warn(report: ParseReport, message: str) -> None:
    if len(report.warnings) < MAX_WARNINGS_PER_SOURCE:
        report.warnings.append(message)


def parse_conversations(
    open_raw: Callable[[], IO[bytes]], label: str, uri_path: str, report: ParseReport,
    member: str | None = None,
) -> Iterator[ConversationDoc]:
    """Stream a conversations array and yield one document per conversation.

    Damage stays local: a corrupt entry is counted and skipped, a truncated file keeps what was
    complete, a JSON syntax error resyncs on the next conversation. Only a source that gives
    nothing at all (not JSON, not an array, not conversations) raises SourceError.
    """
    counts = report.counts
    problems = StreamProblems()
    seen: set[str] = set()
    entries = conversation_like = yielded = 0
    damaged: str | None = None
    try:
        for element, after_resync in iter_array(open_raw, problems):
            if isinstance(element, dict) and any(k in element for k in _CONVERSATION_KEYS):
                conversation_like += 1
            elif after_resync:
                counts["resync_fragments_skipped"] += 1
                continue
            key = _entry_key(element, entries)
            if key in seen:
                if not after_resync:
                    counts["duplicate_conversations"] += 1
                    _warn(report, f"{label}: conversation {key[:60]} appears twice; first copy kept")
                continue
            seen.add(key)
            index = entries
            entries += 1
            convert = claude_conversation_to_doc if is_claude_conversation(element) else conversation_to_doc
            try:
                doc = convert(element, index=index, path=uri_path, report=report, member=member)
            except Exception as exc:  # noqa: BLE001 - one damaged entry must not cost the file
                counts["entries_failed"] += 1
                _warn(report, f"{label}: entry {index} skipped ({type(exc).__name__}: "
                              f"{str(exc).splitlines()[0][:120] if str(exc) else ''})")
                continue
            if doc is not None:
                yielded += 1
                yield doc
    except NotAnArray as exc:
        raise UnrecognisedSource(f"{label}: not a chat export ({exc})") from None
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError) as exc:
        damaged = f"{type(exc).__name__}: {exc}"
    if damaged is not None:
        if entries == 0:
            raise UnrecognisedSource(f"{label}: not a readable chat export ({damaged})")
        counts["read_errors"] += 1
        _warn(report, f"{label}: reading stopped ({damaged}); {yielded} conversations kept")
    _report_problems(label, report, problems, entries=entries, conversation_like=conversation_like,
                     yielded=yielded)


def _report_problems(label: str, report: ParseReport, problems: StreamProblems, *, entries: int,
                     conversation_like: int, yielded: int) -> None:
    """After the stream: refuse a source that gave nothing readable, else count and warn
    about every kind of damage that was read past."""
    counts = report.counts
    if entries == 0 and (problems.unrecovered_error or problems.truncated):
        if problems.too_deep:
            raise UnrecognisedSource(f"{label}: refused: {problems.too_deep_error}; no conversation "
                                     "nests like that, and reading it would take unbounded memory")
        raise UnrecognisedSource(f"{label}: not a readable chat export (not valid JSON: "
                                 f"{problems.first_error})")
    if entries and not conversation_like:
        raise UnrecognisedSource(f"{label}: not a chat export (a JSON array, but not of ChatGPT "
                                 "or claude.ai conversations)")
    if problems.truncated:
        counts["truncated"] += 1
        _warn(report, f"{label}: file ends in the middle of a conversation (truncated?); "
                      f"{yielded} conversations before the cut were kept")
    if problems.trailing_garbage:
        counts["trailing_garbage"] += 1
        _warn(report, f"{label}: unexpected data after the conversations array was ignored")
    if problems.too_deep:
        counts["json_too_deep"] += problems.too_deep
        _warn(report, f"{label}: data nested deeper than {MAX_NESTING} levels was skipped "
                      f"({problems.too_deep_error})")
    if problems.resyncs:
        counts["json_resyncs"] += problems.resyncs
        _warn(report, f"{label}: invalid JSON near byte {problems.first_error_offset} "
                      f"({problems.first_error}); skipped to the next readable conversation")
    if problems.unrecovered_error and entries:
        _warn(report, f"{label}: invalid JSON ({problems.unrecovered_error}); "
                      "nothing after it could be read")
    for key, text in (("entries_without_mapping", "without a mapping (nothing to index)"),
                      ("entries_failed", "that could not be read")):
        if counts.get(key):
            noun = "entry" if counts[key] == 1 else "entries"
            _warn(report, f"{label}: skipped {counts[key]} {noun} {text}")


__all__ = ["ChatExportAdapter", "precedence_key", "parse_conversations", "classify"]
