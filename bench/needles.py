"""The word you typed is always found: single rare terms and identifiers drawn from each visible
corpus, searched alone in hybrid mode; recall@10 counts the chunks that contain the term (up to
10) found in the top 10.

The needles are drawn from the index itself, not from any question set: every word of every
chunk (as the full-text index's tokenizer would see it, identifiers kept whole) that occurs in
1 to MAX_DF chunks, at least MIN_LENGTH characters long and with a letter in it; NEEDLES of them
per set, a fixed seed, half identifiers (snake_case, camelCase, with digits or dots) when the
corpus has them. The contexts are bench/quality.py's, built once under bench/out/quality.

    python bench/needles.py [--set NAME ...] [--needles N] [--data DIR]
"""

from __future__ import annotations

import argparse
import random
import re
import sqlite3
import sys
from pathlib import Path

from common import Figure, print_figures
from evalsets import DATA, add_data_argument

NEEDLES = 60
MAX_DF = 3
MIN_LENGTH = 5
K = 10
SEED = 41
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*[A-Za-z0-9]")
_IDENTIFIER = re.compile(r"[a-z0-9]_[a-z0-9]|[a-z][A-Z]|[A-Za-z][0-9]|[A-Za-z]\.[A-Za-z]")


def needles(db: Path, count: int, seed: int = SEED) -> list[tuple[str, set[str]]]:
    """(term, the chunk ids the full-text index matches for it) for `count` terms that the index
    matches in 1 to MAX_DF chunks (its own tokenizer and stemming decide, as for a search)."""
    from chinvex.retrieval.lexical import phrase

    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        words: set[str] = set()
        for (text,) in conn.execute("SELECT text FROM chunks"):
            words.update(w for w in _WORD.findall(text) if len(w) >= MIN_LENGTH and not w.isdigit())
        rnd = random.Random(seed)
        ordered = sorted(words)
        rnd.shuffle(ordered)
        identifiers = [w for w in ordered if _IDENTIFIER.search(w)]
        plain = [w for w in ordered if not _IDENTIFIER.search(w)]
        picked: list[tuple[str, set[str]]] = []
        for pool, wanted in ((identifiers, count // 2), (plain, count)):
            for word in pool:
                if len(picked) >= wanted:
                    break
                ids = {row[0] for row in conn.execute(
                    "SELECT c.chunk_id FROM chunks_fts f JOIN chunks c ON c.rowid = f.rowid "
                    "WHERE chunks_fts MATCH ? LIMIT ?", (phrase(word), MAX_DF + 1))}
                if 1 <= len(ids) <= MAX_DF:
                    picked.append((word, ids))
        return picked
    finally:
        conn.close()


def recall_at_k(found: list[str], holding: set[str], k: int = K) -> float:
    return len(set(found[:k]) & holding) / min(len(holding), k)


def run_set(name: str, data: Path, count: int) -> list[Figure]:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import os

    from quality import SETS, prepare

    spec = SETS[name]
    home = prepare(spec.name, spec.roots(data), spec.include)
    os.environ["CHINVEX_HOME"] = str(home)
    from chinvex.context.registry import Registry
    from chinvex.retrieval.search import SearchRequest, Searcher

    config = Registry().resolve(spec.name)
    drawn = needles(Path(config.index.sqlite_path), count)
    searcher = Searcher()
    misses: list[str] = []
    scores = []
    try:
        for term, holding in drawn:
            response = searcher.search([config], SearchRequest(query=term, k=K))
            score = recall_at_k([r.chunk_id for r in response.results], holding)
            scores.append(score)
            if score < 1:
                misses.append(term)
    finally:
        searcher.close()
    mean = sum(scores) / len(scores) if scores else float("nan")
    note = f"{len(drawn)} needles (df 1-{MAX_DF}); missed: {', '.join(misses[:6]) or 'none'}"
    return [Figure(f"{spec.label}: needle recall@{K}", mean, "recall", "= 1.0", mean >= 1.0, note)]


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", action="append", dest="sets", help="only this set (repeatable)")
    parser.add_argument("--needles", type=int, default=NEEDLES, help=f"needles per set (default {NEEDLES})")
    add_data_argument(parser)
    args = parser.parse_args()
    figures: list[Figure] = []
    for name in args.sets or ["locomo", "scifact", "cosqa-dev", "swe-qa-requests", "chinvex"]:
        figures += run_set(name, args.data, args.needles)
    print_figures("Needles: the word you typed", figures)
