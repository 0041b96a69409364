"""Fit the answer gate's confidence model (chinvex/answer/confidence.py) leave-one-conversation-out.

1. `--dump OUT.jsonl`: every question of the six LoCoMo conversations answered with the gate open
   (min_confidence 0: every question some sentence may answer is answered), one line each with
   the features the gate read and what the answer was worth (bench/answers.py scores it).
2. Fit (from `--rows FILE`, or the dump just made): a logistic regression, L2-penalised, over
   standardised features. Label: an answerable question answered citing a turn that holds the
   answer, or whose words match the reference answer (token F1 >= F1_BAR) = 1; an adversarial
   question answered, or an answerable one answered otherwise = 0.
3. Held-out figures: for each conversation, the model fitted on the other five, and the refusal
   point chosen on those five alone (from their own leave-one-out predictions); the held-out
   conversation's refused, grounded, gold-cited and F1 at that point, and their spread.
4. The default refusal point: chosen on the held-out predictions of all six (each
   conversation's probabilities from the model that did not see it), by the worst conversation's
   margin to the targets (adversarial refused 0.90, answerable grounded 0.80), averaged over
   bootstrap resamplings of the questions so that one changed label barely moves it.
5. `--write`: the final model, fitted on all six, with that refusal point, into
   chinvex/answer/gate_model.json; the reliability table (held-out predictions by decile).

    python bench/fit_gate.py --dump bench/out/gate_rows.jsonl [--write]
    python bench/fit_gate.py --rows bench/out/gate_rows.jsonl [--write]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import REPO  # noqa: E402
from evalsets import DATA, add_data_argument  # noqa: E402

from chinvex.answer.confidence import FEATURES, MODEL_FILE, GateModel  # noqa: E402
from chinvex.answer.linear_model import vector  # noqa: E402

F1_BAR = 0.5
"""Token F1 against the reference answer above which an answer citing no gold turn is right anyway
(the same fact stated in another turn)."""
L2 = 1.0
"""Ridge penalty on the standardised weights (the intercept is not penalised)."""
THRESHOLDS = tuple(round(0.01 * i, 2) for i in range(1, 100))
"""The refusal points a choice is made among."""
BOOTSTRAPS = 200
"""Resamplings the refusal point is averaged over (`choose_threshold`)."""
SEED = 20
TARGET_REFUSED, TARGET_GROUNDED = 0.90, 0.80
MODEL_PATH = REPO / "chinvex" / "answer" / MODEL_FILE


# -- the rows -----------------------------------------------------------------------------------

def dump(out: Path, data: Path = DATA, k: int = 8) -> list[dict]:
    """Every visible LoCoMo question answered with the gate open, written to `out`."""
    import answers
    from chinvex.retrieval.search import Searcher

    answers.LOCOMO_ONLY = True
    conversations, _ = answers.prepare(data)
    questions = {c: qs for c, qs in answers.locomo_questions(data).items() if c in conversations}
    searcher = Searcher()
    rows = []
    try:
        for conv, qs in questions.items():
            for row in answers.ask_all(conversations[conv], qs, k=k, searcher=searcher, min_confidence=0.0):
                rows.append({**row, "conv": conv})
            print(f"{conv}: {len(qs)} questions", file=sys.stderr)
    finally:
        searcher.close()
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")
    return rows


def label(row: dict) -> int:
    """1 when the open-gate answer is right (see the module docstring), else 0."""
    return int(bool(row["answerable"] and row["grounded"] and (row["gold_cited"] or row["f1"] >= F1_BAR)))


def answered(rows: list[dict]) -> list[dict]:
    """The rows the open gate answered: the ones a refusal point decides."""
    return [r for r in rows if r["grounded"] and r.get("features")]


# -- the model ----------------------------------------------------------------------------------

def fit(rows: list[dict], l2: float = L2) -> GateModel:
    """Logistic regression by Newton's method on the answered rows' standardised features."""
    x = np.array([vector(r["features"], FEATURES) for r in rows], dtype=float)
    y = np.array([label(r) for r in rows], dtype=float)
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale == 0] = 1.0
    z = np.hstack([np.ones((len(x), 1)), (x - mean) / scale])
    w = np.zeros(z.shape[1])
    penalty = np.eye(z.shape[1]) * l2
    penalty[0, 0] = 0.0
    for _ in range(50):
        p = 1.0 / (1.0 + np.exp(-(z @ w)))
        gradient = z.T @ (p - y) + penalty @ w
        hessian = (z * (p * (1 - p))[:, None]).T @ z + penalty
        step = np.linalg.solve(hessian, gradient)
        w -= step
        if np.abs(step).max() < 1e-8:
            break
    return GateModel(FEATURES, tuple(mean.tolist()), tuple(scale.tolist()), tuple(w[1:].tolist()), float(w[0]), 0.5)


def predict(model: GateModel, rows: list[dict]) -> list[float]:
    return [model.probability(r["features"]) if r.get("features") else 0.0 for r in rows]


# -- figures at a refusal point -----------------------------------------------------------------

def figures(rows: list[dict], probs: list[float], threshold: float) -> dict[str, float]:
    """A conversation's figures when answers below `threshold` are refused."""
    kept = [r["grounded"] and p >= threshold for r, p in zip(rows, probs)]
    answerable = [(r, k) for r, k in zip(rows, kept) if r["answerable"]]
    adversarial = [k for r, k in zip(rows, kept) if not r["answerable"]]
    share = lambda values: sum(values) / len(values) if values else 0.0  # noqa: E731
    return {
        "refused": share([not k for k in adversarial]),
        "grounded": share([k for _, k in answerable]),
        "gold_cited": share([k and r["gold_cited"] for r, k in answerable]),
        "f1": share([r["f1"] if k else 0.0 for r, k in answerable]),
    }


