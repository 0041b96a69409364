"""Grounded answers with the extractive generator: what the answers issue measures.

Three sets, each in its own context under bench/out/answers/home (git-ignored; ingest is
incremental, so a second run only checks fingerprints):

- LoCoMo conv-26 + conv-30 (bench/data/locomo), ingested as note roots: 231 answerable and 71
  adversarial questions (`"answerable": false`, usually a question about the other speaker).
- This repository (a snapshot of its tracked files, as a user would index it) against
  golden_queries/chinvex.json: questions about chinvex that have an answer, each naming the
  defining file(s).
- The same context against golden_queries/offtopic.json: general-knowledge questions nothing in
  a repository answers.

Figures (targets from the issue):
- LoCoMo adversarial refused (>= 0.90) and, at the same settings, answerable answered grounded
  (>= 0.80); answerable with a cited chunk holding a gold turn (>= 0.75); mean token F1 of the
  answer against the gold answer, SQuAD-style normalisation, `[chunk:…]` markers removed,
  refusals count 0 (>= 0.25); median answer length in characters (<= 400). Per conversation too:
  the two conversations are the only split the visible data offers (the thresholds were set on
  both, so neither is held out).
- The trade-off: refusal of adversarial questions against grounded answerable ones, with every
  support threshold shifted by -0.10 … +0.10 (answer/support.py MIN_SUPPORT), recorded as a curve.
- Off-topic refused (>= 0.95); golden answered grounded with a defining file as the first
  citation (>= 0.90); warm answer latency p50 (<= 50 ms) and p95.

    python bench/answers.py [--quick] [--k 8] [--details OUT.jsonl] [--data DIR]
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import shutil
import statistics
import string
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import REPO, Figure, median, pct, print_figures  # noqa: E402
from evalsets import DATA, add_data_argument, locomo  # noqa: E402

GOLDEN_NAME = "golden-conv26-conv30.json"
HOME = REPO / "bench" / "out" / "answers" / "home"
SNAPSHOT = REPO / "bench" / "out" / "answers" / "chinvex-src"
SELF_GOLDEN = REPO / "golden_queries" / "chinvex.json"
OFFTOPIC = REPO / "golden_queries" / "offtopic.json"
CURVE_SHIFTS = (-0.10, -0.05, 0.0, 0.05, 0.10)


def _ingest(name: str, includes: dict[str, list[str]]):
    from chinvex.ingest.pipeline import IngestOptions, run_ingest
    from chinvex.context.registry import Registry

    Registry().create(name, includes=includes, idempotent=True)
    summary = run_ingest(Registry().resolve(name), IngestOptions())
    if not summary.ok:
        raise SystemExit(f"ingest of the {name} context failed: {summary.errors}")
    return Registry().resolve(name)


def prepare(data: Path = DATA):
    """The LoCoMo context and the context over this repository (created once, ingested
    incrementally); returns both configs."""
    os.environ["CHINVEX_HOME"] = str(HOME)
    os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
    base = locomo(data)
    conversations = _ingest("locomo", {"note_roots": [str(base / "conv-26"), str(base / "conv-30")]})
    repository = _ingest("chinvex", {"repos": [str(_snapshot())]})
    return conversations, repository


def _snapshot() -> Path:
    """This repository's tracked files, copied so that edits made while the bench runs (and the
    bench's own output under bench/out) do not move the index under it."""
    files = subprocess.run(["git", "-C", str(REPO), "ls-files"], capture_output=True, text=True,
                           check=True).stdout.splitlines()
    wanted = {rel for rel in files if (REPO / rel).is_file()}
    present = {str(p.relative_to(SNAPSHOT)) for p in SNAPSHOT.rglob("*") if p.is_file()} if SNAPSHOT.exists() else set()
    for rel in present - wanted:
        (SNAPSHOT / rel).unlink()
    for rel in wanted:
        source, target = REPO / rel, SNAPSHOT / rel
        if not target.exists() or target.read_bytes() != source.read_bytes():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    return SNAPSHOT


# -- scoring ----------------------------------------------------------------------------------

