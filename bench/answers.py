"""Grounded answers with the extractive generator: what the answers issue measures.

Three sets, each in its own context under bench/out/answers/home (git-ignored; ingest is
incremental, so a second run only checks fingerprints):

- LoCoMo's six visible conversations (bench/data/locomo: conv-26, 30, 42, 44, 47, 48), each in a
  context of its own as a user would index one chat, ingested as a note root: 1,149 questions,
  of which 255 adversarial (`"answerable": false`, usually a question about the other speaker).
- This repository (a snapshot of its tracked files, as a user would index it) against
  golden_queries/chinvex.json: questions about chinvex that have an answer, each naming the
  defining file(s).
- The same context against golden_queries/offtopic.json: general-knowledge questions nothing in
  a repository answers.

Figures (targets from the issue):
- LoCoMo adversarial refused (>= 0.90) and, at the same settings, answerable answered grounded
  (>= 0.80); answerable with a cited chunk holding a gold turn (>= 0.75); mean token F1 of the
  answer against the gold answer, SQuAD-style normalisation, `[chunk:…]` markers removed,
  refusals count 0 (>= 0.25); median answer length in characters (<= 400). Every figure per
  conversation too, with the spread (lowest and highest), since the thresholds were first set on
  conv-26 and conv-30 and a rule fitted there must hold on the others.
- The questions are answered once with the gate open (min_confidence 0), each with its
  confidence; the figures at the shipped refusal point follow from it exactly (an answer is kept
  when its confidence reaches the point). Leave one conversation out (bench/fit_gate.py): for
  each conversation the confidence model is fitted on the other five and the refusal point chosen
  on them; its figures are those of the held-out conversation with that model at that point.
- Off-topic refused (>= 0.95); golden answered grounded with a defining file as the first
  citation (>= 0.90); warm answer latency p50 (<= 50 ms) and p95.

    python bench/answers.py [--quick] [--locomo-only] [--k 8] [--details OUT.jsonl] [--data DIR]
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

GOLDEN_NAMES = ("golden-conv26-conv30.json", "golden-conv42-conv44-conv47-conv48.json")
LOCOMO_ONLY = False
"""`--locomo-only`: skip the repository sets (whose first ingest embeds this whole repository)."""
CONVERSATIONS = ("conv-26", "conv-30", "conv-42", "conv-44", "conv-47", "conv-48")
HOME = REPO / "bench" / "out" / "answers" / "home"
SNAPSHOT = REPO / "bench" / "out" / "answers" / "chinvex-src"
SELF_GOLDEN = REPO / "golden_queries" / "chinvex.json"
OFFTOPIC = REPO / "golden_queries" / "offtopic.json"


def _ingest(name: str, includes: dict[str, list[str]]):
    from chinvex.ingest.pipeline import IngestOptions, run_ingest
    from chinvex.context.registry import Registry

    Registry().create(name, includes=includes, idempotent=True)
    summary = run_ingest(Registry().resolve(name), IngestOptions())
    if not summary.ok:
        raise SystemExit(f"ingest of the {name} context failed: {summary.errors}")
    return Registry().resolve(name)


def prepare(data: Path = DATA):
    """A context per LoCoMo conversation and the context over this repository (created once,
    ingested incrementally); returns {conversation: config} and the repository's config."""
    os.environ["CHINVEX_HOME"] = str(HOME)
    os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
    base = locomo(data)
    conversations = {conv: _ingest(f"locomo-{conv}", {"note_roots": [str(base / conv)]})
                     for conv in CONVERSATIONS if (base / conv).is_dir()}
    repository = None if LOCOMO_ONLY else _ingest("chinvex", {"repos": [str(_snapshot())]})
    return conversations, repository


def locomo_questions(data: Path, step: int = 1) -> dict[str, list[dict]]:
    """Every visible golden question, by conversation (the id's prefix)."""
    by_conv: dict[str, list[dict]] = collections.defaultdict(list)
    for name in GOLDEN_NAMES:
        path = locomo(data) / name
        if path.exists():
            for q in json.loads(path.read_text("utf-8"))["queries"][::step]:
                by_conv[q["id"].split("#")[0]].append(q)
    return dict(by_conv)


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


