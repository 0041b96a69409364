"""Fixtures of the opencode adapter tests."""

from __future__ import annotations

import pytest
from opencode_support import SAMPLES, by_thread


@pytest.fixture(scope="module")
def sample() -> dict:
    return by_thread(SAMPLES)
