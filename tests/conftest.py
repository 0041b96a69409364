"""Shared test fixtures. Every test runs against its own CHINVEX_HOME so nothing touches the
user's real data; CLI tests drive the installed `chinvex` command as a subprocess (`run_cli`),
or its entry point in this process where the process itself is not the point
(`run_cli_in_process`)."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
FIXTURES = REPO_ROOT / "tests" / "fixtures" / "samples"
"""Real Codex / Claude Code / ChatGPT sample files (provenance: FIXTURES / "PROVENANCE.md")."""
BENCH_DATA = REPO_ROOT / "bench" / "data"
"""The public evaluation sets (bench/data/README.md); tests read LoCoMo's transcripts from here."""
CHINVEX_BIN = Path(sys.executable).parent / "chinvex"


@pytest.fixture(autouse=True)
def chinvex_home(tmp_path_factory, monkeypatch) -> Path:
    home = tmp_path_factory.mktemp("chinvex_home")
    monkeypatch.setenv("CHINVEX_HOME", str(home))
    monkeypatch.delenv("CHINVEX_CONTEXTS_ROOT", raising=False)
    monkeypatch.delenv("CHINVEX_INDEXES_ROOT", raising=False)
    monkeypatch.delenv("CHINVEX_CONTEXT", raising=False)
    monkeypatch.setenv("ANONYMIZED_TELEMETRY", "False")
    return home


class CliResult:
    def __init__(self, proc: subprocess.CompletedProcess[str]):
        self.proc = proc
        self.code = proc.returncode
        self.stdout = proc.stdout
        self.stderr = proc.stderr

    @property
    def json(self):
        try:
            return json.loads(self.stdout)
        except json.JSONDecodeError as exc:  # make failures readable
            raise AssertionError(
                f"stdout is not JSON ({exc}):\n{self.stdout}\nstderr:\n{self.stderr}"
            ) from None

    def __repr__(self) -> str:
        return f"<exit {self.code}\nstdout:\n{self.stdout}\nstderr:\n{self.stderr}>"


def run_cli(*args: str, env: dict[str, str] | None = None, timeout: float = 600,
            cwd: str | Path | None = None, input: str | None = None) -> CliResult:
    full_env = dict(os.environ)
    if env:
        full_env.update(env)
    proc = subprocess.run(
        [str(CHINVEX_BIN), *args], capture_output=True, text=True, env=full_env,
        timeout=timeout, cwd=cwd, input=input,
    )
    return CliResult(proc)


READ_ONLY_PROCESS_COMMANDS = frozenset({"search", "answer", "pack", "query"})


def _open_stores() -> dict:
    """This process's shared Chroma clients (chinvex.storage.vectors), by store."""
    vectors = sys.modules.get("chinvex.storage.vectors")
    return dict(vectors._SharedClient._registry) if vectors is not None else {}


def _close_stores_opened_since(before: set) -> None:
    """What the end of a `chinvex` process does to the Chroma clients its command opened: they
    are closed, so that the next command opens the store from its files again, as a new
    process would, instead of reusing this one's client."""
    vectors = sys.modules.get("chinvex.storage.vectors")
    if vectors is None:
        return
    shared_client = vectors._SharedClient
    with shared_client._registry_lock:
        opened = [shared_client._registry.pop(key) for key in list(shared_client._registry)
                  if key not in before]
    for shared in opened:
        with shared.lock:
            shared.drop_client()
            if shared.gate is not None:
                shared.gate.close()


