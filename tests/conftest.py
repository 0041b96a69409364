"""Shared test fixtures. Every test runs against its own CHINVEX_HOME so nothing touches the
user's real data; CLI tests drive the installed `chinvex` command as a subprocess."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
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


@pytest.fixture(scope="session")
def repo_index(tmp_path_factory):
    """A context named "chinvex" over a snapshot of this repository, ingested once per session
    with the real embedder. Yields {"home", "env", "root"}; pass `env=` to run_cli."""
    base = tmp_path_factory.mktemp("repo_index")
    root = snapshot_repository(base / "chinvex-src")
    home = base / "home"
    env = {"CHINVEX_HOME": str(home)}
    created = run_cli("context", "create", "chinvex", "--repo", str(root), env=env)
    assert created.code == 0, created
    result = run_cli("ingest", "--context", "chinvex", "--json", env=env, timeout=3600)
    assert result.code == 0, result
    return {"home": home, "env": env, "root": root, "summary": result.json}


@pytest.fixture(scope="session")
def fixtures_context(tmp_path_factory):
    """A context named "fixtures" over tests/fixtures/samples as golden_queries/README.md describes
    (Codex rollouts, ChatGPT exports, Claude Code transcripts), ingested once per session with
    the real embedder (~30 s). The ingest exits 1: the fixtures hold a file that is deliberately
    not a rollout. Yields {"home", "env", "summary"}."""
    base = tmp_path_factory.mktemp("fixtures_context")
    home = base / "home"
    env = {"CHINVEX_HOME": str(home)}
    created = run_cli("context", "create", "fixtures", "--codex-sessions", str(FIXTURES / "codex-rollout"),
                      "--chat-root", str(FIXTURES / "chatgpt-export"),
                      "--claude-sessions", str(FIXTURES / "claude-code"), env=env)
    assert created.code == 0, created
    result = run_cli("ingest", "--context", "fixtures", "--json", env=env, timeout=3600)
    assert_no_traceback(result)
    summary = result.json
    assert summary["sources"]["indexed"] > 0 and summary["chunks"]["embedded"] > 0, result
    return {"home": home, "env": env, "summary": summary}


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
