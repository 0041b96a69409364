"""Shared fixtures of the answer tests."""

from __future__ import annotations

import pytest
from helpers import FIXTURES

CHATLORE = FIXTURES / "chatgpt-export" / "chatlore"


@pytest.fixture(scope="module")
def lore(tmp_path_factory):
    """A context over a real ChatGPT export (3 chunks), ingested once for each module using it."""
    from chinvex.context.registry import Registry
    from chinvex.ingest.pipeline import IngestOptions, run_ingest

    home = tmp_path_factory.mktemp("lore_home")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CHINVEX_HOME", str(home))
        Registry().create("lore", includes={"chat_roots": [str(CHATLORE)]})
        config = Registry().resolve("lore")
        summary = run_ingest(config, IngestOptions())
        assert summary.ok, summary.errors
    return {"home": home, "config": config}