def run_cli_in_process(*args: str, env: dict[str, str] | None = None, cwd: str | Path | None = None,
                       input: str | None = None) -> CliResult:
    """`run_cli` without starting an interpreter: the same command line through the CLI's own
    entry point (`chinvex.cli.main`: parsing, the command, its output and the exit-code mapping)
    in this process, with `env` added to the environment and `cwd` as the working directory for
    the call, stdin, stdout and stderr replaced by pipes of bytes (not terminals, like the
    subprocess's) and decoded the way `run_cli` decodes them. The environment, the working
    directory and the standard streams are restored afterwards.

    A `chinvex` process costs 0.3 s (`context`) to 1.5 s (`ingest`, `search`: interpreter,
    chromadb, onnxruntime) before it does anything; tests whose point is what a command does,
    not how a process starts or ends, use this. Process-level behaviour (exit codes and stderr
    of a real process, start-up, signals, locks and concurrency between processes) is tested
    through `run_cli`, which every command keeps at least one test of. Not thread-safe.

    Not for the commands that declare their process read-only for good (`search`, `answer`,
    `pack`, `query`: chinvex.storage.vectors.read_only_process), which would change how this
    process opens vector stores from then on."""
    from chinvex.cli import main

    if args and args[0] in READ_ONLY_PROCESS_COMMANDS:
        raise ValueError(f"chinvex {args[0]} makes its process read-only: use run_cli")

    saved_env, saved_cwd = dict(os.environ), os.getcwd()
    saved_streams = sys.stdin, sys.stdout, sys.stderr
    stores_before = set(_open_stores())
    out, err = io.BytesIO(), io.BytesIO()
    stdout = io.TextIOWrapper(out, encoding="utf-8", write_through=True)
    stderr = io.TextIOWrapper(err, encoding="utf-8", write_through=True)
    stdin = io.TextIOWrapper(io.BytesIO((input or "").encode("utf-8")), encoding="utf-8")
    code = 0
    try:
        if env:
            os.environ.update(env)
        if cwd is not None:
            os.chdir(cwd)
        sys.stdin, sys.stdout, sys.stderr = stdin, stdout, stderr
        try:
            main(list(args))
        except SystemExit as exc:
            if exc.code is None:
                code = 0
            elif isinstance(exc.code, int):
                code = exc.code
            else:  # what the interpreter does with sys.exit("message")
                stderr.write(f"{exc.code}\n")
                code = 1
        stdout.flush()
        stderr.flush()
    finally:
        sys.stdin, sys.stdout, sys.stderr = saved_streams
        _close_stores_opened_since(stores_before)
        os.chdir(saved_cwd)
        for key in set(os.environ) - set(saved_env):
            del os.environ[key]
        for key, value in saved_env.items():
            if os.environ.get(key) != value:
                os.environ[key] = value

    def decoded(data: bytes) -> str:  # as subprocess.run(text=True) reads a pipe
        return io.TextIOWrapper(io.BytesIO(data), encoding="utf-8").read()

    return CliResult(subprocess.CompletedProcess(["chinvex", *args], code, decoded(out.getvalue()),
                                                 decoded(err.getvalue())))


@pytest.fixture
def cli():
    return run_cli


def assert_no_traceback(result: CliResult) -> None:
    assert "Traceback" not in result.stderr and "Traceback" not in result.stdout, result


def snapshot_repository(target: Path) -> Path:
    """Copy this repository's engine source and docs (as tracked by git, or as on disk) so that
    tests indexing "this repository" see a stable tree while people keep editing."""
    import shutil

    files: list[str]
    try:
        out = subprocess.run(["git", "-C", str(REPO_ROOT), "ls-files", "-co", "--exclude-standard",
                              "chinvex", "adapters", "docs", "README.md"],
                             capture_output=True, text=True, check=True).stdout
        files = [line for line in out.splitlines() if line]
    except (OSError, subprocess.CalledProcessError):
        files = [str(p.relative_to(REPO_ROOT)) for base in ("chinvex", "adapters", "docs")
                 for p in (REPO_ROOT / base).rglob("*") if p.is_file()] + ["README.md"]
    for rel in files:
        if "__pycache__" in rel:
            continue
        source = REPO_ROOT / rel
        if source.is_file():
            (target / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / rel)
    return target


