"""Issue 16's fault-injection suite, the fast part (bench/fault_injection.py runs every kill
point, 100 and more, and prints its figures).

- SIGKILL at exact points of an ingest (a sample of the points an uninterrupted run passes,
  every kind of point at least once): `doctor` right after the kill finds no error, and the next
  plain ingest converges on exactly what an uninterrupted run gives (tests/hostile/kill_points.py
  says what is compared). Kills while a lost Chroma store is being healed are in the bench
  only (each of those points embeds the whole index twice).
- A file-size limit (`RLIMIT_FSIZE`, what a full disk looks like to a writer) during the writes:
  one line and exit 1, the previous index intact and searchable, and the next ingest completes.

Chroma lost, replaced or damaged between runs: tests/storage/test_vector_healing.py and tests/doctor/.
"""

from __future__ import annotations

import os
import resource
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest

from helpers import CHINVEX_BIN, assert_no_traceback, run_cli
from hostile import corpus as corpus_mod
from hostile import kill_points as kp

SAMPLE = 12


@pytest.fixture(scope="module")
def scenario(tmp_path_factory) -> kp.Scenario:
    saved = os.environ.get("CHINVEX_HOME")
    try:
        yield kp.Scenario(tmp_path_factory.mktemp("kill-points"), modules=3, notes=3)
    finally:
        if saved is not None:
            os.environ["CHINVEX_HOME"] = saved


def _report(results: list[kp.PointResult]) -> str:
    return "\n".join(f"  {r.point} [{kp.phase_of(r.point.event)}] {r.seconds:.1f} s: "
                     f"{'converged' if r.converged else 'FAILED'} "
                     f"{r.doctor_after_kill[:2]} {r.problems[:3]}" for r in results)


def test_kill_points_converge_and_doctor_sees_an_interrupted_run(scenario: kp.Scenario):
    assert len(scenario.points) >= 40, "the change is written in too few batches to test"
    points = kp.spread(scenario.points, SAMPLE, seed=16)
    started = time.monotonic()
    results = [scenario.run_point(point, final_doctor=False) for point in points]
    phases = Counter(kp.phase_of(r.point.event) for r in results)
    print(f"\n{len(results)} kill points in {time.monotonic() - started:.0f} s, of "
          f"{len(scenario.points)} the run passes; phases: {dict(phases)}\n{_report(results)}")
    assert len(phases) >= 10, phases
    assert all(r.converged for r in results), _report(results)


def _capped_ingest(cap: int) -> subprocess.CompletedProcess:
    def cap_file_size() -> None:  # in the child only: what a full disk looks like to a writer
        resource.setrlimit(resource.RLIMIT_FSIZE, (cap, cap))

    return subprocess.run([str(CHINVEX_BIN), "ingest", "--context", "Full"], capture_output=True,
                          text=True, preexec_fn=cap_file_size, timeout=600)


def test_file_size_limit_during_writes_leaves_the_index_intact(tmp_path: Path, chinvex_home: Path):
    """A file-size limit where the Chroma store fails first, and one where hybrid.db does, each
    from the same indexed state: one line and exit 1, the index intact (SQLite sound, doctor
    finds no error) and searchable, hybrid; then the run without a limit completes and leaves
    a clean index."""
    import shutil

    from chinvex.doctor import diagnose
    from chinvex.ingest.pipeline import run_ingest
    from chinvex.context.registry import Registry

    repo = tmp_path / "repo"
    repo.mkdir()
    rng = corpus_mod.random.Random(5)
    for i in range(3):
        (repo / f"base{i}.py").write_text(corpus_mod.python_module(rng, f"basemarker{i}", 3))
    assert run_cli("context", "create", "Full", "--repo", str(repo)).code == 0
    assert run_ingest(Registry().resolve("Full")).status == "completed"
    folder = chinvex_home / "indexes" / "Full"
    baseline = tmp_path / "baseline-index"
    shutil.copytree(folder, baseline)
    store_db = folder / "chroma" / "chroma.sqlite3"
    big = corpus_mod.python_module(rng, "moremarker99", 60)
    small = [corpus_mod.python_module(rng, f"moremarker{i}", 4) for i in range(12)]

    def one_large_file() -> None:  # few commits before its batch reaches Chroma, which fails
        (repo / "big.py").write_text(big)

    def many_small_files() -> None:  # a commit per source fills SQLite's WAL first
        (repo / "big.py").unlink()
        for i, text in enumerate(small):
            (repo / f"more{i}.py").write_text(text)

    plans = [(store_db.stat().st_size - 8192, "Chroma store", one_large_file),
             (64 * 1024, "hybrid.db", many_small_files)]
    for cap, failing, change in plans:
        shutil.rmtree(folder)
        shutil.copytree(baseline, folder)
        change()
        capped = _capped_ingest(cap)
        assert capped.returncode == 1, (capped.stdout, capped.stderr)
        assert "Traceback" not in capped.stderr and "internal error" not in capped.stderr
        # a piped ingest also prints a progress line every 10 s ("ingest Full: 4/4 sources · …"),
        # which a loaded machine reaches: the error is the one line that is not one
        lines = [line for line in capped.stderr.strip().splitlines() if not line.startswith("ingest Full: ")]
        assert len(lines) == 1 and "stopped" in lines[0] and failing in lines[0], lines
        assert "intact" in lines[0] and "free disk space" in lines[0], lines
        print(f"\n{cap} bytes: {lines[0]}")
        assert kp.sqlite_problems(folder / "hybrid.db") == []
        report = diagnose("Full")
        assert report.ok, [(c.name, c.message, c.examples) for c in report.checks if c.status == "error"]
        found = run_cli("search", "--context", "Full", "basemarker1", "--json")
        assert_no_traceback(found)
        assert found.code == 0 and found.json["stats"]["mode"] == "hybrid", found
        assert any("basemarker1" in r["text"] for r in found.json["results"])

    finished = run_ingest(Registry().resolve("Full"))
    assert finished.status == "completed", finished.errors
    report = diagnose("Full")
    assert all(c.status == "ok" for c in report.checks), [
        (c.name, c.message) for c in report.checks if c.status != "ok"]
    found = run_cli("search", "--context", "Full", "moremarker11", "--json", "--mode", "fts")
    assert any("moremarker11" in r["text"] for r in found.json["results"])
