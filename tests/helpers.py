"""What the tests share besides fixtures: where things are, how to run the CLI, and helpers
more than one test module needs. Test modules import from here (`from helpers import …`; the
folder of tests/conftest.py is on sys.path); tests/conftest.py holds only fixtures and hooks.

CLI tests drive the installed `chinvex` command as a subprocess (`run_cli`), or its entry point
in this process where the process itself is not the point (`run_cli_in_process`)."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from datetime import datetime

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
TEST_FIXTURES = REPO_ROOT / "tests" / "fixtures"
"""Every file the tests read as input lives under here."""
FIXTURES = TEST_FIXTURES / "samples"
"""Real Codex / Claude Code / ChatGPT sample files (provenance: FIXTURES / "PROVENANCE.md")."""
BENCH_DATA = REPO_ROOT / "bench" / "data"
"""The public evaluation sets (bench/data/README.md); tests read LoCoMo's transcripts from here."""
CHINVEX_BIN = Path(sys.executable).parent / "chinvex"


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
    """This process's shared Chroma clients (chinvex.storage.vector_clients), by store."""
    vectors = sys.modules.get("chinvex.storage.vector_clients")
    return dict(vectors.SharedClient._registry) if vectors is not None else {}


def _close_stores_opened_since(before: set) -> None:
    """What the end of a `chinvex` process does to the Chroma clients its command opened: they
    are closed, so that the next command opens the store from its files again, as a new
    process would, instead of reusing this one's client."""
    vectors = sys.modules.get("chinvex.storage.vector_clients")
    if vectors is None:
        return
    shared_client = vectors.SharedClient
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
    `pack`, `query`: chinvex.storage.vector_open.read_only_process), which would change how this
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


def indexed_notes(root: Path, context: str, notes: dict[str, str]) -> Path:
    """A context named `context` over the folder `root` of markdown notes (file name -> text),
    created and ingested in this process; returns `root`."""
    root.mkdir(parents=True, exist_ok=True)
    for name, text in notes.items():
        (root / name).write_text(text, encoding="utf-8")
    assert run_cli_in_process("context", "create", context, "--note-root", str(root)).code == 0
    assert run_cli_in_process("ingest", "--context", context).code == 0
    return root


def assert_no_traceback(result: CliResult) -> None:
    assert "Traceback" not in result.stderr and "Traceback" not in result.stdout, result


SNAPSHOT_PATHS = ("chinvex", "chinvex_adapters", "docs", "README.md")
"""What of this repository a test indexes as "this repository": its engine source and docs."""

GOLDEN_CORPUS_COMMIT = "b318401fc9956d1549ab5d8660d5bd59351a8f46"
"""The commit whose engine source and docs the repository index of the tests holds, and on which
golden_queries/chinvex.json is scored. The repository keeps growing and new code fairly competes
for the golden questions' words (the vector matrix's modules and notes took a place in the top
five from the answer to "what happens when the vector store is missing during search"), so a
test that guards retrieval against regressions scores the engine on one fixed corpus. Move it
forward together with the golden file, once their expectations have been checked again."""


def clone_holds(commit: str = GOLDEN_CORPUS_COMMIT) -> bool:
    """Whether this clone holds `commit` (a shallow clone may not)."""
    try:
        return subprocess.run(["git", "-C", str(REPO_ROOT), "cat-file", "-e", f"{commit}^{{commit}}"],
                              capture_output=True).returncode == 0
    except OSError:
        return False


def snapshot_commit(target: Path, commit: str = GOLDEN_CORPUS_COMMIT) -> bool:
    """Extract SNAPSHOT_PATHS as they are at `commit` into `target`; False (and nothing written)
    when this clone does not hold that commit (a shallow clone, or no git)."""
    import io
    import tarfile

    try:
        archive = subprocess.run(["git", "-C", str(REPO_ROOT), "archive", "--format=tar", commit,
                                  *SNAPSHOT_PATHS], capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return False
    target.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(target, filter="data")
    return True


def snapshot_repository(target: Path) -> Path:
    """Copy this repository's engine source and docs (as tracked by git, or as on disk) so that
    tests indexing "this repository" see a stable tree while people keep editing."""
    import shutil

    files: list[str]
    try:
        out = subprocess.run(["git", "-C", str(REPO_ROOT), "ls-files", "-co", "--exclude-standard",
                              *SNAPSHOT_PATHS],
                             capture_output=True, text=True, check=True).stdout
        files = [line for line in out.splitlines() if line]
    except (OSError, subprocess.CalledProcessError):
        files = [str(p.relative_to(REPO_ROOT)) for base in ("chinvex", "chinvex_adapters", "docs")
                 for p in (REPO_ROOT / base).rglob("*") if p.is_file()] + ["README.md"]
    for rel in files:
        if "__pycache__" in rel:
            continue
        source = REPO_ROOT / rel
        if source.is_file():
            (target / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / rel)
    return target


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


# -- the real Codex binary ----------------------------------------------------------------------

CODEX_VERSION = "0.169.0"
"""The codex-cli release the app-server tests are written against (scripts/install-codex.sh)."""
CODEX_TRIPLE = "x86_64-unknown-linux-musl"
CODEX_INSTALL_SCRIPT = REPO_ROOT / "scripts" / "install-codex.sh"


def find_codex_binary() -> str | None:
    """The codex binary to test with: $CHINVEX_CODEX_BIN, else the one install-codex.sh cached,
    else one on PATH; None when there is none."""
    env = os.environ.get("CHINVEX_CODEX_BIN")
    if env:
        return env
    cache = Path(os.environ.get("CHINVEX_CODEX_CACHE") or REPO_ROOT / ".cache" / f"codex-{CODEX_VERSION}")
    cached = cache / "vendor" / CODEX_TRIPLE / "bin" / "codex"
    if cached.is_file():
        return str(cached)
    return shutil.which("codex")


def codex_binary_or_skip() -> str:
    """The codex binary of CODEX_VERSION for a test module's fixture. Absent with no npm to
    install it: the tests skip, saying how to get it; absent with npm, or of another version:
    they fail (the integration tests must not silently stop running)."""
    binary = find_codex_binary()
    if binary is None:
        how = f"install it with `{CODEX_INSTALL_SCRIPT.relative_to(REPO_ROOT)}` or set CHINVEX_CODEX_BIN"
        if shutil.which("npm") is None:
            pytest.skip(f"codex {CODEX_VERSION} binary absent and npm unavailable; {how}")
        pytest.fail(f"codex {CODEX_VERSION} binary not installed (npm is available): {how}")
    try:
        version = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=30).stdout.strip()
    except OSError:
        version = ""
    if not version.endswith(CODEX_VERSION):
        pytest.fail(f"{binary} reports {version!r}; these tests need codex-cli {CODEX_VERSION} "
                    f"(set CHINVEX_CODEX_BIN or run {CODEX_INSTALL_SCRIPT.name})")
    return binary


