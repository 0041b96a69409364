"""Top-level commands other than `context` (ingest, search, answer, ...)."""

from __future__ import annotations

from chinvex.cli import app  # noqa: F401