# -- the session's shared indexes, built in the background ------------------------------------
# Two session fixtures embed a whole corpus: tests/fixtures/samples (~40 s of CPU) and a snapshot
# of this repository (~3 min of CPU, the largest single cost of the suite). Both are built by the
# real `chinvex context create` and `chinvex ingest`, as subprocesses, from the start of the
# session, one after the other on a background thread, at the lowest CPU priority (nice 19): on
# CI's two cores they use the core the test process leaves idle, and give way to the tests
# whenever those need both. The modules that read them run last (pytest_collection_modifyitems),
# so that the builds are usually done when they are needed. A fixture whose build has not finished
# waits for it (and raises its priority back to normal, where the system allows), then checks its
# exit codes and summary exactly as when it ran the commands itself.

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


class _Build:
    """`chinvex` commands run one after the other in the background (see above)."""

    def __init__(self, name: str, steps: list[list[str]], env: dict[str, str], timeout: float):
        self.name, self.steps, self.env, self.timeout = name, steps, env, timeout
        self.results: list[CliResult] = []
        self.error: BaseException | None = None
        self.proc: subprocess.Popen | None = None
        self.cancelled = False
        self.done = threading.Event()

    def run(self) -> None:
        nice = shutil.which("nice")
        prefix = [nice, "-n", "19"] if nice else []
        try:
            for index, args in enumerate(self.steps):
                if self.cancelled:
                    break
                self.proc = subprocess.Popen([*prefix, str(CHINVEX_BIN), *args], env=self.env, text=True,
                                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
                try:
                    out, err = self.proc.communicate(timeout=self.timeout)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    out, err = self.proc.communicate()
                    err += f"\n(killed by the test suite after {self.timeout:.0f} s)"
                self.results.append(CliResult(subprocess.CompletedProcess(
                    self.proc.args, self.proc.returncode, out, err)))
                if self.proc.returncode != 0 and index < len(self.steps) - 1:
                    break  # the fixture reports the failed step
        except BaseException as exc:  # reported by the fixture, in the test that needs it
            self.error = exc
        finally:
            self.done.set()

    def _raise_priority(self) -> None:
        """Back to nice 0 (every thread of the running command), when the system allows it."""
        proc = self.proc
        if proc is None or proc.poll() is not None or not hasattr(os, "setpriority"):
            return
        try:
            tasks = [int(t) for t in os.listdir(f"/proc/{proc.pid}/task")]
        except OSError:
            tasks = [proc.pid]
        for task in tasks:
            try:
                os.setpriority(os.PRIO_PROCESS, task, 0)
            except OSError:
                pass

    def wait(self) -> list[CliResult]:
        while not self.done.is_set():
            self._raise_priority()
            self.done.wait(2.0)
        if self.error is not None:
            raise self.error
        return self.results

    def stop(self) -> None:
        self.cancelled = True
        proc = self.proc
        if proc is not None and proc.poll() is None:
            proc.kill()


def _fixtures_steps() -> list[list[str]]:
    return [["context", "create", "fixtures", "--codex-sessions", str(FIXTURES / "codex-rollout"),
             "--chat-root", str(FIXTURES / "chatgpt-export"),
             "--claude-sessions", str(FIXTURES / "claude-code")],
            ["ingest", "--context", "fixtures", "--json"]]


def _repo_steps(root: Path) -> list[list[str]]:
    return [["context", "create", "chinvex", "--repo", str(root)],
            ["ingest", "--context", "chinvex", "--json"]]


_BUILDS: dict[str, tuple[_Build, dict]] = {}
"""Fixture name -> (its background build, what the fixture yields besides the summary)."""


def _base_env(home: Path) -> dict[str, str]:
    """What `run_cli(..., env={"CHINVEX_HOME": home})` gives a test (see `chinvex_home`)."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("CHINVEX_CONTEXTS_ROOT", "CHINVEX_INDEXES_ROOT", "CHINVEX_CONTEXT")}
    env.update(ANONYMIZED_TELEMETRY="False", CHINVEX_HOME=str(home))
    return env


def _plan(name: str, tmp_path_factory) -> tuple[_Build, dict]:
    base = tmp_path_factory.mktemp(name)
    home = base / "home"
    extra: dict = {"home": home, "env": {"CHINVEX_HOME": str(home)}}
    if name == "repo_index":
        extra["root"] = snapshot_repository(base / "chinvex-src")
        steps = _repo_steps(extra["root"])
    else:
        steps = _fixtures_steps()
    build = _Build(name, steps, _base_env(home), timeout=3600)
    _BUILDS[name] = (build, extra)
    return build, extra


@pytest.fixture(scope="session", autouse=True)
def _shared_index_builds(request, tmp_path_factory):
    """Starts the background builds of the shared indexes this session's tests read."""
    wanted = set().union(*(_shared_indexes_of(item) for item in request.session.items))
    builds = [_plan(name, tmp_path_factory)[0] for name in SHARED_INDEXES if name in wanted]
    thread = None
    if builds:
        thread = threading.Thread(target=lambda: [b.run() for b in builds], name="shared-index-builds",
                                  daemon=True)
        thread.start()
    yield
    for build in builds:
        build.stop()
    if thread is not None:
        thread.join(timeout=60)
    _BUILDS.clear()


def _built(name: str, tmp_path_factory) -> tuple[list[CliResult], dict]:
    """The results of a shared index's commands (run now, in the foreground, when the session
    did not plan it: a fixture asked for by name at run time)."""
    if name not in _BUILDS:
        _plan(name, tmp_path_factory)[0].run()
    build, extra = _BUILDS[name]
    return build.wait(), extra


@pytest.fixture(scope="session")
def repo_index(_shared_index_builds, tmp_path_factory):
    """A context named "chinvex" over a snapshot of this repository (taken when the session
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


DAC_CAPS = "dac_override,dac_read_search"


def without_dac_override(probe_dir: Path) -> list[str]:
    """A command prefix under which a child of this process obeys file permissions (it is
    refused a mode-000 file, and writes into a mode-0555 folder).

    Tests run as root here, and root reads any file through CAP_DAC_OVERRIDE and
    CAP_DAC_READ_SEARCH; the prefix runs the child as root with those two dropped from its
    bounding, inheritable and ambient sets (util-linux setpriv, else libcap's capsh), so it
    keeps root's ownership of the index files and of the venv (which may sit under root's home,
    mode 0700, where an unprivileged user such as `nobody` cannot even start it). Each candidate
    is checked on a real mode-000 file before it is trusted; the test is skipped only when none
    works, naming what was tried and how it failed. Not root: permissions already apply, no prefix."""
    probe = probe_dir / "probe-mode-000"
    probe.write_text("must not be readable")
    probe.chmod(0)
    if os.geteuid() != 0:
        candidates = [("the current (unprivileged) user", [])]
    else:
        candidates = []
        if setpriv := shutil.which("setpriv"):
            drop = ",".join(f"-{cap}" for cap in DAC_CAPS.split(","))
            candidates.append(("setpriv", [setpriv, f"--bounding-set={drop}", f"--inh-caps={drop}",
                                           f"--ambient-caps={drop}", "--"]))
        if capsh := shutil.which("capsh"):
            drop = ",".join(f"cap_{cap}" for cap in DAC_CAPS.split(","))
            candidates.append(("capsh", [capsh, f"--drop={drop}", "--inh=", "--", "-c",
                                         'exec "$@"', "capsh"]))
    tried: list[str] = []
    for name, prefix in candidates:
        check = subprocess.run([*prefix, sys.executable, "-c", f"open({str(probe)!r}).read()"],
                               capture_output=True, text=True, timeout=60)
        if check.returncode != 0 and "PermissionError" in check.stderr:
            return prefix
        why = (check.stderr.strip().splitlines() or ["it could read the mode-000 file"])[-1]
        tried.append(f"{name}: exit {check.returncode}: {why}")
    pytest.skip("no way to run the CLI without the right to read a mode-000 file: "
                + ("; ".join(tried) or "running as root and neither setpriv nor capsh is installed"))
