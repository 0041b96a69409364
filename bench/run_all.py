"""Run every benchmark and rewrite bench/RESULTS.md (machine, date, each figure with its target).

    python bench/run_all.py            # everything (long: SciFact alone embeds 10k chunks once)
    python bench/run_all.py --quick    # smaller inputs where a bench has a quick mode
    python bench/run_all.py --only cli_startup search_latency
    python bench/run_all.py --data DIR  # the evaluation sets from DIR instead of bench/data

A bench that fails is reported in RESULTS.md with its error instead of stopping the others.
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib.util
import inspect
import json
import os
import subprocess
import sys
import time
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from common import Figure, machine  # noqa: E402
from evalsets import DATA, add_data_argument  # noqa: E402

# (module file, section title, what it measures) in the order they appear in RESULTS.md
BENCHES = [
    ("cli_startup", "CLI start-up", "`chinvex --help` wall time (heavy imports stay lazy)."),
    ("embedder", "Built-in embedder (raw)", "all-MiniLM-L6-v2 int8 ONNX throughput by chunk length, cold start, memory."),
    ("ingest", "Ingest", "Full ingest of this repository vs the raw embedder on the same chunks; no-change re-ingest of a 1,000+ file tree."),
    ("append", "Append re-ingest", "A long Codex rollout grows by one exchange at a time."),
    ("agents", "Agents' session adapters", "Each agent's adapter on its real samples against Claude Code's: parse cost per 1,000 characters of turns (the same amount of text) and per turn, and a whole in-process ingest per 1,000 characters."),
    ("blame", "Blame", "`blame` of a 500-line file in a context of 10,000 sessions (120,000 edits), warm, git blame included; the share of an ingest of every agent's samples spent recording edits."),
    ("watch", "Watch mode", "`chinvex watch` over a 300-file repository and a growing Codex rollout: write to searchable, idle CPU, memory."),
    ("export_memory", "Large export memory", "Streaming a 200 MB ChatGPT export through parse, redaction and chunking."),
    ("tiny_export", "Export of 100k tiny conversations", "One conversations.json with 100,000 one-exchange conversations through a whole `chinvex ingest`."),
    ("export_stream", "Export streaming", "`chinvex export --include-vectors` of a ~1 GB context and `chinvex import` of that file: peak RSS against a ~10 MB export's."),
    ("redaction", "Redaction", "Secret redaction throughput and recall."),
    ("quality", "Retrieval quality", "bench/data SciFact train, LoCoMo conv-26+30 (turn level), CoSQA dev, SWE-QA requests and this repository's golden questions: fts-only / vector-only / hybrid."),
    ("tune_fusion", "Adaptive fusion", "The blend's leg weights (chinvex.retrieval.fusion.fts_share) on every visible set, with leave-one-set-out and 5-fold cross-validation of the fitting, scored on each question's candidates (the union of both legs, every candidate with both scores): a stricter test than the legs' own lists in 'Retrieval quality'; needs the indexes quality.py builds."),
    ("embedders", "Embedder choice", "Each embedder a context can pick, on every visible set: the vector leg and hybrid on the set's headline metric, and ingest against the raw embedder."),
    ("search_latency", "Search latency", "Warm in-process search at ~10k and ~100k chunks; cold `chinvex search` process."),
    ("answers", "Grounded answers", "Extractive generator on LoCoMo: grounded answers citing an expected turn, refusals of adversarial questions."),
    ("appserver", "Codex app-server", "Threads/s through `codex app-server` vs the rollout JSONL parser on the same files."),
    ("mcp_server", "MCP server", "Handshake with a 10k-chunk index, warm tool latency, server RSS."),
    ("fault_injection", "Fault injection", "SIGKILL at every write point of an ingest and while a lost store is healed; doctor right after each kill; convergence with an uninterrupted run."),
    ("mcp_load", "MCP under load", "8 MCP clients x 200 calls while ingests of the same context run: errors, latency, top results that moved."),
    ("ui_pages", "Web UI pages", "Server-side render time of each `chinvex ui` page at ~10k and ~100k chunks."),
]


def load(name: str):
    spec = importlib.util.spec_from_file_location(f"bench_{name}", HERE / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is made
    spec.loader.exec_module(module)
    return module


RESULT_MARK = "@@figures@@ "


def run_isolated(name: str, quick: bool, data: Path = DATA) -> tuple[list[Figure] | None, str | None]:
    """Each bench runs in a fresh interpreter: a process that earlier benches grew to gigabytes
    would otherwise slow down the ones that spawn processes (fork and exec of a large parent
    cost the child measurable time) and leave them its imports and caches."""
    proc = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child", name]
                          + (["--quick"] if quick else []) + ["--data", str(data)],
                          stdout=subprocess.PIPE, text=True)
    marked = [line for line in proc.stdout.splitlines() if line.startswith(RESULT_MARK)]
    if proc.returncode != 0 or not marked:
        return None, f"bench {name} failed (exit {proc.returncode}); its output:\n{proc.stdout[-2000:]}"
    return [Figure(**item) for item in json.loads(marked[-1][len(RESULT_MARK):])], None


def _child(name: str, quick: bool, data: Path) -> int:
    """Run one bench; the ones that read evaluation sets take `data` (their `run` has it)."""
    try:
        run = load(name).run
        figures = run(quick=quick, data=data) if "data" in inspect.signature(run).parameters else run(quick=quick)
    except Exception:  # reported by the parent with this output
        traceback.print_exc(file=sys.stdout)
        return 1
    print(RESULT_MARK + json.dumps([f.as_dict() for f in figures]), flush=True)
    return 0


def _portable(text: str) -> str:
    """Output with this machine's folders replaced (RESULTS.md is tracked: no local paths)."""
    for folder, name in ((str(HERE.parent), "<repo>"), (sys.prefix, "<venv>"), (sys.base_prefix, "<python>"),
                         (str(Path.home()), "~")):
        text = text.replace(folder, name)
    return text


