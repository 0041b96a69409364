"""Fault injection, the long part (issue 16): SIGKILL at every write point an ingest passes, 100
points and more, each followed by `doctor` and a settling ingest compared with an uninterrupted
run; then the same while a lost Chroma store is being healed. tests/ingest/test_fault_injection.py runs
a sample of the same points (and the file-size-limit faults); tests/hostile/kill_points.py says
what is compared.

    python bench/fault_injection.py            # every point of both scenarios
    python bench/fault_injection.py --quick    # 24 + 6 points
    python bench/fault_injection.py --limit 40 # at most 40 points per scenario

Prints each point (phase, seconds, converged or what differed) and the figures.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))

from common import Figure, print_figures  # noqa: E402

MIN_POINTS = 100


def _scenario_points(kp, base: Path, *, lose_store: bool, limit: int | None, seed: int,
                     modules: int, notes: int) -> tuple[list, int]:
    scenario = kp.Scenario(base, seed=seed, lose_store=lose_store, modules=modules, notes=notes)
    points = scenario.points
    if lose_store:
        start = next(i for i, p in enumerate(points) if p.event == "reconcile_vectors:start")
        points = points[start:]
    chosen = kp.spread(points, limit, seed=seed) if limit else points
    results = []
    for point in chosen:
        result = scenario.run_point(point)
        results.append(result)
        verdict = "converged" if result.converged else f"FAILED {result.doctor_after_kill} {result.problems}"
        print(f"  {point} [{kp.phase_of(point.event)}] {result.seconds:.1f} s: {verdict}", flush=True)
    return results, len(scenario.points)


def run(quick: bool = False, limit: int | None = None) -> list[Figure]:
    from hostile import kill_points as kp

    figures: list[Figure] = []
    saved = os.environ.get("CHINVEX_HOME")
    with tempfile.TemporaryDirectory(prefix="chinvex-fault-") as tmp:
        started = time.monotonic()
        print("== kill points during an ingest of edits, deletions and additions", flush=True)
        main, passed = _scenario_points(kp, Path(tmp) / "edits", lose_store=False,
                                        limit=24 if quick else limit, seed=16,
                                        modules=6 if not quick else 3, notes=6 if not quick else 3)
        main_seconds = time.monotonic() - started
        started = time.monotonic()
        print("== kill points while a lost Chroma store is healed", flush=True)
        healing, _ = _scenario_points(kp, Path(tmp) / "heal", lose_store=True,
                                      limit=6 if quick else limit, seed=17, modules=4, notes=4)
        heal_seconds = time.monotonic() - started
    if saved is not None:
        os.environ["CHINVEX_HOME"] = saved
    everything = main + healing
    converged = sum(r.converged for r in everything)
    doctor_clean = sum(1 for r in everything if r.killed and not r.doctor_after_kill)
    phases = Counter(kp.phase_of(r.point.event) for r in everything)
    target = f">= {MIN_POINTS} points, all converge"
    figures.append(Figure("kill -9 points converging to the uninterrupted index", converged,
                          f"of {len(everything)}", target,
                          ok=len(everything) >= MIN_POINTS and converged == len(everything),
                          note=f"{len(main)} during an ingest of changes ({passed} points in the "
                               f"run, {main_seconds:.0f} s), {len(healing)} while healing a "
                               f"lost store ({heal_seconds:.0f} s); {len(phases)} phases"))
    figures.append(Figure("doctor right after the kill: no error", doctor_clean,
                          f"of {len(everything)}", "all", ok=doctor_clean == len(everything),
                          note="interrupted-run states are warnings the next ingest settles"))
    figures.append(Figure("points per phase", len(phases), "phases", "",
                          note=", ".join(f"{k} {v}" for k, v in sorted(phases.items()))))
    failed = [r for r in everything if not r.converged]
    for r in failed[:10]:
        print(f"FAILED {r.point}: {r.doctor_after_kill} {r.problems}")
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--limit", type=int, default=None, help="at most this many points per scenario")
    args = parser.parse_args()
    print_figures("Fault injection", run(quick=args.quick, limit=args.limit))


if __name__ == "__main__":
    main()
