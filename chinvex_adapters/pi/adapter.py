"""The `pi` adapter: sessions of the pi coding agent (`~/.pi/agent/sessions`) and of OpenClaw,
which embeds pi and writes the same transcripts (`~/.openclaw/agents/<agent>/sessions`). One
conversation per transcript file; its `source` is "openclaw" when the file lies in an OpenClaw
store or holds records only OpenClaw writes, else "pi". The thread id is the session id of the
file's header (a Telegram topic file of OpenClaw, which shares its session's id, keeps its
file name).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from chinvex.models import ConversationDoc
from chinvex.models.sources import (
    AdapterOptions,
    ParseReport,
    SkippedSource,
    SourceCandidate,
    SourceError,
    UnrecognisedSource,
)
from chinvex_adapters.kit.jsonl import partial_tail_warning
from chinvex_adapters.kit.sessionfile import SessionFileAdapter, conversation
from chinvex_adapters.kit.text import as_str
from chinvex_adapters.kit.walk import WalkEntry, walk
from chinvex_adapters.walked import walked_sources

from .layout import not_transcript, openclaw_path, stem_id, walk_roots
from .openclaw import SessionStores, store_title
from .records import Entries, header_of
from .transcript import PiReader


class PiAdapter(SessionFileAdapter):
    name = "pi"
    label = "pi or OpenClaw session"
    parser_version = "pi_v1"

    def __init__(self) -> None:
        self.stores = SessionStores()

    # -- enumeration -----------------------------------------------------------------------
    def enumerate(self, root: Path, options: AdapterOptions) -> Iterator[SourceCandidate | SkippedSource]:
        root_str = str(Path(root).expanduser().absolute())
        for folder in walk_roots(Path(root_str)):
            yield from walked_sources(walk(folder, options.excludes), self.source_type,
                                      lambda entry: self._candidate(entry, root_str))

    def accepts(self, rel: str, entry: WalkEntry) -> bool | str:
        why = not_transcript(entry.path.name)
        return True if why is None else why


    # -- routing by content ----------------------------------------------------------------
    def sniff(self, path: Path) -> str | None:
        found, why = header_of(path)
        return None if found is not None else why or "its content is not of this format"

    # -- reading ---------------------------------------------------------------------------
    def parse_file(self, path: Path, report: ParseReport, candidate: SourceCandidate,
                   previous_state: dict[str, Any] | None) -> Iterator[ConversationDoc]:
        header, why = header_of(path)
        if header is None:
            raise UnrecognisedSource(f"{path}: not a {self.label} ({why})")
        cwd = as_str(header.get("cwd"))
        reader = PiReader(report.counts, cwd)
        entries = Entries(path, report.counts)
        try:
            for entry in entries:
                reader.feed(entry)
        except OSError as exc:
            raise SourceError(f"{path}: cannot read: {exc.strerror or exc}") from None
        if entries.partial_tail:
            report.warnings.append(partial_tail_warning(path))
        if reader.headers > 1:
            report.counts["headers_repeated"] += reader.headers - 1
        doc = self._doc(path, header, reader)
        if doc is None:
            report.counts["sessions_without_turns"] += 1
            return
        yield doc

    def _doc(self, path: Path, header: dict[str, Any], reader: PiReader) -> ConversationDoc | None:
        session_id = as_str(header.get("id")) or stem_id(path)
        stem = stem_id(path)
        thread_id = stem if stem != session_id and stem.startswith(session_id) else session_id
        cwd = as_str(header.get("cwd"))
        openclaw = openclaw_path(path) or reader.openclaw or "/.openclaw/" in (cwd or "").replace("\\", "/")
        metadata = _metadata(header, reader)
        title = reader.name
        if openclaw:
            facts = self.stores.entry(path, session_id)
            if facts:
                metadata["openclaw"] = facts
                title = store_title(facts) or title
            parts = path.parts
            if len(parts) >= 4 and parts[-4] == "agents" and parts[-2] == "sessions":
                metadata["agent_id"] = parts[-3]
        if thread_id != session_id:
            metadata["session_id"] = session_id
        turns = reader.b.finish()
        models = list(reader.b.models)
        model = reader.b.models.most_common(1)[0][0] if models else (
            reader.model or as_str(header.get("modelId")))
        return conversation(agent="openclaw" if openclaw else "pi", source_uri=str(path),
                            thread_id=thread_id, turns=turns, title=title, cwd=cwd, model=model,
                            models=models, metadata=metadata)


def _metadata(header: dict[str, Any], reader: PiReader) -> dict[str, Any]:
    """Facts about the session beside its turns: format version, where it branched from, the
    models and thinking levels chosen, what the replies cost and why they stopped."""
    meta: dict[str, Any] = {"format_version": header.get("version", 1)}
    parent = as_str(header.get("parentSession")) or as_str(header.get("branchedFrom"))
    if parent:
        meta["parent_session"] = parent
    if as_str(header.get("modelId")):  # v1 headers name the model the session started with
        meta["initial_model"] = {"provider": as_str(header.get("provider")),
                                 "model": as_str(header.get("modelId")),
                                 "thinking_level": as_str(header.get("thinkingLevel"))}
    if reader.model:
        meta["selected_model"] = reader.model
    if reader.thinking_levels:
        meta["thinking_levels"] = list(dict.fromkeys(reader.thinking_levels))
    if reader.providers:
        meta["providers"] = sorted(reader.providers)
    if reader.stop_reasons:
        meta["stop_reasons"] = dict(reader.stop_reasons)
    if reader.cost:
        meta["cost_usd"] = round(reader.cost, 6)
    if reader.compactions:
        meta["compactions"] = reader.compactions
    if reader.modified_files:
        meta["files_modified_before_compaction"] = list(reader.modified_files)[:200]
    if reader.name:
        meta["session_name"] = reader.name
    return meta
