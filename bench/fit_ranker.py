"""Fit the answer's sentence ranker (chinvex/answer/ranker.py) leave-one-conversation-out.

1. `--dump OUT.jsonl`: every question of the six LoCoMo conversations answered with the gate
   open; for each, every sentence that may answer (`Verdict.pool`) with the ranker's features,
   whether it is a turn that holds the answer (its turn tag is one the question expects), and
   whether its chunk holds one.
2. Fit (from `--rows FILE` or the dump just made): a conditional logit, for each question the
   softmax of a linear score over its sentences, fitted to a target share per sentence: among
   the sentences of a gold turn, in proportion to GOLD_FLOOR + their token F1 against the
   reference answer (a turn's "It would be cool!" holds no answer; its other sentence does),
   0 elsewhere (questions with no gold sentence in the pool say nothing about the order and
   are left out);
   standardised features, L2-penalised, Newton's method, plain numpy.
3. Held out: for each conversation, the ranker fitted on the other five; the share of its
   answerable questions whose first sentence (as `support.judge` chooses it: the first that
   clears the hand-set thresholds, else the first) is a gold turn, and whose chunk holds one,
   against the hand-weighted score's choice. The spread over the six is printed.
4. `--write`: the ranker fitted on all six, into chinvex/answer/gate_model.json under "ranker"
   (the confidence model beside it is left as it is: refit it with bench/fit_gate.py after,
   since the sentences it is asked about changed).

    python bench/fit_ranker.py --dump bench/out/ranker_rows.jsonl [--write]
    python bench/fit_ranker.py --rows bench/out/ranker_rows.jsonl [--write]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from answers import token_f1
from common import REPO
from evalsets import DATA
from fit_gate import rows_by_conversation

from chinvex.answer.confidence import MODEL_FILE, gate_features
from chinvex.answer.ranker import (
    FEATURES,
    RANKER_KEY,
    RankerModel,
    ranker_features,
)
from chinvex.answer.linear_model import vector
from chinvex.answer.support import STRICT_TYPES

L2 = 1.0
"""Ridge penalty on the standardised weights."""
GOLD_FLOOR = 0.05
"""The target weight of a gold turn's sentence that shares no word with the reference answer."""
MODEL_PATH = REPO / "chinvex" / "answer" / MODEL_FILE


# -- the rows -----------------------------------------------------------------------------------

def _tag(label: str | None) -> str:
    """"[D1:3]" from a dialogue unit's label "[D1:3] Caroline"."""
    return (label or "").split(" ", 1)[0]


def _question_row(q: dict, conv: str, verdict, analysis, evidence=None, min_cosine=None) -> dict:
    tags = {e.get("contains") for e in q["expected"] if e.get("contains")}
    pool = verdict.pool if verdict is not None else []
    floor = verdict.floor if verdict is not None else []
    values = ranker_features(pool, analysis, floor) if pool else []
    best = verdict.best if verdict is not None else None
    return {
        "id": q["id"], "conv": conv, "query": q["query"], "answerable": q.get("answerable", True),
        "gold": q.get("answer"),
        "evidence_gold": any(t in e.text for e in evidence or [] for t in tags),
        "candidates": [{
            "features": v, "floor": bool(f), "gold": _tag(c.unit.label) in tags,
            "f1": token_f1(c.unit.text, q.get("answer") or ""),
            "chunk_gold": any(t in c.item.text for t in tags), "chosen": c is best,
            "text": c.unit.text, "chunk": c.unit.chunk,
            "gate": gate_features(c, analysis, evidence, pool, min_cosine=min_cosine,
                                  strict=analysis.question.expects in STRICT_TYPES, passes_rules=bool(f)),
        } for c, f, v in zip(pool, floor, values)],
    }


def dump(out: Path, data: Path = DATA, k: int = 8) -> list[dict]:
    """Every visible LoCoMo question answered with the gate open; the pool the extractive
    generator's judgement chose from, written to `out`."""
    import answers

    from chinvex.answer.generators import extractive
    from chinvex.answer.service import answer_and_verdict
    from chinvex.retrieval.search import Searcher

    real_judge = extractive.judge
    seen: list = []

    def recording(analysis, evidence, **kwargs):
        verdict = real_judge(analysis, evidence, **kwargs)
        seen.append((verdict, analysis, evidence, kwargs.get("min_cosine")))
        return verdict

    answers.LOCOMO_ONLY = True
    conversations, _ = answers.prepare(data)
    questions = {c: qs for c, qs in answers.locomo_questions(data).items() if c in conversations}
    searcher = Searcher()
    rows = []
    extractive.judge = recording
    try:
        for conv, qs in questions.items():
            for q in qs:
                seen.clear()
                answer_and_verdict(conversations[conv], q["query"], k=k, searcher=searcher, generator="extractive",
                                   min_confidence=0.0)
                rows.append(_question_row(q, conv, *(seen[0] if seen else (None, None, None, None))))
            print(f"{conv}: {len(qs)} questions", file=sys.stderr)
    finally:
        extractive.judge = real_judge
        searcher.close()
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")
    return rows


# -- the model ----------------------------------------------------------------------------------

def trainable(rows: list[dict]) -> list[dict]:
    """Answerable questions with at least one gold and one other sentence in the pool."""
    return [r for r in rows if r["answerable"] and any(c["gold"] for c in r["candidates"])
            and not all(c["gold"] for c in r["candidates"])]


def target(candidate: dict) -> float:
    """How much of a question's target share a sentence gets (before normalising)."""
    return (GOLD_FLOOR + candidate["f1"]) if candidate["gold"] else 0.0