def normalise(text: str) -> list[str]:
    """SQuAD-style answer tokens: citation markers out, lower case, no punctuation or articles."""
    text = re.sub(r"\[chunk:[^\]]*\]", " ", text).lower()
    text = "".join(" " if ch in string.punctuation or ch in "“”‘’—–…" else ch for ch in text)
    return [t for t in text.split() if t not in ("a", "an", "the")]


def token_f1(prediction: str, gold: str) -> float:
    predicted, expected = normalise(prediction), normalise(gold)
    common = sum((collections.Counter(predicted) & collections.Counter(expected)).values())
    if not predicted or not expected or not common:
        return 0.0
    precision, recall = common / len(predicted), common / len(expected)
    return 2 * precision * recall / (precision + recall)


def _matches(citation_uri: str, text: str, expected: list[dict]) -> bool:
    plain = citation_uri.split("#", 1)[0].replace("\\", "/")
    for item in expected:
        path = item["path"].replace("\\", "/").strip("/")
        if (plain == path or plain.endswith("/" + path)) and (not item.get("contains") or item["contains"] in text):
            return True
    return False


def _visible_length(answer: str) -> int:
    return len(re.sub(r"\s*\[chunk:[^\]]*\]", "", answer))


def ask_all(config, queries: list[dict], *, k: int, searcher) -> list[dict]:
    from chinvex.answer.service import answer

    rows = []
    for q in queries:
        started = time.perf_counter()
        response = answer(config, q["query"], k=k, searcher=searcher, generator="extractive")
        took = time.perf_counter() - started
        texts = {c.chunk_id: c.text for c in response.evidence_pack.chunks}
        cited = [c for c in response.citations]
        answerable = q.get("answerable", True)
        rows.append({
            "id": q["id"], "query": q["query"], "answerable": answerable, "category": q.get("category"),
            "grounded": response.grounded, "answer": response.answer,
            "gold": q.get("answer"), "f1": token_f1(response.answer, q.get("answer") or "") if response.grounded else 0.0,
            "gold_cited": response.grounded and any(_matches(c.source_uri, texts.get(c.chunk_id, ""), q["expected"])
                                                    for c in cited),
            "first_cited": response.grounded and bool(cited) and _matches(cited[0].source_uri, "", [
                {"path": e["path"]} for e in q["expected"]]),
            "length": _visible_length(response.answer) if response.grounded else None,
            "reason": next((e.detail for e in response.errors), None), "took_s": took,
        })
    return rows


def _mean(values) -> float | None:
    values = list(values)
    return sum(values) / len(values) if values else None


def locomo_figures(rows: list[dict]) -> dict[str, float | None]:
    answerable = [r for r in rows if r["answerable"]]
    adversarial = [r for r in rows if not r["answerable"]]
    lengths = [r["length"] for r in rows if r["length"] is not None]
    return {
        "refused": _mean(not r["grounded"] for r in adversarial),
        "grounded": _mean(r["grounded"] for r in answerable),
        "gold_cited": _mean(r["gold_cited"] for r in answerable),
        "f1": _mean(r["f1"] for r in answerable),
        "length": statistics.median(lengths) if lengths else None,
        "answerable": len(answerable), "adversarial": len(adversarial),
    }


def curve(config, queries: list[dict], *, k: int, searcher) -> list[tuple[float, dict]]:
    """The same questions with every support threshold shifted: how refusal of adversarial
    questions trades against grounded answerable ones."""
    from chinvex.answer import support

    original = dict(support.MIN_SUPPORT)
    points = []
    try:
        for shift in CURVE_SHIFTS:
            support.MIN_SUPPORT.update({kind: value + shift for kind, value in original.items()})
            points.append((shift, locomo_figures(ask_all(config, queries, k=k, searcher=searcher))))
    finally:
        support.MIN_SUPPORT.update(original)
    return points


def _ok(value: float | None, target: float, above: bool = True) -> bool | None:
    if value is None:
        return None
    return value >= target if above else value <= target


