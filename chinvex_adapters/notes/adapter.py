"""NotesAdapter: one Document per markdown or plain-text note of a notes folder (an Obsidian
vault, a Zettelkasten, a folder of .txt files)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

from chinvex.files.frontmatter import front_matter_date, split_front_matter
from chinvex.ids import doc_id_for
from chinvex.models import Document
from chinvex.models.sources import (
    AdapterDefaults,
    AdapterOptions,
    ParseReport,
    SkippedSource,
    SourceCandidate,
)
from chinvex_adapters.kit.filetype import extension_of
from chinvex_adapters.kit.gitwalk import ALWAYS_SKIP_DIRS, Reason
from chinvex_adapters.kit.scan import ScanSpec, scan
from chinvex_adapters.kit.textfile import (
    TextFile,
    candidate_file,
    candidate_rel_path,
    mtime_datetime,
    note_replacements,
    read_candidate,
)
from chinvex_adapters.notes.obsidian import (
    alias_list,
    first_h1,
    inline_tags,
    mask_code,
    string_list,
    wikilinks,
)

NOTE_LANGUAGES = {"md": "markdown", "markdown": "markdown", "txt": "text"}

# Hidden folders (.obsidian, .trash, .git, ...) are skipped by the hidden rule as well.
NOTE_SKIP_DIRS = ALWAYS_SKIP_DIRS | {".obsidian", ".trash"}


def note_name_rule(name: str) -> Reason | None:
    if extension_of(name) not in NOTE_LANGUAGES:
        return "not_supported", "not a note (.md, .markdown or .txt)"
    return None


NOTES_SCAN = ScanSpec(
    source_type="note",
    adapter="notes",
    kind="note folder",
    use_git=False,  # a vault is walked even inside a repository: its own .gitignore applies
    name_rule=note_name_rule,
    skip_dirs=NOTE_SKIP_DIRS,
    skip_hidden=True,
)

_CREATED_KEYS = ("created", "date", "created_at", "date_created")
_UPDATED_KEYS = ("updated", "modified", "updated_at", "last_modified", "date_modified")


class NotesAdapter(AdapterDefaults):
    name = "notes"
    source_type = "note"
    parser_version = "notes_v1"
    include_key = "note_roots"

    def enumerate(
        self, root: Path, options: AdapterOptions
    ) -> Iterator[SourceCandidate | SkippedSource]:
        return scan(root, options, NOTES_SCAN)

    def parse(
        self, candidate: SourceCandidate, report: ParseReport, previous_state: dict[str, Any] | None
    ) -> Iterator[Document]:
        yield note_document(read_candidate(candidate), candidate, report)


def note_document(tf: TextFile, candidate: SourceCandidate, report: ParseReport) -> Document:
    """One note as a `note` Document: title, tags, aliases, dates and description from its
    front matter and body. Shared with the claude_code adapter, whose memory files are notes
    too, so both read front matter, titles and tags the same way."""
    path = candidate_file(candidate)
    note_replacements(path, tf, report)
    rel = candidate_rel_path(candidate)
    text = tf.text

    fm = split_front_matter(text)
    if fm.error:
        report.warnings.append(f"{path}: {fm.error}")
        report.counts["front_matter_invalid"] += 1
    props = fm.data
    keyed = {key.lower(): value for key, value in props.items()}  # `Tags:` is `tags:`
    body = text[fm.end :]
    masked = mask_code(body)

    tags = string_list(keyed.get("tags")) + string_list(keyed.get("tag"))
    tags = _dedupe(tags + inline_tags(masked))
    aliases = _dedupe(alias_list(keyed.get("aliases")) + alias_list(keyed.get("alias")))

    title = note_title(_first_scalar(keyed, ("title", "name")), first_h1(masked, body), rel,
                       candidate.source_uri)

    created = _first_date(keyed, _CREATED_KEYS)
    updated = _first_date(keyed, _UPDATED_KEYS) or mtime_datetime(tf.mtime_ns)
    metadata: dict[str, Any] = {
        "path": rel,
        "root": candidate.root,
        "language": NOTE_LANGUAGES.get(extension_of(rel), "text"),
        "front_matter": props,
        "tags": tags,
        "wikilinks": wikilinks(masked),
        "aliases": aliases,
        "size_bytes": tf.size_bytes,
        "encoding": tf.encoding,
        "body_start": fm.end,
    }
    description = _first_scalar(keyed, ("description", "summary"))
    if description is not None and str(description).strip():
        metadata["description"] = str(description).strip()

    return Document(
        doc_id=doc_id_for("note", candidate.source_uri),
        source_type="note",
        source_uri=candidate.source_uri,
        title=title,
        created_at=created,
        updated_at=updated,
        text=text,
        metadata=metadata,
    )


def _first_scalar(keyed: dict[str, Any], keys: tuple[str, ...]) -> Any:
    """The first of `keys` holding a non-blank string or a number (a list or a mapping is no
    title or description)."""
    for key in keys:
        value = keyed.get(key)
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            continue
        if str(value).strip():
            return value
    return None


def note_title(front_matter_title: Any, h1: str | None, rel: str, source_uri: str) -> str:
    """The first non-blank of: the front matter title (or `name`, as Claude Code memory files
    call it), the first H1, the file name without its extension, the file name, the relative
    path, the source URI. Never empty: a note named ` .md` holding only whitespace still needs
    a title to be listed and cited by."""
    candidates: list[Any] = []
    if isinstance(front_matter_title, (str, int, float)) and not isinstance(front_matter_title, bool):
        candidates.append(front_matter_title)
    path = Path(rel)
    candidates += [h1, path.stem, path.name, rel, source_uri]
    for candidate in candidates:
        text = str(candidate).strip() if candidate is not None else ""
        if text:
            return text
    return "untitled note"


def _first_date(raw: dict[str, Any], keys: tuple[str, ...]) -> datetime | None:
    for key in keys:
        if key in raw:
            parsed = front_matter_date(raw[key])
            if parsed is not None:
                return parsed
    return None


def _dedupe(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))
