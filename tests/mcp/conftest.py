"""The `world` fixture of the MCP end-to-end tests (`mcp_harness.build_world`): built once per
test module, since building it ingests two contexts."""

from __future__ import annotations

import pytest
from mcp_harness import World, build_world


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> World:
    return build_world(tmp_path_factory)
