"""Fixtures of the cx_appserver tests: the Codex binary, fake and live servers, seeded Codex homes."""

from __future__ import annotations

from pathlib import Path

import pytest
from codex_ingest_support import (
    create_context,
    ingest,
    listed_ids,
    run_summary,
    seed_home,
    servers_left,
    stored_threads,
    stored_turns,
)
from helpers import assert_no_traceback, codex_binary_or_skip, run_cli
from live_support import (
    LEGACY_ID,
    LEGACY_NAME,
    ROLLOUTS,
    TRUNCATED_ID,
    _copy,
    record_paginated_thread,
)
from replay_support import FakeAppServer

from chinvex_adapters.cx_appserver.client import AppServerClient
from chinvex_adapters.cx_appserver.launch import ClientConfig


@pytest.fixture(scope="module")
def codex_bin() -> str:
    return codex_binary_or_skip()


@pytest.fixture(scope="module")
def codex_home(tmp_path_factory) -> Path:
    home = tmp_path_factory.mktemp("cxlive") / ".codex"
    home.mkdir()  # the server refuses a CODEX_HOME that does not exist
    sessions = home / "sessions"
    for src in (ROLLOUTS / "public/localpush/sessions/2026/02/23").glob("rollout-*.jsonl"):
        _copy(src, sessions / "2026/02/23" / src.name)
    codemie = ROLLOUTS / "public/codemie-code/rollout-2026-05-11T13-28-45-019e1695-0522-7c83-8b39-0dd379793f80.jsonl"
    _copy(codemie, sessions / "2026/05/11" / codemie.name)
    for kind in ("legacy", "paginated"):
        for src in (ROLLOUTS / "generated-0.169.0" / kind / "sessions").rglob("rollout-*.jsonl"):
            _copy(src, sessions / src.relative_to(ROLLOUTS / "generated-0.169.0" / kind / "sessions"))
    zst = ROLLOUTS / "edge-cases/sessions/2026/11/22" / (LEGACY_NAME + ".zst")
    _copy(zst, sessions / "2026/11/22" / zst.name)  # beside its plain twin, as its path shows
    _copy(ROLLOUTS / "edge-cases/truncated-last-line.jsonl",
          sessions / "2026/11/22" / f"rollout-2026-11-22T02-29-41-{TRUNCATED_ID}.jsonl",
          replace=(LEGACY_ID.encode(), TRUNCATED_ID.encode()))
    return home


@pytest.fixture(scope="module")
def dup_home(tmp_path_factory) -> Path:
    home = tmp_path_factory.mktemp("cxdup") / ".codex"
    home.mkdir()
    zst = ROLLOUTS / "edge-cases/sessions/2026/11/22" / (LEGACY_NAME + ".zst")
    _copy(zst, home / "sessions/2026/11/22" / zst.name)
    _copy(ROLLOUTS / "edge-cases/truncated-last-line.jsonl",
          home / "sessions/2026/11/23" / f"rollout-2026-11-23T08-00-00-{LEGACY_ID}.jsonl")
    return home


@pytest.fixture
def make_client():
    made: list[tuple[AppServerClient, FakeAppServer]] = []

    def _make(fake: FakeAppServer, *, handshake: bool = True, timeout: float = 5.0) -> AppServerClient:
        client = AppServerClient(ClientConfig(request_timeout_s=timeout), transport=fake.transport())
        client.start(handshake=handshake)
        made.append((client, fake))
        return client

    yield _make
    for client, _fake in made:
        client.close()


@pytest.fixture(scope="module")
def full_run(codex_bin, tmp_path_factory):
    """One context over the full home: first ingest, then a second one."""
    base = tmp_path_factory.mktemp("cxfull")
    home = seed_home(base / ".codex", with_codemie=True)
    chinvex_home = base / "chinvex"
    create_context(chinvex_home, "Cx", home, {"timeout_s": 60})
    env = {"CHINVEX_CODEX_BIN": codex_bin}
    first = ingest(chinvex_home, "Cx", env=env)
    stored = stored_threads(chinvex_home, "Cx")
    second = ingest(chinvex_home, "Cx", env=env)
    assert servers_left(home) == []  # every app-server child was stopped with its run
    return {"home": home, "chinvex_home": chinvex_home, "first": first, "second": second,
            "stored": stored, "listed": listed_ids(codex_bin, home), "codex_bin": codex_bin}


@pytest.fixture(scope="module")
def appserver_run(codex_bin, tmp_path_factory):
    """The full home, plus a paginated thread the real server wrote itself (so, unlike the
    copied paginated fixture, it has a projection), ingested with
    `codex_appserver.legacy_read = "appserver"`: every listed thread's content is read through
    the server (thread/read for legacy threads, thread/turns/list for paginated ones). The
    first run is printed for a human with --verbose (its summary is read back from
    ingest_runs), the second with --json."""
    base = tmp_path_factory.mktemp("cxserver")
    home = seed_home(base / ".codex", with_codemie=True)
    live = record_paginated_thread(codex_bin, home)
    chinvex_home = base / "chinvex"
    create_context(chinvex_home, "Srv", home, {"legacy_read": "appserver", "timeout_s": 60})
    env = {"CHINVEX_HOME": str(chinvex_home), "CHINVEX_CODEX_BIN": codex_bin}
    human = run_cli("ingest", "--context", "Srv", "--verbose", env=env)
    assert_no_traceback(human)
    stored = stored_threads(chinvex_home, "Srv")
    turns = {doc_id: stored_turns(chinvex_home, "Srv", doc_id) for doc_id in stored}
    second = ingest(chinvex_home, "Srv", env=env)
    assert servers_left(home) == []
    return {"home": home, "chinvex_home": chinvex_home, "live": live, "human": human,
            "first": run_summary(chinvex_home, "Srv", 0), "second": second, "stored": stored,
            "turns": turns, "listed": listed_ids(codex_bin, home)}
