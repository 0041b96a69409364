"""A base for adapters whose sessions are files in a store folder (Gemini CLI's chats, Copilot
CLI's events.jsonl, ...), and the one way their conversations are assembled.

A subclass says which files under its store are sessions (`accepts`), how to recognise its
format by content (`recognises`), and how to read one (`parse_file`). A file that is not of its
format is handed to the adapter whose format it is (`chinvex_adapters.agents.identify`), or
skipped with one line saying why: it never fails the run.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from chinvex.ids import thread_doc_id
from chinvex.models import ConversationDoc, ConversationLinks, Turn
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
from chinvex_adapters.kit.text import as_str, json_safe, one_line
from chinvex_adapters.walked import source_candidate, walked_sources

SOURCE_TYPE = "agent_session"


def a(noun: str) -> str:
    """The noun with its indefinite article ("an Aider chat history", "a Gemini CLI session")."""
    return f"{'an' if noun[:1].lower() in 'aeiou' else 'a'} {noun}"


def session_doc_id(agent: str, thread_id: str) -> str:
    """Agents' session ids are not unique across agents (`T-1`, `ses_1`): the agent is part of
    the document id; the thread id stays the agent's own, so `chinvex get <id>` finds it."""
    return thread_doc_id(SOURCE_TYPE, f"{agent}:{thread_id}")


def conversation(
    *, agent: str, source_uri: str, thread_id: str, turns: list[Turn], title: str | None = None,
    cwd: str | None = None, model: str | None = None, metadata: dict[str, Any] | None = None,
    models: list[str] | None = None,
) -> ConversationDoc | None:
    """One agent session as the engine's conversation shape, None when it holds no turn.
    Title: the session's own, else its first user line. `cwd` is the project it ran in."""
    if not turns:
        return None
    if not title:
        first = next((t.text for t in turns if t.role == "user" and t.text.strip()), "")
        title = one_line(first) or None
    stamps = [t.ts for t in turns if t.ts is not None]
    meta: dict[str, Any] = {"format": agent}
    if cwd:
        meta["cwd"] = cwd
    if model:
        meta["model"] = model
    if models:
        meta["models"] = sorted(set(models))
    edited: dict[str, None] = {}
    for turn in turns:
        for edit in turn.meta.get("edits") or ():
            path = edit.get("abs_path") or edit.get("path")
            if path:
                edited.setdefault(path, None)
    if edited:
        meta["files_edited"] = list(edited)[:200]
    meta.update(metadata or {})
    return ConversationDoc(
        source=agent, source_type=SOURCE_TYPE, source_uri=source_uri,  # type: ignore[arg-type]
        doc_id=session_doc_id(agent, thread_id), thread_id=thread_id, title=as_str(title),
        created_at=min(stamps) if stamps else None, updated_at=max(stamps) if stamps else None,
        turns=turns, links=ConversationLinks(repo_paths=[cwd] if cwd else []),
        metadata=json_safe(meta),
    )


class SessionFileAdapter(AdapterDefaults):
    """Subclasses set `name` (the agent), `label` ("Gemini CLI session") and `parser_version`,
    and implement `accepts`, `recognises` and `parse_file`."""

    name = "session_file"
    label = "session"
    source_type = SOURCE_TYPE
    parser_version = "v1"
    include_key: str | None = None  # reached through `sessions` roots, or handed files by others

    # -- what to read --------------------------------------------------------------------
    def accepts(self, rel: str, entry: WalkEntry) -> bool | str:
        """True for a session file of this store; False (or a reason, shown by --verbose) for
        a file beside them that is not one."""
        raise NotImplementedError

    def sniff(self, path: Path) -> str | None:
        """None when the file's content is of this adapter's format (a cheap look at its first
        bytes or records), else why not in a few words. Adapters with a one-answer sniff
        implement this; others override `recognises` and `why_not` themselves."""
        raise NotImplementedError

    def recognises(self, path: Path) -> bool:
        """True when the file's content is of this adapter's format."""
        return self.sniff(path) is None

    def parse_file(self, path: Path, report: ParseReport, candidate: SourceCandidate,
                   previous_state: dict[str, Any] | None) -> Iterator[ConversationDoc]:
        raise NotImplementedError

    # -- the adapter contract ------------------------------------------------------------
    def walk_from(self, root: Path) -> Path | None:
        """The folder under a root to walk: a tool's home folder given as the root is read
        through its sessions folder only (never its settings or credentials); None when it
        holds none yet. The root itself by default."""
        return root

    def enumerate(self, root: Path, options: AdapterOptions) -> Iterator[SourceCandidate | SkippedSource]:
        root_str = str(Path(root).expanduser().absolute())
        folder = self.walk_from(Path(root_str))
        if folder is not None:
            yield from walked_sources(walk(folder, options.excludes), self.source_type,
                                      lambda entry: self._candidate(entry, root_str))

    def _candidate(self, entry: WalkEntry, root: str) -> SourceCandidate | SkippedSource:
        verdict = self.accepts(entry.rel, entry)
        if verdict is not True and str(entry.path) == root and self._named_and_recognised(entry.path):
            verdict = True  # a file the user named as the root: its content decides, not its name
        if verdict is True:
            return source_candidate(entry, source_type=self.source_type, adapter=self.name,
                                    root=root, extra={})
        detail = verdict if isinstance(verdict, str) else f"not a {self.label} file"
        return SkippedSource(str(entry.path), self.source_type, "ignored", detail)

    def _named_and_recognised(self, path: Path) -> bool:
        try:
            return self.recognises(path)
        except (OSError, NotImplementedError):
            return False

    def parse(self, candidate: SourceCandidate, report: ParseReport,
              previous_state: dict[str, Any] | None) -> Iterator[ParsedDoc]:
        path = Path(candidate.path or candidate.source_uri).absolute()
        try:  # a file that cannot be opened is an error retried next run, not a foreign format
            path.open("rb").close()
        except FileNotFoundError:
            raise SourceError(f"{path}: disappeared before it could be read") from None
        except OSError as exc:
            raise SourceError(f"{path}: cannot read: {exc.strerror or exc}") from None
        if self.recognises(path):
            yield from self.parse_file(path, report, candidate, previous_state)
            return
        from chinvex_adapters.agents import identify

        other = identify(path, exclude=self.name)
        if other is None:
            raise UnrecognisedSource(f"{path}: not {a(self.label)} ({self.why_not(path)})")
        report.counts[f"routed_to:{other.name}"] += 1
        yield from other.parse_file(path, report, candidate, None)

    def why_not(self, path: Path) -> str:
        """Why `recognises` said no, in a few words (for the skip line)."""
        return self.sniff(path) or "its content is not of this format"
