"""Shared fixtures of the answer tests."""

from __future__ import annotations

import pytest
from helpers import FIXTURES
from indexed import ingested

CHATLORE = FIXTURES / "chatgpt-export" / "chatlore"


@pytest.fixture(scope="module")
def lore(tmp_path_factory):
    """A context over a real ChatGPT export (3 chunks), ingested once for each module using it."""
    home = tmp_path_factory.mktemp("lore_home")
    return {"home": home, "config": ingested(home, "lore", {"chat_roots": [str(CHATLORE)]})}