def render(results: list[tuple[str, str, str, list[Figure] | None, str | None, float]], quick: bool) -> str:
    now = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    load1, load5, _ = os.getloadavg()
    lines = [
        "# Benchmark results",
        "",
        f"Written by `python bench/run_all.py{' --quick' if quick else ''}` on {now} (`--only` keeps the "
        "other sections as they were; each section says when it was measured).",
        "",
        f"- Machine: {machine()}",
        f"- Load average when the run ended: {load1:.2f} (1 min), {load5:.2f} (5 min)",
        "- Figures are wall-clock unless a note says otherwise; each bench's docstring says how it measures.",
        "",
    ]
    for _, title, what, figures, error, seconds in results:
        lines += [f"## {title}", "", f"{what} ({seconds:.0f} s, measured {now})", ""]
        if error:
            lines += ["```", _portable(error.strip()[-2000:]), "```", ""]
            continue
        lines += ["| figure | value | target | verdict | note |", "|---|---|---|---|---|"]
        for f in figures or []:
            value = "n/a" if f.value is None else (f"{f.value:,.3f}" if abs(f.value) < 100 else f"{f.value:,.0f}")
            verdict = {True: "meets", False: "**misses**", None: ""}[f.ok]
            lines.append(f"| {f.name} | {value} {f.unit} | {f.target} | {verdict} | {f.note} |")
        lines.append("")
    return "\n".join(lines)


def _sections(text: str) -> tuple[str, dict[str, str]]:
    head, *parts = text.split("\n## ")
    return head, {part.split("\n", 1)[0].strip(): "## " + part.rstrip() for part in parts}


def merge(old: str, new: str) -> str:
    """Sections just measured replace their old versions; the others are kept as they were."""
    _, old_sections = _sections(old)
    head, new_sections = _sections(new)
    ordered = [title for _, title, _ in BENCHES]
    body = [new_sections.get(t) or old_sections.get(t) for t in ordered]
    return head.rstrip() + "\n\n" + "\n\n".join(b for b in body if b)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    add_data_argument(parser)
    parser.add_argument("--only", nargs="*", help="bench module names (default: all)")
    parser.add_argument("--output", type=Path, default=HERE / "RESULTS.md")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return _child(args.child, args.quick, args.data)
    selected = [b for b in BENCHES if not args.only or b[0] in args.only]
    results = []
    for name, title, what in selected:
        print(f"== {title}", flush=True)
        started = time.perf_counter()
        figures, error = run_isolated(name, args.quick, args.data)
        for figure in figures or []:
            print("  " + figure.line(), flush=True)
        if error:
            print(error, flush=True)
        results.append((name, title, what, figures, error, time.perf_counter() - started))
    text = render(results, args.quick)
    if args.only and args.output.exists():
        text = merge(args.output.read_text(encoding="utf-8"), text)
    args.output.write_text(text + "\n", encoding="utf-8")
    print(f"wrote {args.output}")
    return 0 if all(r[4] is None for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
