"""Shared helpers for the benchmark scripts: figures with their targets, machine description,
and timing of whole commands. Every bench module exposes `run(quick: bool = False) -> list[Figure]`
so `bench/run_all.py` can collect them into bench/RESULTS.md."""

from __future__ import annotations

import os
import platform
import statistics
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "tests" / "fixtures" / "samples"
"""Sample Codex / Claude Code / ChatGPT files, the tests' (tests/fixtures/samples/PROVENANCE.md).
The evaluation sets are elsewhere: bench/evalsets.py."""
CHINVEX = str(Path(sys.executable).parent / "chinvex")


@dataclass
class Figure:
    name: str
    value: float | None
    unit: str
    target: str = ""
    ok: bool | None = None
    note: str = ""

    def as_dict(self) -> dict:
        return asdict(self)

    def line(self) -> str:
        value = "n/a" if self.value is None else (f"{self.value:,.3f}" if isinstance(self.value, float) and self.value < 100 else f"{self.value:,.0f}")
        verdict = {True: "meets target", False: "MISSES target", None: ""}[self.ok]
        target = f" (target {self.target}: {verdict})" if self.target else ""
        note = f" — {self.note}" if self.note else ""
        return f"{self.name}: {value} {self.unit}{target}{note}"


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        mem = int(Path("/proc/meminfo").read_text().split()[1]) // 1024 // 1024
        mem_text = f", {mem} GiB RAM"
    except (OSError, ValueError, IndexError):
        mem_text = ""
    return f"{cpu}, {os.cpu_count()} cores{mem_text}, {platform.system()} {platform.release()}, Python {platform.python_version()}"


def own_peak_rss_kb() -> int:
    """This process's peak RSS (VmHWM). Not ru_maxrss: Linux keeps that across exec, so a fresh
    interpreter started by a large parent would report the parent's peak."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise RuntimeError("no VmHWM in /proc/self/status")


_MEASURED_CHINVEX = r"""
import atexit, sys
def _report(path=sys.argv[1]):
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            open(path, "w").write(line.split()[1])
atexit.register(_report)
sys.argv = ["chinvex", *sys.argv[2:]]
from chinvex.cli import main
main()
"""


def run_chinvex_measured(args: list[str], env: dict[str, str] | None = None,
                         ) -> tuple[subprocess.CompletedProcess, float]:
    """Run `chinvex ARGS` in a fresh interpreter and return it with its own peak RSS in MB."""
    import tempfile

    with tempfile.NamedTemporaryFile("r", suffix=".hwm") as report:
        proc = subprocess.run([sys.executable, "-c", _MEASURED_CHINVEX, report.name, *args],
                              env={**os.environ, **(env or {})}, capture_output=True, text=True)
        text = Path(report.name).read_text().strip()
    return proc, (int(text) / 1024 if text else float("nan"))


def time_command(args: list[str], runs: int, env: dict[str, str] | None = None) -> list[float]:
    """Wall-clock seconds of whole process runs (after one warm-up of the page cache)."""
    full_env = {**os.environ, **(env or {})}
    subprocess.run(args, capture_output=True, env=full_env, check=False)
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(args, capture_output=True, env=full_env, check=False)
        times.append(time.perf_counter() - start)
    return times


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    index = max(0, min(len(ordered) - 1, int(round(q / 100 * len(ordered) + 0.5)) - 1))
    return ordered[index]


def median(values: list[float]) -> float:
    return statistics.median(values)


def print_figures(title: str, figures: list[Figure]) -> None:
    print(f"== {title}")
    for figure in figures:
        print("  " + figure.line())


def embedded_texts(db: Path) -> list[str]:
    """The distinct texts an index's chunks were embedded from (chunking.embed_text, in chunk
    order): what a raw-embedder timing must embed to compare with that index's ingest (the
    pipeline embeds each distinct text once, so duplicates would flatter it)."""
    import json
    import sqlite3

    from chinvex.chunking import embed_text
    from chinvex.models import Chunk

    conn = sqlite3.connect(db)
    try:
        rows = conn.execute("SELECT chunk_id, doc_id, chunk_index, text, char_start, char_end, line_start, "
                            "line_end, metadata_json FROM chunks ORDER BY rowid").fetchall()
    finally:
        conn.close()
    return list(dict.fromkeys(embed_text(Chunk(
        chunk_id=r[0], doc_id=r[1], chunk_index=r[2], text=r[3], char_start=r[4], char_end=r[5],
        line_start=r[6], line_end=r[7], metadata=json.loads(r[8]))) for r in rows))
