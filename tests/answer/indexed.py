"""Real indexes for the answer tests that ask end to end: a context created over some folders and
ingested (SQLite, Chroma, the built-in embedder), as a user's `chinvex ingest` would."""

from __future__ import annotations

from pathlib import Path

import pytest


def ingested(home: Path, name: str, includes: dict[str, list[str]]):
    """The config of context `name` over `includes`, created in `home` and ingested.
    `CHINVEX_HOME` is set only meanwhile: an answer reads the index paths the config holds."""
    from chinvex.context.registry import Registry
    from chinvex.ingest.pipeline import IngestOptions, run_ingest

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CHINVEX_HOME", str(home))
        Registry().create(name, includes=includes)
        config = Registry().resolve(name)
        summary = run_ingest(config, IngestOptions())
        assert summary.ok, summary.errors
    return config