def ask_all(config, queries: list[dict], *, k: int, searcher, min_confidence: float | None = None) -> list[dict]:
    """Every question answered (at `min_confidence`, default the context's), one row each, with
    the gate's confidence and the features it read (bench/fit_gate.py fits on them)."""
    from chinvex.answer.service import answer_and_verdict

    rows = []
    for q in queries:
        started = time.perf_counter()
        response, verdict = answer_and_verdict(config, q["query"], k=k, searcher=searcher, generator="extractive",
                                               min_confidence=min_confidence)
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
            "confidence": response.confidence,
            "p": verdict.confidence if verdict is not None else None,
            "features": verdict.features if verdict is not None else None,
            **_gold_whereabouts(response, verdict, q["expected"]),
        })
    return rows


def _gold_whereabouts(response, verdict, expected: list[dict]) -> dict[str, bool | int]:
    """Where a gold turn got lost (LoCoMo's expected items name a turn tag): among the evidence,
    among the sentences the gate's verdict could choose from (for an answer, the gate looks only
    at the chunks it cites), in the chunk of the sentence it rests on; and how many chunks it cites."""
    tags = [e["contains"] for e in expected if e.get("contains")]
    gold = {c.chunk_id for c in response.evidence_pack.chunks if any(t in c.text for t in tags)}
    pool = verdict.pool if verdict is not None else []
    best = verdict.best if verdict is not None else None
    return {"gold_retrieved": bool(gold), "gold_may_answer": any(c.item.chunk_id in gold for c in pool),
            "gold_chosen": best is not None and best.item.chunk_id in gold,
            "cited": len(response.citations)}


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


def at_point(rows: list[dict], point: float) -> list[dict]:
    """Open-gate rows as the gate leaves them at refusal point `point`: an answer whose
    confidence is below it is refused."""
    out = []
    for r in rows:
        kept = r["grounded"] and (r["p"] or 0.0) >= point
        out.append({**r, "grounded": kept, "f1": r["f1"] if kept else 0.0, "gold_cited": kept and r["gold_cited"],
                    "first_cited": kept and r["first_cited"], "length": r["length"] if kept else None})
    return out


def spread(per: dict[str, dict], key: str) -> str:
    values = [f[key] for f in per.values() if f[key] is not None]
    return f"{min(values):.3f}-{max(values):.3f}" if values else "n/a"


def _ok(value: float | None, target: float, above: bool = True) -> bool | None:
    if value is None:
        return None
    return value >= target if above else value <= target


def _locomo_figures(rows: list[dict], per: dict[str, dict], k: int, point: float) -> list[Figure]:
    overall = locomo_figures(rows)
    split = "; ".join(f"{conv}: refused {f['refused']:.3f}, grounded {f['grounded']:.3f}, gold cited "
                      f"{f['gold_cited']:.3f}, F1 {f['f1']:.3f}" for conv, f in per.items())
    scope = (f"{overall['answerable']} answerable, {overall['adversarial']} adversarial, k={k}, {len(per)} conversations, "
             f"shipped model at its refusal point {point:.3f}")
    worst_refused = min(f["refused"] for f in per.values())
    worst_grounded = min(f["grounded"] for f in per.values())
    return [
        Figure("LoCoMo adversarial refused, pooled", overall["refused"], "share", ">= 0.90",
               _ok(overall["refused"], 0.90), f"{scope}; {split}"),
        Figure("LoCoMo adversarial refused, worst conversation", worst_refused, "share", ">= 0.90",
               _ok(worst_refused, 0.90), f"spread {spread(per, 'refused')}"),
        Figure("LoCoMo answerable answered grounded, pooled", overall["grounded"], "share", ">= 0.80",
               _ok(overall["grounded"], 0.80), scope),
        Figure("LoCoMo answerable answered grounded, worst conversation", worst_grounded, "share", ">= 0.80",
               _ok(worst_grounded, 0.80), f"spread {spread(per, 'grounded')}"),
        Figure("LoCoMo answerable with a gold turn cited", overall["gold_cited"], "share", ">= 0.75",
               _ok(overall["gold_cited"], 0.75), f"a cited chunk holds an expected turn tag; spread {spread(per, 'gold_cited')}"),
        Figure("LoCoMo mean token F1 against the gold answer", overall["f1"], "F1", ">= 0.30",
               _ok(overall["f1"], 0.30), f"answerable questions; a refusal scores 0; spread {spread(per, 'f1')}"),
        Figure("LoCoMo median answer length", overall["length"], "chars", "<= 120",
               _ok(overall["length"], 120, above=False), "grounded answers, citation markers removed"),
    ]