def _kept_matrix(rows: list[dict], probs: list[float]) -> tuple[np.ndarray, np.ndarray]:
    """Per row and grid point: is the answer kept (answered with the gate open and at least that
    confident)? And per row: is the question answerable?"""
    p = np.array(probs, dtype=float).reshape(-1)
    answered_open = np.array([bool(r["grounded"]) for r in rows])
    answerable = np.array([bool(r["answerable"]) for r in rows])
    return answered_open[:, None] & (p[:, None] >= np.array(THRESHOLDS)[None, :] - 1e-12), answerable


def _best_point(kept: list[tuple[np.ndarray, np.ndarray]], weights: list[np.ndarray]) -> float:
    """The grid point with the largest worst-conversation margin to the targets when each
    conversation's rows count `weights` times (ties: the larger pooled margin, then the lower point)."""
    worst = np.full(len(THRESHOLDS), np.inf)
    refused = grounded = 0.0
    adversarial = answerable = 0.0
    for (k, is_answerable), w in zip(kept, weights):
        wa, wd = w * is_answerable, w * ~is_answerable
        conv_refused, conv_grounded = wd @ ~k, wa @ k
        worst = np.minimum(worst, np.minimum(conv_refused / max(wd.sum(), 1.0) - TARGET_REFUSED,
                                             conv_grounded / max(wa.sum(), 1.0) - TARGET_GROUNDED))
        refused, grounded = refused + conv_refused, grounded + conv_grounded
        adversarial, answerable = adversarial + wd.sum(), answerable + wa.sum()
    pooled = np.minimum(refused / max(adversarial, 1.0) - TARGET_REFUSED,
                        grounded / max(answerable, 1.0) - TARGET_GROUNDED)
    keys = [(round(float(a), 6), round(float(b), 6), -t) for a, b, t in zip(worst, pooled, THRESHOLDS)]
    return THRESHOLDS[max(range(len(THRESHOLDS)), key=keys.__getitem__)]


def choose_threshold(by_conv: dict[str, list[dict]], probs: dict[str, list[float]]) -> float:
    """The refusal point: the mean, over `BOOTSTRAPS` resamplings of each conversation's
    questions, of the point with the largest worst-conversation margin to the targets, to three
    decimals (rounding to the grid's 0.01 would bring back a jump of a whole step whenever the
    mean crosses a half-step). The margins of neighbouring points are near ties that one question decides (a
    conversation has 24 to 47 adversarial ones), so the plain argmax jumped when one training
    label changed; the mean of the resampled argmaxes moves little. Deterministic (fixed seed)."""
    kept = [_kept_matrix(by_conv[c], probs[c]) for c in by_conv]
    rng = np.random.default_rng(SEED)
    points = []
    for _ in range(BOOTSTRAPS):
        weights = [rng.multinomial(len(a), np.full(len(a), 1.0 / len(a))).astype(float) for _, a in kept]
        points.append(_best_point(kept, weights))
    return round(float(np.mean(points)), 3)


def out_of_fold(by_conv: dict[str, list[dict]]) -> dict[str, list[float]]:
    """Each conversation's probabilities from a model fitted on the others."""
    probs = {}
    for held in by_conv:
        model = fit(answered([r for c, rows in by_conv.items() if c != held for r in rows]))
        probs[held] = predict(model, by_conv[held])
    return probs


def held_out(by_conv: dict[str, list[dict]]) -> dict[str, tuple[float, dict[str, float]]]:
    """Per conversation: the refusal point chosen on the other five (from their own
    leave-one-out predictions) and the held-out conversation's figures with the model fitted on
    those five, at that point. Nothing about the held-out conversation is used to fit or choose."""
    out = {}
    for held in by_conv:
        train = {c: rows for c, rows in by_conv.items() if c != held}
        threshold = choose_threshold(train, out_of_fold(train))
        model = fit(answered([r for rows in train.values() for r in rows]))
        out[held] = (threshold, figures(by_conv[held], predict(model, by_conv[held]), threshold))
    return out


