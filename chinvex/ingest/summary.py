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


def skip_lines(skipped: dict[str, int]) -> list[str]:
    """The human summary's lines about files not indexed. Generated/data files get a sentence
    of their own: they are the skips a user may want back (`include_generated`), and a count
    hidden among "binary" and "empty" would not say so."""
    lines: list[str] = []
    generated = skipped.get(GENERATED_SKIP, 0)
    if generated:
        noun = "file" if generated == 1 else "files"
        lines.append(f"skipped {generated} generated/data {noun} (listed by ingest --verbose; "
                     "context.json include_generated indexes them)")
    rest = ", ".join(f"{n} {reason}" for reason, n in skipped.items() if reason != GENERATED_SKIP)
    if rest:
        lines.append(f"not indexed: {rest}")
    return lines
