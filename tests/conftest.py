"""Fixtures and hooks for the whole suite. Every test runs against its own CHINVEX_HOME so
nothing touches the user's real data. What tests share besides fixtures is in helpers.py."""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path

import pytest
from hypothesis import settings

from helpers import (FIXTURES, CliResult, assert_no_traceback, run_cli, snapshot_commit,
                     snapshot_repository)
from shared_indexes import Build, PublishedBuild, claim, xdist_worker


# Property tests draw the same examples on every run ("repeatable", the default: a failure in CI
# is the change's, not the draw's); `HYPOTHESIS_PROFILE=explore pytest …` draws new ones, as
# many as each test asks, to look for inputs nobody has tried yet.
settings.register_profile("repeatable", derandomize=True)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "repeatable"))


def pytest_configure(config) -> None:
    """Tests run with SIGINT as a terminal gives it, whatever started the run. A shell without job
    control starts a background command (`scripts/test.sh … &`) with SIGINT ignored; Python then
    installs no KeyboardInterrupt, the xdist workers inherit the ignoring, and so does every
    program a test starts: a `chinvex ingest` sent Ctrl-C by a test ran on to the end."""
    if (signal.getsignal(signal.SIGINT) is signal.SIG_IGN
            and threading.current_thread() is threading.main_thread()):
        signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(autouse=True)
def chinvex_home(tmp_path_factory, monkeypatch) -> Path:
    home = tmp_path_factory.mktemp("chinvex_home")
    monkeypatch.setenv("CHINVEX_HOME", str(home))
    monkeypatch.delenv("CHINVEX_CONTEXTS_ROOT", raising=False)
    monkeypatch.delenv("CHINVEX_INDEXES_ROOT", raising=False)
    monkeypatch.delenv("CHINVEX_CONTEXT", raising=False)
    monkeypatch.setenv("ANONYMIZED_TELEMETRY", "False")
    # A developer's own LLM settings must not reach the tests: no answer may go to a real API.
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_PROFILE", "ANTHROPIC_BASE_URL",
                 "OLLAMA_HOST"):
        monkeypatch.delenv(name, raising=False)
    return home


@pytest.fixture
def cli():
    return run_cli


# -- the session's shared indexes, built in the background ------------------------------------
# Two session fixtures embed a whole corpus: tests/fixtures/samples (~40 s of CPU) and a snapshot
# of this repository (~3 min of CPU, the largest single cost of the suite). Both are built by the
# real `chinvex context create` and `chinvex ingest`, as subprocesses, from the start of the
# session, one after the other on a background thread, at the lowest CPU priority (nice 19): on
# CI's two cores they use the core the test process leaves idle, and give way to the tests
# whenever those need both. The modules that read them run last (pytest_collection_modifyitems),
# so that the builds are usually done when they are needed. A fixture whose build has not finished
# waits for it (and raises its priority back to normal, where the system allows), then checks its
# exit codes and summary exactly as when it ran the commands itself. Under pytest-xdist one
# worker builds each index for the whole run (tests/shared_indexes.py).

SHARED_INDEXES = ("fixtures_context", "repo_index")
"""The session fixtures built in the background, in the order they are built and read."""


def _shared_indexes_of(item: pytest.Item) -> set[str]:
    return set(SHARED_INDEXES) & set(getattr(item, "fixturenames", ()))


def pytest_collection_modifyitems(config, items):
    """Modules that read a shared index run after all others (those that read the repository
    index last), in their usual order otherwise; tests inside a module keep their order, so
    module fixtures are built once."""
    used: dict[Path, set[str]] = {}
    for item in items:
        used.setdefault(Path(item.path), set()).update(_shared_indexes_of(item))

    def rank(item: pytest.Item) -> int:
        found = used.get(Path(item.path), set())
        return max((SHARED_INDEXES.index(name) + 1 for name in found), default=0)

    items[:] = sorted(items, key=rank)


def _fixtures_steps() -> list[list[str]]:
    return [["context", "create", "fixtures", "--codex-sessions", str(FIXTURES / "codex-rollout"),
             "--chat-root", str(FIXTURES / "chatgpt-export"),
             "--claude-sessions", str(FIXTURES / "claude-code")],
            ["ingest", "--context", "fixtures", "--json"]]


def _repo_steps(root: Path) -> list[list[str]]:
    return [["context", "create", "chinvex", "--repo", str(root)],
            ["ingest", "--context", "chinvex", "--json"]]


_BUILDS: dict[str, tuple[Build | PublishedBuild, dict]] = {}
"""Fixture name -> (its background build, what the fixture yields besides the summary)."""

BUILD_TIMEOUT = 3600.0