def reliability(by_conv: dict[str, list[dict]], probs: dict[str, list[float]]) -> list[tuple[str, int, float, float]]:
    """Held-out predictions of the answered rows by decile of predicted probability: (bucket,
    answers, mean predicted, observed share right)."""
    pairs = [(p, label(r)) for c in by_conv for r, p in zip(by_conv[c], probs[c]) if r["grounded"] and r.get("features")]
    table = []
    for i in range(10):
        low, high = i / 10, (i + 1) / 10
        inside = [(p, y) for p, y in pairs if low <= p < high or (i == 9 and p == 1.0)]
        if inside:
            table.append((f"{low:.1f}-{high:.1f}", len(inside), sum(p for p, _ in inside) / len(inside),
                          sum(y for _, y in inside) / len(inside)))
    return table


# -- report ---------------------------------------------------------------------------------------

def _line(name: str, f: dict[str, float]) -> str:
    return (f"{name}: refused {f['refused']:.3f}, grounded {f['grounded']:.3f}, gold cited {f['gold_cited']:.3f}, "
            f"F1 {f['f1']:.3f}")


def _spread(per: dict[str, dict[str, float]], key: str) -> str:
    values = [f[key] for f in per.values()]
    return f"{min(values):.3f}-{max(values):.3f}"


def report(by_conv: dict[str, list[dict]]) -> tuple[float, dict[str, list[float]]]:
    """Print the held-out figures, the default refusal point and the reliability table; return
    the point and the held-out probabilities."""
    print(f"rows: {sum(len(r) for r in by_conv.values())}, answered with the gate open: "
          f"{sum(len(answered(r)) for r in by_conv.values())}, right: "
          f"{sum(label(r) for rows in by_conv.values() for r in rows)}")
    rules = {c: figures(rows, [float((r.get("features") or {}).get("passes_rules", 0.0)) for r in rows], 0.5)
             for c, rows in by_conv.items()}
    for conv, f in rules.items():
        print(_line(f"before: the hand-set thresholds, {conv}", f))
    for key in ("refused", "grounded", "gold_cited", "f1"):
        print(f"before: spread {key}: {_spread(rules, key)}")
    loo = held_out(by_conv)
    per = {c: f for c, (_, f) in loo.items()}
    for conv, (t, f) in loo.items():
        print(_line(f"held out {conv} (point {t:.3f}, chosen on the other five)", f))
    for key in ("refused", "grounded", "gold_cited", "f1"):
        print(f"spread {key}: {_spread(per, key)}")
    probs = out_of_fold(by_conv)
    default = choose_threshold(by_conv, probs)
    print(f"default refusal point (held-out predictions of all six): {default:.3f}")
    for conv in by_conv:
        print(_line(f"  {conv} at {default:.3f}, held-out model", figures(by_conv[conv], probs[conv], default)))
    print("reliability (held-out predictions, answered with the gate open):")
    print("| predicted | answers | mean predicted | observed right |")
    for bucket, n, predicted, observed in reliability(by_conv, probs):
        print(f"| {bucket} | {n} | {predicted:.3f} | {observed:.3f} |")
    return default, probs


def rows_by_conversation(parser: argparse.ArgumentParser,
                         dump_rows) -> tuple[argparse.Namespace, list[dict], dict[str, list[dict]]]:
    """The parsed arguments, the rows, and the rows by conversation: answered now (`--dump OUT`, through
    `dump_rows(out, data)`) or read from an earlier dump (`--rows FILE`); adds those options."""
    parser.add_argument("--dump", type=Path, help="answer every question with the gate open and write the rows here")
    parser.add_argument("--rows", type=Path, help="fit from rows a --dump wrote")
    add_data_argument(parser)
    args = parser.parse_args()
    if (args.dump is None) == (args.rows is None):
        parser.error("give one of --dump OUT or --rows FILE")
    if args.dump is not None:
        rows = dump_rows(args.dump, args.data)
    else:
        try:
            rows = [json.loads(line) for line in args.rows.read_text("utf-8").splitlines() if line.strip()]
        except (OSError, ValueError) as exc:
            parser.error(f"--rows {args.rows}: {exc}")
    by_conv: dict[str, list[dict]] = {}
    for row in rows:
        by_conv.setdefault(row["conv"], []).append(row)
    return args, rows, by_conv


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help=f"write the final model to {MODEL_PATH}")
    args, rows, by_conv = rows_by_conversation(parser, dump)
    default, _ = report(by_conv)
    if args.write:
        model = fit(answered(rows))
        final = GateModel(model.features, model.mean, model.scale, model.weights, model.intercept, default)
        MODEL_PATH.write_text(final.to_json(fitted="bench/fit_gate.py on LoCoMo conv-26, 30, 42, 44, 47, 48",
                                            label=f"gold turn cited or token F1 >= {F1_BAR}", l2=L2), "utf-8")
        print(f"wrote {MODEL_PATH.relative_to(REPO)}")


if __name__ == "__main__":
    main()
