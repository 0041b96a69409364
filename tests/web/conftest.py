"""The `ui` fixture: one `chinvex ui` process per test module, whose log must show no failed page."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from ui_harness import UiRun, running_ui


@pytest.fixture(scope="module")
def ui(tmp_path_factory) -> Iterator[UiRun]:
    with running_ui(tmp_path_factory.mktemp("web_ui")) as run:
        yield run
    assert "Traceback" not in run.log.read_text(), run.log.read_text()[-3000:]  # no page failed
