"""Every embedding test runs the installed model file unless it sets the override itself."""

from __future__ import annotations

import pytest

from chinvex.embedding.builtin import ENV_MODEL_PATH, ENV_MODEL_SHA256


@pytest.fixture(autouse=True)
def _no_model_env(monkeypatch):
    monkeypatch.delenv(ENV_MODEL_PATH, raising=False)
    monkeypatch.delenv(ENV_MODEL_SHA256, raising=False)
