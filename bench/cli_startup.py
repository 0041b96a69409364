"""`chinvex --help` must answer in under 0.5 s: heavy modules stay lazily imported."""

from __future__ import annotations

from common import CHINVEX, Figure, median, pct, print_figures, time_command


def run(quick: bool = False) -> list[Figure]:
    times = time_command([CHINVEX, "--help"], runs=5 if quick else 20)
    p50, p95 = median(times), pct(times, 95)
    return [
        Figure("chinvex --help p50", p50, "s", "< 0.5 s", p50 < 0.5),
        Figure("chinvex --help p95", p95, "s", "< 0.5 s", p95 < 0.5),
    ]


if __name__ == "__main__":
    print_figures("CLI start-up", run())
