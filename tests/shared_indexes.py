"""The session's shared indexes: `chinvex` commands run in the background, once per test run.

Two session fixtures (tests/conftest.py) embed a whole corpus. Their commands run as real
subprocesses at the lowest CPU priority, from the start of the session, so that they use the
core the tests leave idle; a test that needs an index before its build is done waits for it and
raises the build's priority back to normal.

Under pytest-xdist every worker collects every test, so every worker would build every index.
Instead the first worker to claim an index's folder (an exclusively created file in the run's
shared temporary folder) builds it and publishes its commands' results there; the others wait
for that file. A builder does not kill a build another worker may still be waiting for. There the
build runs at normal priority: with a worker per core there is no idle core for it to use, and at
the lowest priority it would only start in earnest when the last tests wait for it, with the
other cores idle.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
import time
from pathlib import Path

from chinvex.locking import process_alive
from helpers import CHINVEX_BIN, CliResult

RESULTS_FILE = "results.json"
CLAIM_FILE = "claim"
PID_FILE = "pid"


def raise_priority(pid: int) -> None:
    """Back to nice 0 (every thread of process `pid`), where the system allows it."""
    if not hasattr(os, "setpriority"):
        return
    try:
        tasks = [int(t) for t in os.listdir(f"/proc/{pid}/task")]
    except OSError:
        tasks = [pid]
    for task in tasks:
        try:
            os.setpriority(os.PRIO_PROCESS, task, 0)
        except OSError:
            pass


def _results_to_json(results: list[CliResult], error: BaseException | None) -> str:
    return json.dumps({
        "results": [{"args": [str(a) for a in r.proc.args], "code": r.code, "stdout": r.stdout,
                     "stderr": r.stderr} for r in results],
        "error": None if error is None else f"{type(error).__name__}: {error}",
    })


def _results_from_json(text: str) -> tuple[list[CliResult], str | None]:
    data = json.loads(text)
    results = [CliResult(subprocess.CompletedProcess(r["args"], r["code"], r["stdout"], r["stderr"]))
               for r in data["results"]]
    return results, data["error"]


class Build:
    """`chinvex` commands run one after the other in the background, by this process. With a
    `folder`, their results are published there for the other workers of the run."""

    def __init__(self, name: str, steps: list[list[str]], env: dict[str, str], timeout: float,
                 folder: Path | None = None):
        self.name, self.steps, self.env, self.timeout = name, steps, env, timeout
        self.folder = folder
        self.results: list[CliResult] = []
        self.error: BaseException | None = None
        self.proc: subprocess.Popen | None = None
        self.cancelled = False
        self.done = threading.Event()

    def run(self) -> None:
        nice = shutil.which("nice") if self.folder is None else None
        prefix = [nice, "-n", "19"] if nice else []
        try:
            for index, args in enumerate(self.steps):
                if self.cancelled:
                    break
                self.proc = subprocess.Popen([*prefix, str(CHINVEX_BIN), *args], env=self.env, text=True,
                                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
                if self.folder is not None:
                    (self.folder / PID_FILE).write_text(str(self.proc.pid))
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
            self._publish()
            self.done.set()

    def _publish(self) -> None:
        if self.folder is None or self.cancelled:
            return
        partial = self.folder / (RESULTS_FILE + ".part")
        partial.write_text(_results_to_json(self.results, self.error))
        partial.replace(self.folder / RESULTS_FILE)

    def wait(self) -> list[CliResult]:
        while not self.done.is_set():
            proc = self.proc
            if proc is not None and proc.poll() is None:
                raise_priority(proc.pid)
            self.done.wait(2.0)
        if self.error is not None:
            raise self.error
        return self.results

    def finish(self) -> None:
        """At the end of this process's session: stop the build, unless another worker of the
        run may still be waiting for it (then let it end first)."""
        if self.folder is not None and not self.done.is_set():
            self.done.wait(self.timeout)
        self.cancelled = True
        proc = self.proc
        if proc is not None and proc.poll() is None:
            proc.kill()


class PublishedBuild:
    """A build another worker of this run claimed: its results, once that worker publishes them."""

    def __init__(self, name: str, folder: Path, owner: int, timeout: float):
        self.name, self.folder, self.owner, self.timeout = name, folder, owner, timeout

    def wait(self) -> list[CliResult]:
        deadline = time.monotonic() + self.timeout
        results = self.folder / RESULTS_FILE
        while not results.exists():
            try:
                raise_priority(int((self.folder / PID_FILE).read_text()))
            except (OSError, ValueError):
                pass
            if not process_alive(self.owner) and not results.exists():
                raise RuntimeError(f"the worker building {self.name} (pid {self.owner}) ended "
                                   "without publishing its results")
            if time.monotonic() > deadline:
                raise TimeoutError(f"{self.name} was not built within {self.timeout:.0f} s")
            time.sleep(1.0)
        found, error = _results_from_json(results.read_text())
        if error is not None:
            raise RuntimeError(f"building {self.name} failed in another worker: {error}")
        return found

    def finish(self) -> None:
        """Nothing to stop: the worker that claimed the build owns it."""


def claim(folder: Path) -> int | None:
    """None when this process now owns `folder`'s build, else the pid of the process that does."""
    folder.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(folder / CLAIM_FILE, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    except FileExistsError:
        for _ in range(50):  # the owner writes its pid right after creating the file
            text = (folder / CLAIM_FILE).read_text().strip()
            if text:
                return int(text)
            time.sleep(0.1)
        raise RuntimeError(f"{folder / CLAIM_FILE} names no process") from None
    with os.fdopen(fd, "w") as handle:
        handle.write(str(os.getpid()))
    return None


def xdist_worker() -> str | None:
    """This process's pytest-xdist worker id, or None when it is not a worker."""
    return os.environ.get("PYTEST_XDIST_WORKER")