def _loco_figures(per_rows: dict[str, list[dict]]) -> list[Figure]:
    """Each conversation held out: the model and refusal point fitted on the other five."""
    from fit_gate import held_out

    figures = []
    loo = held_out({conv: [{**r, "conv": conv} for r in rows] for conv, rows in per_rows.items()})
    for held, (point, f) in loo.items():
        ok = f["refused"] >= 0.90 and f["grounded"] >= 0.80
        figures.append(Figure(f"leave-one-out, {held} held out: refused", f["refused"], "share",
                              ">= 0.90 with grounded >= 0.80", ok,
                              f"point {point:.3f} chosen on the other five; grounded {f['grounded']:.3f}, "
                              f"gold cited {f['gold_cited']:.3f}, F1 {f['f1']:.3f}"))
    per = {conv: f for conv, (_, f) in loo.items()}
    figures.append(Figure("leave-one-out spread", None, "", "", None,
                          "; ".join(f"{key} {spread(per, key)}" for key in ("refused", "grounded", "gold_cited", "f1"))))
    return figures


def run(quick: bool = False, k: int = 8, details: Path | None = None, data: Path = DATA) -> list[Figure]:
    from chinvex.answer.confidence import default_min_confidence
    from chinvex.answer.service import answer
    from chinvex.retrieval.search import Searcher

    conversations, repository = prepare(data)
    step = 4 if quick else 1  # --quick: every 4th question, so every conversation and all kinds stay in
    questions = {conv: qs for conv, qs in locomo_questions(data, step).items() if conv in conversations}
    self_golden = [q for q in json.loads(SELF_GOLDEN.read_text("utf-8"))["queries"] if q.get("answerable", True)]
    offtopic = json.loads(OFFTOPIC.read_text("utf-8"))["queries"]
    searcher = Searcher()
    for config in [*conversations.values(), *([repository] if repository else [])]:
        answer(config, "warm up", k=k, searcher=searcher)
    open_rows = {conv: ask_all(conversations[conv], qs, k=k, searcher=searcher, min_confidence=0.0)
                 for conv, qs in questions.items()}
    point = default_min_confidence()
    per_rows = {conv: at_point(conv_rows, point) for conv, conv_rows in open_rows.items()}
    rows = [r for conv_rows in per_rows.values() for r in conv_rows]
    self_rows = ask_all(repository, self_golden[::step], k=k, searcher=searcher) if repository else []
    off_rows = ask_all(repository, offtopic[::step], k=k, searcher=searcher) if repository else []
    searcher.close()
    if details:
        details.parent.mkdir(parents=True, exist_ok=True)
        details.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows + self_rows + off_rows),
                           "utf-8")
    per = {conv: locomo_figures(conv_rows) for conv, conv_rows in per_rows.items()}
    figures = _locomo_figures(rows, per, k, point) + ([] if quick else _loco_figures(open_rows))
    latencies = [r["took_s"] for r in rows + self_rows + off_rows]
    self_first = _mean(r["grounded"] and r["first_cited"] for r in self_rows)
    self_grounded = _mean(r["grounded"] for r in self_rows)
    off_refused = _mean(not r["grounded"] for r in off_rows)
    if repository is None:
        return figures
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
    parser.add_argument("--locomo-only", action="store_true", help="only the LoCoMo conversations")
    add_data_argument(parser)
    args = parser.parse_args()
    LOCOMO_ONLY = args.locomo_only
    print_figures("grounded answers (extractive)", run(args.quick, args.k, args.details, args.data))