# -- files and adapters -------------------------------------------------------------------------

def write(root: Path, rel: str, data: bytes | str) -> Path:
    """Write `data` at `root/rel`, making its folders; str is written as UTF-8."""
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


def enumerated(adapter: Any, root: Path, options: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """What an adapter enumerates under `root`: candidates and skips, each keyed by its path
    relative to `root` (POSIX); a path listed twice fails the test."""
    from chinvex.models.sources import SkippedSource

    cands: dict[str, Any] = {}
    skips: dict[str, Any] = {}
    base = os.path.abspath(root)
    for item in adapter.enumerate(root, options):
        rel = os.path.relpath(item.source_uri, base).replace(os.sep, "/")
        target = skips if isinstance(item, SkippedSource) else cands
        assert rel not in target, f"{rel} listed twice"
        target[rel] = item
    return cands, skips


# -- inputs made for a test --------------------------------------------------------------------

def write_marked_chatgpt_export(path: Path, marker: str, update_time: float) -> None:
    """A copy of the chatlore ChatGPT export at `path` whose conversations carry `marker` (in
    each first user message) and `update_time`: two copies told apart by what a search finds."""
    data = json.loads((FIXTURES / "chatgpt-export" / "chatlore" / "conversations.json").read_text())
    for conv in data:
        conv["update_time"] = update_time
        for node in (conv.get("mapping") or {}).values():
            message = node.get("message")
            if message and message.get("author", {}).get("role") == "user":
                parts = message.get("content", {}).get("parts")
                if parts and isinstance(parts[0], str):
                    parts[0] = f"{parts[0]} {marker}"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


# -- damaging inputs ----------------------------------------------------------------------------

def dicts_in(value: Any, found: list[dict]) -> list[dict]:
    """Every dict inside a JSON value (itself included), depth first: the places a property
    test may damage a field of."""
    if isinstance(value, dict):
        found.append(value)
        for item in value.values():
            dicts_in(item, found)
    elif isinstance(value, list):
        for item in value:
            dicts_in(item, found)
    return found


def write_plugin_package(site: Path, module: str, source: str, entry_points: str) -> Path:
    """A package of plug-ins as importlib.metadata sees an installed one: `module`.py holding
    `source`, and a `*.dist-info` folder whose entry_points.txt is `entry_points` (groups and
    `name = module:Class` lines). Put `site` on sys.path (and call chinvex.plugins.rescan) or on
    PYTHONPATH for a subprocess; returns `site`."""
    import textwrap

    site.mkdir(parents=True, exist_ok=True)
    (site / f"{module}.py").write_text(source, "utf-8")
    info = site / f"{module}-0.1.dist-info"
    info.mkdir()
    name = module.replace("_", "-")
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n", "utf-8")
    (info / "entry_points.txt").write_text(textwrap.dedent(entry_points), "utf-8")
    return site


def parse_file(adapter: Any, path: Path) -> tuple[list, Any]:
    """Every document a session adapter reads from the file `path`, handed to it as a
    candidate of its own (as its enumeration would), and the report of the read."""
    from chinvex.models.sources import ParseReport, SourceCandidate

    report = ParseReport()
    cand = SourceCandidate(source_uri=str(path), source_type="agent_session", adapter=adapter.name,
                           root=str(path.parent), path=path)
    return list(adapter.parse(cand, report, None)), report


def tool_turns(doc: Any, name: str) -> list:
    """The tool turns of a conversation that called `name`."""
    return [t for t in doc.turns if t.role == "tool" and t.tool.name == name]


def git(repo: Path, *args: str, when: "datetime | None" = None, author: str = "Dev") -> str:
    """Run git in `repo` as `author`, dated `when` (author and committer date) when given."""
    from datetime import UTC

    env = dict(os.environ, GIT_AUTHOR_NAME=author, GIT_AUTHOR_EMAIL=f"{author}@example.com",
               GIT_COMMITTER_NAME=author, GIT_COMMITTER_EMAIL=f"{author}@example.com")
    if when is not None:
        stamp = when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S+0000")
        env.update(GIT_AUTHOR_DATE=stamp, GIT_COMMITTER_DATE=stamp)
    done = subprocess.run(["git", *args], cwd=repo, env=env, capture_output=True, text=True, check=True)
    return done.stdout


def init_repo(repo: Path) -> None:
    repo.mkdir(parents=True, exist_ok=True)
    git(repo, "init", "-q", "-b", "main")
