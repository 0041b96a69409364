"""The record of one ingest run: printed with --json, stored in ingest_runs.stats_json."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field


class SourceMessage(BaseModel):
    source_uri: str
    adapter: str | None = None
    message: str


class Decision(BaseModel):
    source_uri: str
    adapter: str
    action: str  # ingested | skipped | refreshed | removed | error | excluded
    reason: str
    detail: str | None = None


class SourceCounts(BaseModel):
    scanned: int = 0
    indexed: int = 0
    unchanged: int = 0
    refreshed: int = Field(0, description="Touched but unchanged content: fingerprint updated only.")
    removed: int = 0
    errors: int = 0
    skipped_unrecognised: int = Field(0, description=(
        "Files under a root that are not a session of its kind (reported once, then passed over "
        "until they change)."))
    skipped: dict[str, int] = Field(default_factory=dict, description="Files not indexed, by reason.")
    reasons: dict[str, int] = Field(default_factory=dict, description="Why sources were (re)ingested.")


class IngestSummary(BaseModel):
    schema_version: int = 1
    run_id: str
    context: str
    status: str = "running"  # running | completed | completed_with_errors | failed
    started_at: str
    finished_at: str | None = None
    duration_s: float = 0.0
    full: bool = False
    embedder: str | None = None
    sources: SourceCounts = Field(default_factory=SourceCounts)
    documents: dict[str, int] = Field(default_factory=dict)
    chunks: dict[str, int] = Field(default_factory=dict)
    redactions: dict[str, int] = Field(default_factory=dict)
    adapter_counts: dict[str, dict[str, int]] = Field(default_factory=dict)
    errors: list[SourceMessage] = Field(default_factory=list)
    warnings: list[SourceMessage] = Field(default_factory=list)
    imported_kept: int = Field(default=0, description=(
        "Sources imported with `chinvex import` from outside this context's folders: kept, not "
        "removed as vanished (`chinvex rm` removes them)."))
    unrecognised: list[SourceMessage] = Field(default_factory=list, description=(
        "Files skipped this run because they are not a session of their root's kind, and why."))
    decisions: list[Decision] = Field(default_factory=list)
    paths: dict[str, Any] = Field(default_factory=dict, description="Which path each Codex thread took.")
    readers: dict[str, Any] = Field(default_factory=dict, description=(
        "Which reader read each Codex sessions root and why: root -> {reader: app-server|jsonl, why, "
        "mode, codex_home, stopped?}."))

    @property
    def ok(self) -> bool:
        """No source failed. A run with failed sources still completes (exit 0 unless
        `--strict`): one bad file must not stop the others from being indexed."""
        return not self.errors


GENERATED_SKIP = "generated"
"""The skip reason of generated, vendored and data files (`chinvex_adapters/kit/generated.py`)."""


SKIP_WORDS: dict[str, tuple[str, str]] = {
    GENERATED_SKIP: ("generated or data", "generated or data"),
    "excluded_dir": ("in an excluded folder", "in excluded folders"),
    "excluded": ("matching an exclude pattern", "matching exclude patterns"),
    "hidden": ("hidden", "hidden"),
    "ignored": ("ignored", "ignored"),
    "not_supported": ("not a supported format", "not in a supported format"),
    "not_a_rollout": ("not a Codex rollout", "not Codex rollouts"),
    "binary": ("binary", "binary"),
    "empty": ("empty", "empty"),
    "too_large": ("too large", "too large"),
    "unreadable": ("unreadable", "unreadable"),
    "superseded": ("superseded by a plainer copy", "superseded by plainer copies"),
    "submodule": ("a git submodule", "git submodules"),
    "broken_symlink": ("a broken symlink", "broken symlinks"),
    "symlink_dir": ("a symlinked folder", "symlinked folders"),
    "symlink_duplicate": ("a symlink to a file indexed already", "symlinks to files indexed already"),
    "symlink_outside_root": ("a symlink out of its folder", "symlinks out of their folder"),
    "outside_root": ("outside its folder", "outside their folder"),
    "not_regular": ("not a regular file", "not regular files"),
    "undecodable_name": ("a name that is not valid text", "names that are not valid text"),
    "vanished": ("gone while being read", "gone while being read"),
    "invalid_pattern": ("a malformed pattern", "malformed patterns"),
    "git_unavailable": ("git failed; folder walked instead", "git failed; folders walked instead"),
    "ignored_by_git": ("ignored by git; folder walked instead", "ignored by git; folders walked instead"),
}
"""Skip reasons (`SkippedSource.reason`) in words, after their count: one, many."""


def skip_phrase(reason: str, n: int) -> str:
    """`5 in excluded folders`, `1 not a supported format`; an unknown reason's code with spaces."""
    one, many = SKIP_WORDS.get(reason, (reason.replace("_", " "),) * 2)
    return f"{n:,} {one if n == 1 else many}"


def skipped_in_words(skipped: dict[str, int]) -> str:
    """Every reason with its count, in words (`5 in excluded folders, 1 binary`), or ''."""
    return ", ".join(skip_phrase(reason, n) for reason, n in skipped.items() if isinstance(n, int))


def skip_lines(skipped: dict[str, int], why: dict[str, list[str]] | None = None) -> list[str]:
    """The human summary's lines about files not indexed. Generated/data files get a sentence
    of their own: they are the skips a user may want back (`include_generated`), and a count
    hidden among "binary" and "empty" would not say so. `why` (reason -> "path: detail") is said
    after its reason's count: a source the user named and that was not indexed says why
    without --verbose."""
    lines: list[str] = []
    generated = skipped.get(GENERATED_SKIP, 0)
    if generated:
        noun = "file" if generated == 1 else "files"
        lines.append(f"skipped {generated} generated/data {noun} (listed by ingest --verbose; "
                     "context.json include_generated indexes them)")
    parts = []
    for reason, n in skipped.items():
        if reason == GENERATED_SKIP:
            continue
        details = (why or {}).get(reason)
        parts.append(skip_phrase(reason, n) + (f" ({'; '.join(details)})" if details else ""))
    if parts:
        lines.append(f"not indexed: {', '.join(parts)}")
    return lines