def fit(rows: list[dict], names: tuple[str, ...] = FEATURES, l2: float = L2) -> RankerModel:
    """Conditional logit by Newton's method (steps halved until the penalised loss falls): per
    question, softmax over its sentences."""
    groups = [(np.array([vector(c["features"], names) for c in r["candidates"]], dtype=float),
               np.array([target(c) for c in r["candidates"]])) for r in trainable(rows)]
    stacked = np.vstack([x for x, _ in groups])
    mean, scale = stacked.mean(axis=0), stacked.std(axis=0)
    scale[scale == 0] = 1.0
    groups = [((x - mean) / scale, y / y.sum()) for x, y in groups]
    w = np.zeros(len(names))
    loss = _loss(groups, w, l2)
    for _ in range(50):
        gradient = l2 * w
        hessian = np.eye(len(names)) * l2
        for x, y in groups:
            p = _softmax(x @ w)
            gradient += x.T @ (p - y)
            xp = x.T @ p
            hessian += (x * p[:, None]).T @ x - np.outer(xp, xp)
        step = np.linalg.solve(hessian, gradient)
        size = 1.0
        while size > 1e-6 and _loss(groups, w - size * step, l2) > loss:
            size /= 2
        w = w - size * step
        new = _loss(groups, w, l2)
        if loss - new < 1e-9:
            break
        loss = new
    return RankerModel(tuple(names), tuple(mean.tolist()), tuple(scale.tolist()), tuple(w.tolist()))


def _softmax(s: np.ndarray) -> np.ndarray:
    p = np.exp(s - s.max())
    return p / p.sum()


def _loss(groups: list[tuple[np.ndarray, np.ndarray]], w: np.ndarray, l2: float) -> float:
    """Negative log-likelihood of the gold sentences plus the ridge penalty."""
    total = 0.5 * l2 * float(w @ w)
    for x, y in groups:
        s = x @ w
        top = s.max()
        total -= float(y @ s) - (top + float(np.log(np.exp(s - top).sum())))
    return total


def choose(row: dict, model: RankerModel | None) -> dict | None:
    """The sentence `support.judge` would choose: the best by the model; without one, the best
    by the hand-weighted score of those clearing the hand-set thresholds, else of all."""
    candidates = row["candidates"]
    if not candidates:
        return None
    if model is not None:
        return min(candidates, key=lambda c: (-model.value(c["features"]), -c["features"]["score"]))
    order = sorted(candidates, key=lambda c: -c["features"]["score"])
    return next((c for c in order if c["floor"]), order[0])


def shares(rows: list[dict], model: RankerModel | None) -> dict[str, float]:
    """Of the answerable questions: gold sentence chosen, gold chunk chosen, gold anywhere."""
    answerable = [r for r in rows if r["answerable"]]
    chosen = [choose(r, model) for r in answerable]
    n = len(answerable) or 1
    return {
        "sentence": sum(bool(c and c["gold"]) for c in chosen) / n,
        "f1": sum(c["f1"] for c in chosen if c) / n,
        "chunk": sum(bool(c and c["chunk_gold"]) for c in chosen) / n,
        "in_pool": sum(any(c["gold"] for c in r["candidates"]) for r in answerable) / n,
        "chunk_in_pool": sum(any(c["chunk_gold"] for c in r["candidates"]) for r in answerable) / n,
        "in_evidence": sum(bool(r.get("evidence_gold")) for r in answerable) / n,
    }


def held_out(by_conv: dict[str, list[dict]], names: tuple[str, ...] = FEATURES) -> dict[str, dict[str, float]]:
    out = {}
    for held, held_rows in by_conv.items():
        model = fit([r for c, rows in by_conv.items() if c != held for r in rows], names)
        out[held] = {**{f"before_{k}": v for k, v in shares(held_rows, None).items()}, **shares(held_rows, model)}
    return out


def report(by_conv: dict[str, list[dict]]) -> None:
    loo = held_out(by_conv)
    print("| held out | gold turn in the evidence | gold turn among the sentences that may answer | its chunk "
          "| sentence chosen: before | after | chunk chosen: before | after | its F1: before | after |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for conv, f in loo.items():
        print(f"| {conv} | {f['in_evidence']:.3f} | {f['in_pool']:.3f} | {f['chunk_in_pool']:.3f} | "
              f"{f['before_sentence']:.3f} | "
              f"{f['sentence']:.3f} | {f['before_chunk']:.3f} | {f['chunk']:.3f} | {f['before_f1']:.3f} | "
              f"{f['f1']:.3f} |")
    for key in ("sentence", "chunk", "f1"):
        before = [f[f"before_{key}"] for f in loo.values()]
        after = [f[key] for f in loo.values()]
        worse = [c for c, f in loo.items() if f[key] < f[f"before_{key}"]]
        print(f"{key} chosen: before {min(before):.3f}-{max(before):.3f}, after {min(after):.3f}-{max(after):.3f}; "
              f"held-out conversations worse: {', '.join(worse) or 'none'}")


def write(rows: list[dict]) -> None:
    """The ranker fitted on every conversation, into the model file beside the confidence model."""
    model = fit(rows)
    document = json.loads(MODEL_PATH.read_text("utf-8"))
    document[RANKER_KEY] = model.to_document(
        fitted="bench/fit_ranker.py on LoCoMo conv-26, 30, 42, 44, 47, 48",
        label=f"share of a gold turn's sentences by {GOLD_FLOOR} + token F1 against the reference answer", l2=L2)
    MODEL_PATH.write_text(json.dumps(document, indent=1) + "\n", "utf-8")
    print(f"wrote the ranker into {MODEL_PATH.relative_to(REPO)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help=f"write the ranker into {MODEL_PATH}")
    args, rows, by_conv = rows_by_conversation(parser, dump)
    report(by_conv)
    if args.write:
        write(rows)


if __name__ == "__main__":
    main()
