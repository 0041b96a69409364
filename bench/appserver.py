"""Codex threads per second through `codex app-server` vs through the rollout parser, on the
same files.

The fixture rollouts that 0.169.0 can replay (the legacy 0.104 localpush, 0.128 codemie and
0.169.0 files, and the truncated one) are copied many times into a temporary CODEX_HOME, each
copy with a fresh thread id (in its name and its content), so the server sees distinct threads.
Then, in one process:
- app-server: start + `initialize`; `thread/list` (cold: the first listing back-fills the
  server's state_5.sqlite; warm: a second listing); `thread/read includeTurns` of every thread
  and normalisation to a ConversationDoc (`AppServerSource.read_thread`);
- rollout parser: walk + parse of every file (`CodexRolloutAdapter`);
- `cx_appserver` enumeration: what every ingest run pays to route threads (server start, list,
  walk), against the rollout adapter's walk alone.
Paginated threads are left out: a copied paginated rollout has no projection, so the server
returns no turns for it and there would be nothing to time.

Needs the codex binary (CHINVEX_CODEX_BIN, or scripts/install-codex.sh's cache); without it the
figures are n/a with the reason.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import FIXTURES, REPO, Figure, print_figures  # noqa: E402

ROLLOUTS = FIXTURES / "codex-rollout"
SOURCES = [
    *sorted((ROLLOUTS / "public/localpush/sessions/2026/02/23").glob("rollout-*.jsonl")),
    ROLLOUTS / "public/codemie-code/rollout-2026-05-11T13-28-45-019e1695-0522-7c83-8b39-0dd379793f80.jsonl",
    ROLLOUTS / "generated-0.169.0/legacy/sessions/2026/11/22/rollout-2026-11-22T02-29-41-01a20116-7f80-7e82-8754-e5125007d434.jsonl",
    ROLLOUTS / "edge-cases/truncated-last-line.jsonl",
]
TRUNCATED_OF = "01a20116-7f80-7e82-8754-e5125007d434"  # the thread the truncated file belongs to
NAME = re.compile(r"rollout-(?P<stamp>[\dT-]{19})-(?P<id>[0-9a-f-]{36})\.jsonl$")


def codex_binary() -> str | None:
    env = os.environ.get("CHINVEX_CODEX_BIN")
    if env:
        return env
    cached = REPO / ".cache" / "codex-0.169.0" / "vendor" / "x86_64-unknown-linux-musl" / "bin" / "codex"
    return str(cached) if cached.is_file() else shutil.which("codex")


def seed(home: Path, copies: int) -> int:
    """`copies` copies of every source file, each with a fresh thread id; returns the count."""
    day = home / "sessions" / "2026" / "01" / "01"
    day.mkdir(parents=True)
    blobs = []
    for src in SOURCES:
        match = NAME.match(src.name)
        old_id, stamp = (match["id"], match["stamp"]) if match else (TRUNCATED_OF, "2026-11-22T02-29-41")
        blobs.append((old_id, stamp, src.read_bytes()))
    count = 0
    for _ in range(copies):
        for old_id, stamp, data in blobs:
            new_id = str(uuid.uuid4())
            (day / f"rollout-{stamp}-{new_id}.jsonl").write_bytes(data.replace(old_id.encode(), new_id.encode()))
            count += 1
    return count


def _timed(fn):
    start = time.perf_counter()
    value = fn()
    return value, time.perf_counter() - start


def run(quick: bool = False) -> list[Figure]:
    binary = codex_binary()
    copies = 10 if quick else 50
    if binary is None:
        why = "codex binary not installed (scripts/install-codex.sh)"
        return [Figure("app-server threads/s (list + read)", None, "threads/s", note=why),
                Figure("rollout parser threads/s", None, "threads/s", note=why)]

    with tempfile.TemporaryDirectory(prefix="chinvex-bench-cx-") as tmp:
        home = Path(tmp) / ".codex"
        threads = seed(home, copies)
        size_mb = sum(p.stat().st_size for p in home.rglob("*.jsonl")) / 1e6
        server = _through_server(home, binary)
        assert server["listed"] == threads, f"the server listed {server['listed']} of {threads} threads"
        parser = _through_parser(home)
        routed, route_s, listed = _routing(home, binary)
        assert routed == parser["walked"] and listed == threads

    cold_s, read_s, parse_s = server["cold_s"], server["read_s"], parser["parse_s"]
    server_rate = threads / (cold_s + read_s)
    return [
        Figure("app-server start + initialize", server["start_s"], "s"),
        Figure("app-server thread/list, cold (back-fills state db)", cold_s, "s", note=f"{threads} threads"),
        Figure("app-server thread/list, warm", server["warm_s"], "s", note=f"{threads} threads"),
        Figure("app-server threads/s (cold list + thread/read + normalise)", server_rate, "threads/s",
               note=f"{threads} legacy threads, {size_mb:.1f} MB; {server['turns']} turns"),
        Figure("app-server threads/s (read + normalise only)", threads / read_s, "threads/s"),
        Figure("rollout parser threads/s (walk + parse)", threads / parse_s, "threads/s",
               note=f"same files; {parser['turns']} turns (the server's legacy replay drops tool calls)"),
        Figure("rollout parser / app-server speed ratio", (threads / parse_s) / server_rate, "x"),
        Figure("cx_appserver enumeration per run (start + list + walk)", route_s, "s",
               note=f"vs {parser['walk_s']:.3f} s for the rollout walk alone; paid by every ingest, unchanged or not"),
    ]


def _through_server(home: Path, binary: str) -> dict:
    """Start + initialize, a cold and a warm `thread/list`, then `thread/read` and normalisation
    of every listed thread."""
    from chinvex.models import CodexAppServerConfig
    from chinvex.models.sources import ParseReport
    from chinvex_adapters.cx_appserver.source import AppServerSource, client_factory_from

    factory = client_factory_from(CodexAppServerConfig(timeout_s=120), codex_home=str(home), binary=binary)
    source = AppServerSource(factory)
    try:
        _, start_s = _timed(source.client)
        listed, cold_s = _timed(source.list_threads)
        listed, warm_s = _timed(source.list_threads)

        def read_all():
            turns = 0
            for summary in listed:
                doc = source.read_thread(summary, ParseReport())
                turns += len(doc.turns) if doc is not None else 0
            return turns

        turns, read_s = _timed(read_all)
    finally:
        source.close()
    return {"start_s": start_s, "cold_s": cold_s, "warm_s": warm_s, "read_s": read_s,
            "listed": len(listed), "turns": turns}


def _through_parser(home: Path) -> dict:
    """Walk + parse of every rollout file, and the walk alone."""
    from chinvex.models.sources import AdapterOptions, ParseReport, SourceCandidate
    from chinvex_adapters.cx_sessions_jsonl import CodexRolloutAdapter

    rollout = CodexRolloutAdapter()
    options = AdapterOptions(context_name="bench")

    def parse_all():
        turns = 0
        for cand in rollout.enumerate(home, options):
            if isinstance(cand, SourceCandidate):
                for doc in rollout.parse(cand, ParseReport(), None):
                    turns += len(doc.turns)
        return turns

    turns, parse_s = _timed(parse_all)
    walk = [c for c in rollout.enumerate(home, options)]
    _, walk_s = _timed(lambda: list(rollout.enumerate(home, options)))
    return {"parse_s": parse_s, "turns": turns, "walked": len(walk), "walk_s": walk_s}


def _routing(home: Path, binary: str) -> tuple[int, float, int | None]:
    """What routing threads costs every ingest run (`cx_appserver` enumeration: server start,
    list, walk): the candidates, the seconds, and how many threads the server listed."""
    from chinvex.models.sources import AdapterOptions
    from chinvex_adapters.cx_appserver.adapter import CodexAppServerAdapter

    composite = CodexAppServerAdapter()
    run_options = AdapterOptions(context_name="bench", settings={"codex_appserver": {"timeout_s": 120}})
    previous = os.environ.get("CHINVEX_CODEX_BIN")
    os.environ["CHINVEX_CODEX_BIN"] = binary
    try:
        routed, route_s = _timed(lambda: list(composite.enumerate(home, run_options)))
        report = composite.end_run(run_options) or {}
    finally:
        if previous is None:
            os.environ.pop("CHINVEX_CODEX_BIN", None)
        else:
            os.environ["CHINVEX_CODEX_BIN"] = previous
    return len(routed), route_s, report.get("counts", {}).get("threads_listed")


if __name__ == "__main__":
    print_figures("Codex app-server vs rollout parser", run(quick="--quick" in sys.argv))
