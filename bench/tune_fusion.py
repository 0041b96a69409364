"""Measure fusion settings (candidate depth of each leg, completing both signals on the union)
on an indexed bench context, to choose the defaults from data. Run after bench/quality.py has
built the indexes:

    python bench/tune_fusion.py locomo|scifact [LIMIT] [--data DIR]
"""

from __future__ import annotations

import argparse
import itertools
import os
from pathlib import Path

from evalsets import DATA, add_data_argument, locomo, scifact_golden
from quality import OUT

GOLDEN = {
    "locomo": lambda data: locomo(data) / "golden-conv26-conv30.json",
    "scifact": scifact_golden,
}


def main(name: str, depths=(20, 50, 100), limit: int | None = None, data: Path = DATA) -> None:
    os.environ["CHINVEX_HOME"] = str(OUT / name / "home")
    from chinvex.eval.golden import load_golden
    from chinvex.eval.runner import run_eval
    from chinvex.registry import Registry
    from chinvex.retrieval.search import Searcher

    golden = load_golden(GOLDEN[name](data))
    if limit:
        golden.queries = golden.queries[:limit]
    config = Registry().resolve(name)
    searcher = Searcher()
    print(f"{name}: {len(golden.queries)} queries")
    for mode in ("fts", "vector"):
        m = run_eval(config, golden, resolve=Registry().resolve, k=10, searcher=searcher, mode=mode)["metrics"]
        print(f"  {mode:<7} nDCG {m['ndcg']:.4f} recall {m['recall']:.4f} MRR {m['mrr']:.4f}")
    for fts_depth, vec_depth, complete in itertools.product(depths, depths, (False, True)):
        opts = {"fts_depth": fts_depth, "vector_depth": vec_depth, "complete_scores": complete}
        m = run_eval(config, golden, resolve=Registry().resolve, k=10, searcher=searcher,
                     request_options=opts)["metrics"]
        print(f"  hybrid fts {fts_depth:>3} vec {vec_depth:>3} complete {complete!s:<5} "
              f"nDCG {m['ndcg']:.4f} recall {m['recall']:.4f} MRR {m['mrr']:.4f}", flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("name", choices=sorted(GOLDEN))
    parser.add_argument("limit", nargs="?", type=int, help="only the first LIMIT questions")
    add_data_argument(parser)
    args = parser.parse_args()
    main(args.name, limit=args.limit, data=args.data)