def _base_env(home: Path) -> dict[str, str]:
    """What `run_cli(..., env={"CHINVEX_HOME": home})` gives a test (see `chinvex_home`)."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("CHINVEX_CONTEXTS_ROOT", "CHINVEX_INDEXES_ROOT", "CHINVEX_CONTEXT")}
    env.update(ANONYMIZED_TELEMETRY="False", CHINVEX_HOME=str(home))
    return env


def _plan(name: str, tmp_path_factory) -> tuple[Build | PublishedBuild, dict]:
    """This process's build of a shared index; under pytest-xdist, the build of the worker that
    claimed it first (in the run's shared temporary folder), which may be another worker's."""
    folder = None
    if xdist_worker() is not None:
        base = folder = tmp_path_factory.getbasetemp().parent / "shared-indexes" / name
        owner = claim(folder)
    else:
        base, owner = tmp_path_factory.mktemp(name), None
    home = base / "home"
    extra: dict = {"home": home, "env": {"CHINVEX_HOME": str(home)}}
    if name == "repo_index":
        extra["root"] = base / "chinvex-src"
    if owner is not None:
        build: Build | PublishedBuild = PublishedBuild(name, folder, owner, BUILD_TIMEOUT)
    else:
        if name == "repo_index" and not snapshot_commit(extra["root"]):
            snapshot_repository(extra["root"])
        steps = _repo_steps(extra["root"]) if name == "repo_index" else _fixtures_steps()
        build = Build(name, steps, _base_env(home), timeout=BUILD_TIMEOUT, folder=folder)
    _BUILDS[name] = (build, extra)
    return build, extra


@pytest.fixture(scope="session", autouse=True)
def _shared_index_builds(request, tmp_path_factory):
    """Starts the background builds of the shared indexes this session's tests read."""
    wanted = set().union(*(_shared_indexes_of(item) for item in request.session.items))
    builds = [_plan(name, tmp_path_factory)[0] for name in SHARED_INDEXES if name in wanted]
    own = [build for build in builds if isinstance(build, Build)]
    thread = None
    if own:
        thread = threading.Thread(target=lambda: [b.run() for b in own], name="shared-index-builds",
                                  daemon=True)
        thread.start()
    yield
    for build in builds:
        build.finish()
    if thread is not None:
        thread.join(timeout=60)
    _BUILDS.clear()


def _built(name: str, tmp_path_factory) -> tuple[list[CliResult], dict]:
    """The results of a shared index's commands (run now, in the foreground, when the session
    did not plan it: a fixture asked for by name at run time)."""
    if name not in _BUILDS:
        build = _plan(name, tmp_path_factory)[0]
        if isinstance(build, Build):
            build.run()
    build, extra = _BUILDS[name]
    return build.wait(), extra


@pytest.fixture(scope="session")
def repo_index(_shared_index_builds, tmp_path_factory):
    """A context named "chinvex" over this repository's engine source and docs as they are at
    helpers.GOLDEN_CORPUS_COMMIT (in a clone without that commit: as they are when the session
    starts), ingested once per session with the real embedder, in the background (see above).
    Yields {"home", "env", "root", "summary"}; pass `env=` to run_cli."""
    results, extra = _built("repo_index", tmp_path_factory)
    created = results[0]
    assert created.code == 0, created
    result = results[1]
    assert result.code == 0, result
    return {**extra, "summary": result.json}


@pytest.fixture(scope="session")
def fixtures_context(_shared_index_builds, tmp_path_factory):
    """A context named "fixtures" over tests/fixtures/samples as golden_queries/README.md describes
    (Codex rollouts, ChatGPT exports, Claude Code transcripts), ingested once per session with
    the real embedder, in the background (see above). The ingest exits 1: the fixtures hold a
    file that is deliberately not a rollout. Yields {"home", "env", "summary"}."""
    results, extra = _built("fixtures_context", tmp_path_factory)
    created = results[0]
    assert created.code == 0, created
    result = results[1]
    assert_no_traceback(result)
    summary = result.json
    assert summary["sources"]["indexed"] > 0 and summary["chunks"]["embedded"] > 0, result
    return {**extra, "summary": summary}




def _fixture_files() -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(FIXTURES)): (p.stat().st_mtime_ns, p.stat().st_size)
            for p in FIXTURES.rglob("*") if p.is_file()}


def pytest_sessionstart(session) -> None:
    session.config._fixture_files = _fixture_files()


def pytest_sessionfinish(session, exitstatus) -> None:
    """Tests read the samples under tests/fixtures and never write there: a program started on
    a fixture folder (Codex's app-server on a CODEX_HOME, say) must be given a copy. A file that
    appeared, changed or went away there during the run fails the session, naming it."""
    before = getattr(session.config, "_fixture_files", None)
    if before is None:
        return
    after = _fixture_files()
    changed = sorted({name for name, stamp in after.items() if before.get(name) != stamp} | (before.keys() - after.keys()))
    if changed:
        shown = ", ".join(changed[:5]) + (f" and {len(changed) - 5} more" if len(changed) > 5 else "")
        print(f"\ntests wrote into {FIXTURES}: {shown}")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
