"""Claude Code's auto memory: `<project>/memory/MEMORY.md` and the topic files beside it.

Under `~/.claude/projects/<encoded-cwd>/memory/` Claude Code keeps notes for itself about that
project: `MEMORY.md`, an index it loads at the start of every session (one line per memory,
`- [Title](file.md) — hook`), and one markdown file per memory, usually with front matter
`name`, `description` and `type` (`user`, `feedback`, `project` or `reference`). The user reads
and edits them like any other note.

Each file becomes a `note` Document, read by the notes adapter's own reader, so front matter,
titles, tags and dates mean what they mean in a vault. `note` rather than `agent_session`: they
are distilled notes, not transcripts (their chunks are markdown sections, not turns), and at the
note weight (0.7) an agent's memory never outranks the user's own note saying the same thing,
while `--source-types note` finds both. (`memory` is the RECALL tools' type: documents without a
source file, never removed by ingest, which these are not.)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from chinvex.models import Document
from chinvex.models.sources import ParseReport, SourceCandidate
from chinvex_adapters.kit.textfile import read_candidate
from chinvex_adapters.notes.adapter import note_document

MEMORY_DIR = "memory"
MEMORY_INDEX = "MEMORY.md"
MEMORY_EXTENSIONS = (".md", ".markdown")
CLAUDE_MEMORY_SOURCE_TYPE = "note"
MEMORY_FORMAT = "claude_code_memory"


def is_memory_file(anchor: str, rel: str) -> bool:
    """A markdown file inside a `memory` folder. `rel` is its path below the walked root and
    `anchor` the name of the folder it is relative to (the root, or the folder holding a root
    that is a file), so a root may also be one project's memory folder or a single file."""
    folders = [anchor, *rel.split("/")[:-1]]
    return rel.lower().endswith(MEMORY_EXTENSIONS) and MEMORY_DIR in folders


def project_of(path: Path) -> str | None:
    """The folder holding the `memory` folder (Claude Code's encoded project path, e.g.
    `-home-dev-code-atlas`), None when there is none."""
    parts = path.parts
    for k in range(len(parts) - 2, 0, -1):
        if parts[k] == MEMORY_DIR:
            return parts[k - 1] or None
    return None


def memory_extra(path: Path, rel: str) -> dict[str, Any]:
    """What enumeration records on a memory file's candidate."""
    extra: dict[str, Any] = {"kind": "memory", "path": rel}
    project = project_of(path)
    if project:
        extra["project"] = project
    return extra


def parse_memory(candidate: SourceCandidate, report: ParseReport) -> Document:
    """One memory file as a note; SourceError (from the reader) when it cannot be read."""
    path = Path(candidate.path or candidate.source_uri)
    doc = note_document(read_candidate(candidate), candidate, report)
    project = candidate.extra.get("project") or project_of(path.absolute())
    front = {str(k).lower(): v for k, v in doc.metadata.get("front_matter", {}).items()}
    is_index = path.name == MEMORY_INDEX
    metadata: dict[str, Any] = {**doc.metadata, "format": MEMORY_FORMAT, "memory_index": is_index}
    if project:
        metadata["project_dir"] = project
    memory_type = front.get("type")
    if isinstance(memory_type, str) and memory_type.strip():
        metadata["memory_type"] = memory_type.strip()
    title = doc.title
    named = any(isinstance(front.get(k), (str, int, float)) and not isinstance(front[k], bool)
                and str(front[k]).strip() for k in ("title", "name"))
    if is_index and not named:
        # its H1 is usually just "Memory": the project says which index this is
        title = f"Claude Code memory index ({project})" if project else "Claude Code memory index"
    return doc.model_copy(update={"title": title, "metadata": metadata})