def run(quick: bool = False, k: int = 8, details: Path | None = None, data: Path = DATA) -> list[Figure]:
    from chinvex.retrieval.search import Searcher

    conversations, repository = prepare(data)
    step = 4 if quick else 1  # --quick: every 4th question, so both conversations and all kinds stay in
    golden = json.loads((locomo(data) / GOLDEN_NAME).read_text("utf-8"))["queries"][::step]
    self_golden = [q for q in json.loads(SELF_GOLDEN.read_text("utf-8"))["queries"] if q.get("answerable", True)]
    offtopic = json.loads(OFFTOPIC.read_text("utf-8"))["queries"]
    searcher = Searcher()
    from chinvex.answer.service import answer

    answer(conversations, "warm up", k=k, searcher=searcher)
    answer(repository, "warm up", k=k, searcher=searcher)
    rows = ask_all(conversations, golden, k=k, searcher=searcher)
    self_rows = ask_all(repository, self_golden[::step], k=k, searcher=searcher)
    off_rows = ask_all(repository, offtopic[::step], k=k, searcher=searcher)
    points = curve(conversations, golden, k=k, searcher=searcher) if not quick else []
    searcher.close()
    if details:
        details.parent.mkdir(parents=True, exist_ok=True)
        details.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows + self_rows + off_rows),
                           "utf-8")

    overall = locomo_figures(rows)
    per = {conv: locomo_figures([r for r in rows if r["id"].startswith(conv)]) for conv in ("conv-26", "conv-30")}
    split = "; ".join(f"{conv}: refused {f['refused']:.3f}, grounded {f['grounded']:.3f}, gold cited "
                      f"{f['gold_cited']:.3f}, F1 {f['f1']:.3f}" for conv, f in per.items())
    scope = f"{overall['answerable']} answerable, {overall['adversarial']} adversarial, k={k}"
    latencies = [r["took_s"] for r in rows + self_rows + off_rows]
    self_first = _mean(r["grounded"] and r["first_cited"] for r in self_rows)
    self_grounded = _mean(r["grounded"] for r in self_rows)
    off_refused = _mean(not r["grounded"] for r in off_rows)
    figures = [
        Figure("LoCoMo adversarial refused", overall["refused"], "share", ">= 0.90", _ok(overall["refused"], 0.90),
               f"{scope}; {split}"),
        Figure("LoCoMo answerable answered grounded (same settings)", overall["grounded"], "share", ">= 0.80",
               _ok(overall["grounded"], 0.80), scope),
        Figure("LoCoMo answerable with a gold turn cited", overall["gold_cited"], "share", ">= 0.75",
               _ok(overall["gold_cited"], 0.75), "a cited chunk holds an expected turn tag"),
        Figure("LoCoMo mean token F1 against the gold answer", overall["f1"], "F1", ">= 0.25",
               _ok(overall["f1"], 0.25), "answerable questions; a refusal scores 0"),
        Figure("LoCoMo median answer length", overall["length"], "chars", "<= 400",
               _ok(overall["length"], 400, above=False), "grounded answers, citation markers removed"),
    ]
    for shift, point in points:
        figures.append(Figure(f"trade-off: support thresholds {shift:+.2f}", point["refused"], "refused",
                              "", None, f"answerable grounded {point['grounded']:.3f}, gold cited "
                                        f"{point['gold_cited']:.3f}, F1 {point['f1']:.3f}"))
    figures += [
        Figure("off-topic questions refused (context over this repository)", off_refused, "share", ">= 0.95",
               _ok(off_refused, 0.95), f"{len(off_rows)} questions of golden_queries/offtopic.json"),
        Figure("this repository's golden questions answered grounded", self_grounded, "share", "", None,
               f"{len(self_rows)} questions of golden_queries/chinvex.json"),
        Figure("... grounded with a defining file as the first citation", self_first, "share", ">= 0.90",
               _ok(self_first, 0.90), "the first citation's file is one the question expects"),
        Figure("answer latency p50 (extractive, warm)", median(latencies) * 1000, "ms", "<= 50",
               _ok(median(latencies) * 1000, 50, above=False), "in-process, retrieval included, no reranker"),
        Figure("answer latency p95 (extractive, warm)", pct(latencies, 95) * 1000, "ms"),
    ]
    return figures


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--k", type=int, default=8)
    parser.add_argument("--details", type=Path, help="write one JSON line per question here")
    add_data_argument(parser)
    args = parser.parse_args()
    print_figures("grounded answers (extractive)", run(args.quick, args.k, args.details, args.data))
