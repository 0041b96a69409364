"""The `qwen` adapter: Qwen Code chats (`~/.qwen/projects/<project>/chats/<session id>.jsonl`),
one conversation per file, thread id = the session id its records carry. The project is the
records' `cwd` (the folder name is a lossy rewrite of it).

`recognises` is strict (Gemini-style message parts or Qwen's own record keys in Claude Code's
envelope, and nothing only Claude Code writes), so a Qwen chat found among Claude Code's
transcripts is handed here by the Claude Code adapter, and a Claude transcript never is.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from chinvex.models import ConversationDoc
from chinvex.models.sources import (
    ParseReport,
    SourceCandidate,
    UnrecognisedSource,
)
from chinvex_adapters.kit.jsonl import partial_tail_warning
from chinvex_adapters.kit.sessionfile import SessionFileAdapter, conversation
from chinvex_adapters.kit.text import as_str, one_line
from chinvex_adapters.kit.walk import WalkEntry

from .layout import chat_verdict, stem, walk_root
from .records import Read, read, sniff
from .turns import QwenTurns, call_statuses

MAX_WARNINGS = 10
MAX_LISTED = 10


class QwenAdapter(SessionFileAdapter):
    name = "qwen"
    label = "Qwen Code chat"
    parser_version = "qwen_v2"  # v2: records glued on one line are read

    # -- enumeration -----------------------------------------------------------------------
    def walk_from(self, root: Path) -> Path | None:
        return walk_root(root)

    def accepts(self, rel: str, entry: WalkEntry) -> bool | str:
        return chat_verdict(rel, entry)

    # -- routing by content ----------------------------------------------------------------
    def sniff(self, path: Path) -> str | None:
        return sniff(path)

    # -- reading ---------------------------------------------------------------------------
    def parse_file(self, path: Path, report: ParseReport, candidate: SourceCandidate,
                   previous_state: dict[str, Any] | None) -> Iterator[ConversationDoc]:
        found = read(path, report.counts)
        if not found.records:
            if found.lines:
                raise UnrecognisedSource(f"{path}: not a {self.label} (no record has Qwen Code's envelope)")
            if found.partial_tail:
                report.warnings.append(f"{path}: only an incomplete first line (being written?)")
                return
            raise UnrecognisedSource(f"{path}: not a {self.label} (no JSON records)")
        cwds = _distinct(found.records, "cwd")
        cwd = cwds[0] if cwds else None
        built = QwenTurns(report.counts, cwd, call_statuses(found.records))
        for record in found.records:
            try:
                built.feed(record)
            except Exception as exc:  # noqa: BLE001 - one odd record must not cost the session
                report.counts["records_failed"] += 1
                if len(report.warnings) < MAX_WARNINGS:
                    report.warnings.append(f"{path}: record {record.get('uuid')} skipped "
                                           f"({type(exc).__name__})")
        turns = built.finish()
        if found.partial_tail:
            report.warnings.append(partial_tail_warning(path))
        if not any(t.role in ("user", "assistant") for t in turns):
            report.counts["sessions_without_messages"] += 1
            return
        session_ids = _distinct(found.records, "sessionId")
        thread_id = session_ids[0] if session_ids else stem(path)
        model = built.models.most_common(1)[0][0] if built.models else None
        title = built.title or one_line(built.first_prompt or "") or None
        doc = conversation(agent=self.name, source_uri=str(path), thread_id=thread_id, turns=turns,
                           title=title, cwd=cwd, model=model, models=list(built.models),
                           metadata=_metadata(path, found, built, cwds, session_ids))
        if doc is not None:
            yield doc


def _distinct(records: list[dict[str, Any]], key: str) -> list[str]:
    seen: dict[str, None] = {}
    for record in records:
        value = as_str(record.get(key))
        if value and value not in seen:
            seen[value] = None
            if len(seen) >= MAX_LISTED:
                break
    return list(seen)


def _metadata(path: Path, found: Read, built: QwenTurns, cwds: list[str],
              session_ids: list[str]) -> dict[str, Any]:
    """What the records say beside the turns: versions, branch, tokens, errors, forks."""
    records = found.records
    meta: dict[str, Any] = {"records": len(records)}
    versions = _distinct(records, "version")
    if versions:
        meta["version"], meta["versions"] = versions[-1], versions
    branches = _distinct(records, "gitBranch")
    if branches:
        meta["git_branch"] = branches[-1]
    if len(cwds) > 1:
        meta["cwds"] = cwds
    if session_ids and session_ids[0] != stem(path):
        meta["file_stem"] = stem(path)
    if len(session_ids) > 1:
        meta["session_ids"] = session_ids
    if built.title:
        meta["custom_title"] = built.title
    if built.usage:
        meta["usage"] = dict(built.usage)
    if built.context_window:
        meta["context_window_size"] = built.context_window
    if built.parent_session:
        meta["parent_session_id"] = built.parent_session
    if built.api_errors:
        meta["api_errors"] = dict(built.api_errors)
    forked = next((r["forkedFrom"] for r in records if isinstance(r.get("forkedFrom"), dict)), None)
    if forked:
        meta["forked_from"] = forked
    for value, name in ((found.abandoned, "records_rewound"), (found.superseded, "records_rewritten"),
                        (found.rewinds, "rewinds")):
        if value:
            meta[name] = value
    if found.partial_tail:
        meta["partial_last_line"] = True
    return meta
