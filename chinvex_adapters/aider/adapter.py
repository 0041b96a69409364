"""The `aider` adapter: `.aider.chat.history.md` files, found by the repo adapter inside a
repository (the repository is the sessions' project) or under a `--sessions aider=PATH` root.
One conversation per `# aider chat started at` session; its commits and edited files are kept
in the metadata, its SEARCH/REPLACE blocks as file edits of the reply that made them."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from chinvex.ids import sha256_hex
from chinvex.models import ConversationDoc, ToolCall
from chinvex.models.sources import ParseReport, SourceCandidate, SourceError, UnrecognisedSource
from chinvex_adapters.kit.walk import WalkEntry
from chinvex_adapters.kit.sessionfile import SessionFileAdapter, conversation
from chinvex_adapters.kit.sniff import head_bytes
from chinvex_adapters.kit.turns import ConversationBuilder

from .parser import SESSION_START, Session, edits_in_reply, is_marker, output_facts, split_sessions

AIDER_HISTORY = ".aider.chat.history.md"
MAX_BYTES = 256 * 1024 * 1024
NO_MARKER = "no '# aider chat started at' header, '#### ' prompt or '> ' output line"


class AiderAdapter(SessionFileAdapter):
    name = "aider"
    label = "Aider chat history"
    parser_version = "aider_v1"

    def accepts(self, rel: str, entry: WalkEntry) -> bool | str:
        name = rel.rsplit("/", 1)[-1]
        return name == AIDER_HISTORY or name.endswith("chat.history.md")

    def sniff(self, path: Path) -> str | None:
        head = head_bytes(path, 4096).decode("utf-8", "replace").lstrip("\ufeff")
        first = next((line for line in head.splitlines() if line.strip()), "")
        if SESSION_START.match(first.strip()):
            return None
        if path.name != AIDER_HISTORY:
            return "no '# aider chat started at' header"
        # The name is Aider's own: a history may lack its header (cut at the front, or edited),
        # but it holds some line only Aider writes.
        size = path.stat().st_size
        if size == 0:
            return "an empty file"
        if size > MAX_BYTES:
            return None  # not read: parse_file says so
        with path.open("rb") as handle:
            if any(is_marker(raw.decode("utf-8", "replace")) for raw in handle):
                return None
        return NO_MARKER

    def parse_file(self, path: Path, report: ParseReport, candidate: SourceCandidate,
                   previous_state: dict[str, Any] | None) -> Iterator[ConversationDoc]:
        try:
            if path.stat().st_size > MAX_BYTES:
                raise UnrecognisedSource(f"{path}: not read (over {MAX_BYTES:,} bytes)")
            text = path.read_bytes().decode("utf-8", "replace")
        except OSError as exc:
            raise SourceError(f"{path}: cannot read: {exc.strerror or exc}") from None
        project = candidate.extra.get("project") or str(path.parent)
        key = sha256_hex(str(path))[:12]
        seen: set[str] = set()
        mtime = datetime.fromtimestamp(path.stat().st_mtime, timezone.utc)
        for index, session in enumerate(split_sessions(text, report.counts)):
            if session.started is None:
                session.started = mtime  # a history without a header: its file's time
            doc = _session_doc(session, index, path, project, key, seen, report)
            if doc is not None:
                yield doc


def _session_doc(session: Session, index: int, path: Path, project: str, key: str,
                 seen: set[str], report: ParseReport) -> ConversationDoc | None:
    counts = report.counts
    b = ConversationBuilder(counts, cwd=project)
    facts: dict[str, list[str]] = {"applied": [], "commits": [], "models": [], "versions": []}
    for n, block in enumerate(session.blocks):
        text = block.text
        if not text.strip():
            continue
        turn_id = f"l{session.line_no}-b{n}"
        if block.kind == "user":
            b.message("user", text, ts=session.started, turn_id=turn_id)
        elif block.kind == "assistant":
            turn = b.message("assistant", text, ts=session.started, turn_id=turn_id)
            edits = edits_in_reply(text, project)
            if turn is not None and edits:
                turn.meta["edits"] = [e.as_meta() for e in edits]
                counts["file_edits"] += len(edits)
        else:
            found = output_facts(text)
            for k, v in found.items():
                facts[k].extend(v)
            turn = b.message("tool", text, ts=session.started, turn_id=turn_id)
            if turn is not None:
                turn.tool = ToolCall(name="aider")
    turns = b.finish()
    if not any(t.role == "assistant" for t in turns) and not any(t.role == "user" for t in turns):
        counts["sessions_without_messages"] += 1
        return None
    stamp = session.started_text.replace(" ", "T").replace(":", "") or f"part{index}"
    thread_id = f"aider-{key}-{stamp}"
    if thread_id in seen:
        thread_id = f"{thread_id}-{index}"
    seen.add(thread_id)
    metadata: dict[str, Any] = {"history_file": str(path), "session_line": session.line_no,
                                "time_zone": "local time of the machine aider ran on (not recorded)"}
    if facts["commits"]:
        metadata["commits"] = facts["commits"][:200]
    if facts["applied"]:
        metadata["applied_edits"] = list(dict.fromkeys(facts["applied"]))[:200]
    if facts["versions"]:
        metadata["version"] = facts["versions"][-1]
    model = facts["models"][-1] if facts["models"] else None
    return conversation(agent="aider", source_uri=f"{path}#{thread_id}", thread_id=thread_id,
                        turns=turns, cwd=project, model=model, metadata=metadata)
