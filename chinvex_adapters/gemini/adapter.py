"""The `gemini` adapter: Gemini CLI chats (`~/.gemini/tmp/<project>/chats/`), one conversation
per session file, legacy whole-file `.json` and current append-only `.jsonl` alike (sub-agent
chats too, under their parent session's folder).

The thread id is the session id recorded in the file (except the A2A server's fixed
`a2a-server`, see `shared_id_thread`), so a legacy `.json` that a newer CLI
resumed into a `.jsonl` of the same name is ONE document: `precedence_key` lets the copy
updated last (then the one with more turns, then the `.jsonl`) write it. The project folder is
not in the file: it comes from the store (`.project_root`, `projects.json`) or from a path
whose sha256 is the file's `projectHash`; else the conversation has no cwd and keeps the hash.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from chinvex.models import ConversationDoc
from chinvex.models.sources import ParsedDoc, ParseReport, SourceCandidate
from chinvex.timeutil import to_utc
from chinvex_adapters.kit.jsonl import partial_tail_warning
from chinvex_adapters.kit.sessionfile import SessionFileAdapter, conversation
from chinvex_adapters.kit.text import as_str, one_line
from chinvex_adapters.kit.walk import WalkEntry

from .layout import chat_verdict, parent_session, project_dir, project_root, resolved_base, walk_root
from .records import Session, load, sniff
from .turns import GeminiTurns, tool_paths

MAX_WARNINGS = 10


class GeminiAdapter(SessionFileAdapter):
    name = "gemini"
    label = "Gemini CLI session"
    parser_version = "gemini_v2"  # v2: A2A-server chats each their own thread

    # -- enumeration -----------------------------------------------------------------------
    def walk_from(self, root: Path) -> Path | None:
        return walk_root(root)

    def accepts(self, rel: str, entry: WalkEntry) -> bool | str:
        return chat_verdict(rel, entry)

    # -- routing by content ----------------------------------------------------------------
    def sniff(self, path: Path) -> str | None:
        return sniff(path)

    @staticmethod
    def precedence_key(doc: ParsedDoc) -> tuple[Any, ...]:
        """Of two files of one session (a legacy `.json` and the `.jsonl` a newer CLI resumed it
        into), the one updated last wins, then the one with more turns, then the `.jsonl`."""
        updated = doc.updated_at.timestamp() if doc.updated_at else float("-inf")
        turns = len(doc.turns) if isinstance(doc, ConversationDoc) else 0
        return (updated, turns, doc.source_uri.endswith(".jsonl"), doc.source_uri)

    # -- reading ---------------------------------------------------------------------------
    def parse_file(self, path: Path, report: ParseReport, candidate: SourceCandidate,
                   previous_state: dict[str, Any] | None) -> Iterator[ConversationDoc]:
        session = load(path, report.counts)
        facts = session.facts
        project_hash = as_str(facts.get("projectHash"))
        listed = facts.get("directories")
        directories = [d for d in listed if isinstance(d, str) and d] if isinstance(listed, list) else []
        hints = directories + [base for given, written in tool_paths(session.messages)
                               if (base := resolved_base(given, written))]
        cwd, found_by = project_root(path, project_hash, hints)
        built = GeminiTurns(report.counts, cwd)
        for message in session.messages:
            try:
                built.feed(message)
            except Exception as exc:  # noqa: BLE001 - one odd message must not cost the session
                report.counts["messages_failed"] += 1
                if len(report.warnings) < MAX_WARNINGS:
                    report.warnings.append(f"{path}: message {as_str(message.get('id')) or '?'} "
                                           f"skipped ({type(exc).__name__})")
        if session.partial_tail:
            report.warnings.append(partial_tail_warning(path))
        turns = built.b.finish(to_utc(facts.get("startTime")))
        if not any(t.role in ("user", "assistant") for t in turns):
            report.counts["sessions_without_messages"] += 1  # e.g. only a hook's warning
            return
        session_id = as_str(facts.get("sessionId")) or path.name.split(".", 1)[0]
        parent = parent_session(path)
        thread_id = f"{parent}/{session_id}" if parent and parent == session_id else session_id
        thread_id = shared_id_thread(thread_id, path)
        title = (as_str(facts.get("summary")) or one_line(built.first_prompt or "")
                 or (built.topics[0] if built.topics else None))
        model = built.models.most_common(1)[0][0] if built.models else None
        metadata = _metadata(path, session, built, parent, found_by)
        doc = conversation(agent=self.name, source_uri=str(path), thread_id=thread_id, turns=turns,
                           title=title, cwd=cwd, model=model, models=list(built.models), metadata=metadata)
        if doc is not None:
            yield doc


A2A_SERVER_SESSION_ID = "a2a-server"
"""The session id Gemini CLI's A2A server (`packages/a2a-server`, which Cloud Shell's Gemini
chat runs on) writes into EVERY chat it records: its files are named
`session-<minute>-a2a-serv.jsonl`, one per task, all with `"sessionId": "a2a-server"`."""


def shared_id_thread(thread_id: str, path: Path) -> str:
    """The thread id of a chat whose recorded session id is shared by other chats.

    Taken as it is, the A2A server's fixed id gives every one of its chats (a hundred in one
    project folder is common) the same document id, so all but one of them would be dropped
    as older copies of the same session. Such a chat is told apart by its project folder and
    file name, which the writer never reuses for another task; any other id is returned as it
    is.
    """
    if thread_id != A2A_SERVER_SESSION_ID:
        return thread_id
    folder = project_dir(path)
    stem = path.name.split(".", 1)[0]
    return "/".join(x for x in (thread_id, folder.name if folder is not None else None, stem) if x)


def _metadata(path: Path, session: Session, built: GeminiTurns, parent: str | None,
              found_by: str | None) -> dict[str, Any]:
    """What the session file says beside its turns."""
    facts = session.facts
    meta: dict[str, Any] = {"session_id": as_str(facts.get("sessionId")),
                            "project_hash": as_str(facts.get("projectHash")),
                            "file_format": "jsonl" if session.form == "jsonl" else "json (legacy)",
                            "messages": len(session.messages)}
    folder = project_dir(path)
    if folder is not None:
        meta["project_id"] = folder.name
    if found_by:
        meta["cwd_from"] = found_by
    for key, name in (("startTime", "started_at"), ("lastUpdated", "last_updated"), ("kind", "kind"),
                      ("summary", "summary")):
        if as_str(facts.get(key)):
            meta[name] = as_str(facts.get(key))
    if isinstance(facts.get("directories"), list):
        meta["directories"] = [d for d in facts["directories"] if isinstance(d, str)][:50]
    if parent:
        meta["parent_session_id"] = parent
    if built.versions:
        meta["cli_version"] = built.versions[0]
    if built.usage:
        meta["usage"] = dict(built.usage)
    if built.topics:
        meta["topics"] = list(dict.fromkeys(built.topics))[:20]
    for value, name in ((session.upserts, "messages_rewritten"), (session.rewinds, "rewinds"),
                        (session.replaced_lists, "message_lists_replaced")):
        if value:
            meta[name] = value
    if session.partial_tail:
        meta["partial_last_line"] = True
    return meta
