"""Re-rankings of the fused candidates that were measured and not taken (ARCHITECTURE.md,
"Retrieval"), so that each figure quoted there can be checked and the ideas are not tried again
blind. Run after bench/quality.py has built the indexes and `bench/tune_fusion.py collect` has
kept each question's candidates:

    python bench/rerank_variants.py                      # every variant on every set
    python bench/rerank_variants.py --only mmr --set locomo
    python bench/rerank_variants.py --only code_text     # CoSQA's corpus embedded other ways

Every variant starts from chinvex's own ranking (the default fusion over the candidates the real
legs returned, as bench/tune_fusion.py scores it) and changes one thing:

- `agreement`: the lexical share moved by a x (share of chunks the legs' top tens have in
  common - centre);
- `prf`: pseudo-relevance feedback on the vector leg: the query vector moved toward the mean of
  the top m fused chunks' vectors (weight beta), every candidate's cosine recomputed;
- `sibling`: a chunk raised by g x the best score of another chunk of its document;
- `mmr`: maximal marginal relevance over the top 20, against chunks of the same document or
  against every chunk chosen so far (cosine of stored vectors);
- `coverage` / `proximity`: an IDF-weighted share of the question's words in the chunk, or of
  its adjacent word pairs within four tokens of each other, blended in at g;
- `paragraphs`: each blank-line block of a candidate chunk embedded on its own; a chunk's
  cosine becomes alpha x its own + (1 - alpha) x its best block's (embeds those blocks: minutes
  on SciFact);
- `code_text` (CoSQA only, vector leg alone over the whole corpus): functions embedded with
  their identifiers split into words, with the docstring first, with the docstring alone, or
  without the path in the header line.

The candidates are those of the default legs, so a variant that would change what a leg returns
is measured on the pool it would re-rank; that is how each would be built (a re-ranking stage).
Prints a table; writes nothing.
"""

from __future__ import annotations

import argparse
import ast
import copy
import math
import re
import sqlite3
import statistics
import sys
import tarfile
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from common import REPO  # noqa: F401  (puts the repository on sys.path)
from evalsets import DATA, add_data_argument
from quality import SETS
from tune_fusion import TUNE, candidates_of, context_config, load, metrics_of

STOP = frozenset(
    "a an the of to in on for and or is are was were be been being do does did how what which who "
    "whom when where why with by at from as that this these those it its into than then there "
    "their they them he she his her i you we our your my me not no can could would should will "
    "shall may might must has have had about after before over under between".split())
_WORD = re.compile(r"[a-z0-9]+")
POOL = 20
"""MMR reorders this many of the top fused candidates (a reader's first two pages)."""


def words(text: str) -> list[str]:
    """Lower-case word tokens cut to six characters: a crude stemmer, enough to compare."""
    return [w[:6] for w in _WORD.findall(text.lower())]


@dataclass
class SetData:
    """One visible set's collected candidates and what the variants need beside them."""

    name: str
    metric: str
    queries: list[dict]
    query_vectors: dict[str, object]
    chunk_vectors: dict[str, object]
    doc_of: dict[str, str]
    text_of: dict[str, str]
    df: Counter
    chunks: int


def _unit(v):
    import numpy as np

    v = np.asarray(v, dtype=np.float64)
    return v / (np.linalg.norm(v) or 1.0)


def gather(name: str) -> SetData:
    """The set's collected questions, their query vectors, and each candidate's stored vector,
    document, text and the corpus's word document frequencies."""
    from chinvex.retrieval.search import Searcher

    data = load(name)
    config = context_config(name)
    searcher = Searcher()
    try:
        handle = searcher.handle(config)
        store = searcher._store(handle)
        embedder = searcher.embedder(config)
        query_vectors = {q["id"]: _unit(embedder.embed_query(q["query"])) for q in data["queries"]}
        wanted = sorted({c["chunk_id"] for q in data["queries"] for c in q["candidates"]})
        chunk_vectors = {cid: _unit(v) for cid, v in store.embeddings(wanted).items()}
    finally:
        searcher.close()
    conn = sqlite3.connect(config.index.sqlite_path)
    try:
        doc_of, text_of, df, chunks = {}, {}, Counter(), 0
        wanted_set = set(wanted)
        for chunk_id, doc_id, text in conn.execute("SELECT chunk_id, doc_id, search_text FROM chunks"):
            chunks += 1
            df.update(set(words(text)))
            if chunk_id in wanted_set:
                doc_of[chunk_id], text_of[chunk_id] = doc_id, text
    finally:
        conn.close()
    return SetData(name, data["metric"], data["queries"], query_vectors, chunk_vectors, doc_of,
                   text_of, df, chunks)


# -- the default ranking, and each variant's --------------------------------------------------

@dataclass
class Ranked:
    """A question's candidates in chinvex's default order, with what fusion computed."""

    candidates: list[dict]
    fused: list  # chinvex.retrieval.fusion.Fused, same order
    share: float


def default_ranking(query: dict, share_shift: Callable[[list], float] | None = None) -> Ranked:
    from chinvex.retrieval.fusion import fts_share, fuse, query_signals

    cands = candidates_of(query)
    share = fts_share(query_signals(query["query"], cands))
    if share_shift is not None:
        share = min(0.95, max(0.05, share + share_shift(cands)))
    weights = {"t": {c["source_type"]: c["weight"] for c in query["candidates"]}}
    by_id = {c["chunk_id"]: c for c in query["candidates"]}
    fused = fuse(cands, weights, fts_weight=share)
    return Ranked([by_id[f.candidate.chunk_id] for f in fused], fused, share)


def reorder(ranked: Ranked, score: Callable[[object], float]) -> list[dict]:
    """The candidates by a new score of each Fused (ties by chunk id, as fusion breaks them)."""
    order = sorted(zip(ranked.fused, ranked.candidates), key=lambda p: (-score(p[0]), p[1]["chunk_id"]))
    return [c for _, c in order]


def agreement(cands: list, depth: int = 10) -> float:
    lexical = sorted((c for c in cands if c.fts is not None), key=lambda c: -c.fts)[:depth]
    vector = sorted((c for c in cands if c.vector is not None), key=lambda c: -c.vector)[:depth]
    return len({c.chunk_id for c in lexical} & {c.chunk_id for c in vector}) / depth


def with_agreement(s: SetData, q: dict, a: float, centre: float) -> list[dict]:
    return default_ranking(q, lambda cands: a * (agreement(cands) - centre)).candidates


def with_prf(s: SetData, q: dict, m: int, beta: float) -> list[dict]:
    import numpy as np

    base = default_ranking(q).candidates
    top = [s.chunk_vectors[c["chunk_id"]] for c in base[:m] if c["chunk_id"] in s.chunk_vectors]
    if not top:
        return base
    moved = _unit(s.query_vectors[q["id"]] + beta * _unit(np.mean(top, axis=0)))
    changed = copy.deepcopy(q)
    for c in changed["candidates"]:
        v = s.chunk_vectors.get(c["chunk_id"])
        if v is not None:
            c["vector"] = float(np.dot(moved, v))
    return default_ranking(changed).candidates


def with_sibling(s: SetData, q: dict, g: float) -> list[dict]:
    ranked = default_ranking(q)
    by_doc: dict[str, list[float]] = {}
    for f in ranked.fused:
        by_doc.setdefault(s.doc_of.get(f.candidate.chunk_id, f.candidate.chunk_id), []).append(f.rank_score)

    def score(f) -> float:
        others = sorted(by_doc[s.doc_of.get(f.candidate.chunk_id, f.candidate.chunk_id)], reverse=True)
        others.remove(f.rank_score)
        return f.rank_score + (g * others[0] if others else 0.0)

    return reorder(ranked, score)


def with_mmr(s: SetData, q: dict, lam: float, same_doc: bool) -> list[dict]:
    import numpy as np

    ranked = default_ranking(q)
    pool = list(zip(ranked.candidates[:POOL], (f.rank_score for f in ranked.fused[:POOL])))
    rest = ranked.candidates[POOL:]
    top = pool[0][1] if pool and pool[0][1] > 0 else 1.0
    chosen: list[dict] = []
    while pool:
        best, best_value = 0, -math.inf
        for i, (c, score) in enumerate(pool):
            v = s.chunk_vectors.get(c["chunk_id"])
            penalty = 0.0
            for d in chosen:
                if same_doc and s.doc_of.get(d["chunk_id"]) != s.doc_of.get(c["chunk_id"]):
                    continue
                u = s.chunk_vectors.get(d["chunk_id"])
                if v is not None and u is not None:
                    penalty = max(penalty, float(np.dot(v, u)))
            value = lam * score / top - (1 - lam) * penalty
            if value > best_value:
                best, best_value = i, value
        chosen.append(pool.pop(best)[0])
    return chosen + rest


def _idf(s: SetData, word: str) -> float:
    return math.log(1 + s.chunks / (1 + s.df.get(word, 0)))


def coverage(s: SetData, question: list[str], text: list[str]) -> float:
    present, asked = set(text), set(question)
    total = sum(_idf(s, w) for w in asked)
    return sum(_idf(s, w) for w in asked if w in present) / total if total else 0.0


def proximity(s: SetData, question: list[str], text: list[str], window: int = 4) -> float:
    positions: dict[str, list[int]] = {}
    for i, w in enumerate(text):
        positions.setdefault(w, []).append(i)
    total = found = 0.0
    for a, b in zip(question, question[1:]):
        weight = min(_idf(s, a), _idf(s, b))
        total += weight
        pa, pb = positions.get(a), positions.get(b)
        if pa and pb and any(abs(x - y) <= window for x in pa for y in pb):
            found += weight
    return found / total if total else 0.0


def with_term_score(s: SetData, q: dict, g: float, kind: str) -> list[dict]:
    ranked = default_ranking(q)
    question = [w for w in words(q["query"]) if w not in STOP]
    measure = coverage if kind == "coverage" else proximity

    def score(f) -> float:
        x = measure(s, question, words(s.text_of.get(f.candidate.chunk_id, "")))
        return ((1 - g) * f.blended + g * x) * f.weight * f.role_weight

    return reorder(ranked, score)


def paragraphs_of(text: str) -> list[str]:
    """A chunk's blank-line blocks, each under the chunk's header line; none for one block."""
    header, _, body = text.partition("\n")
    blocks = [b.strip() for b in body.split("\n\n") if b.strip()]
    return [f"{header}\n{b}" for b in blocks] if len(blocks) > 1 else []


def paragraph_vectors(s: SetData) -> dict[str, list]:
    """Each candidate chunk's blocks, embedded by the set's embedder (None: one block)."""
    from chinvex.retrieval.search import Searcher

    searcher = Searcher()
    try:
        embedder = searcher.embedder(context_config(s.name))
        owners, texts = [], []
        for chunk_id, text in s.text_of.items():
            for block in paragraphs_of(text):
                owners.append(chunk_id)
                texts.append(block)
        vectors = embedder.embed_documents(texts) if texts else []
    finally:
        searcher.close()
    out: dict[str, list] = {}
    for owner, v in zip(owners, vectors):
        out.setdefault(owner, []).append(_unit(v))
    return out


def with_paragraphs(s: SetData, q: dict, alpha: float, blocks: dict[str, list]) -> list[dict]:
    import numpy as np

    qv = s.query_vectors[q["id"]]
    changed = copy.deepcopy(q)
    for c in changed["candidates"]:
        own = blocks.get(c["chunk_id"])
        if own and c["vector"] is not None:
            best = max(float(np.dot(qv, v)) for v in own)
            c["vector"] = alpha * c["vector"] + (1 - alpha) * best
    return default_ranking(changed).candidates


# -- CoSQA's corpus embedded other ways ---------------------------------------------------------

def _split_identifier(match: re.Match) -> str:
    word = match.group(0)
    if "_" not in word.strip("_") and not re.search(r"[a-z][A-Z]", word):
        return word
    return " ".join(re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", word).replace("_", " ").split())


def _name_and_docstring(source: str) -> tuple[str, str]:
    try:
        node = ast.parse(source).body[0]
        return getattr(node, "name", ""), ast.get_docstring(node) or ""  # type: ignore[arg-type]
    except (SyntaxError, IndexError, TypeError):
        return "", ""


CODE_TEXTS: dict[str, Callable[[str, str], str]] = {
    "path · name header, then the code": lambda path, src: f"{path} · {_name_and_docstring(src)[0]}\n{src}",
    "identifiers split into words": lambda path, src: (
        f"{path} · {_name_and_docstring(src)[0]}\n" + re.sub(r"[A-Za-z_][A-Za-z0-9_]*", _split_identifier, src)),
    "no path in the header": lambda path, src: f"{_name_and_docstring(src)[0]}\n{src}",
    "docstring first": lambda path, src: (
        f"{_name_and_docstring(src)[0].replace('_', ' ')}: {_name_and_docstring(src)[1]}\n{src}"
        if _name_and_docstring(src)[1] else f"{path} · {_name_and_docstring(src)[0]}\n{src}"),
    "docstring alone": lambda path, src: (
        f"{_name_and_docstring(src)[0].replace('_', ' ')}: {_name_and_docstring(src)[1]}"
        if _name_and_docstring(src)[1] else f"{path} · {_name_and_docstring(src)[0]}\n{src}"),
}
"""Ways to present a CoSQA function to the embedder; the first has the shape of a chinvex chunk
of a one-function file (a header line naming the path and the function, then the code)."""


def code_text_variants(data: Path) -> Iterator[tuple[str, float]]:
    """Vector-only MRR@10 of CoSQA dev over the whole corpus for each CODE_TEXTS way."""
    import json

    import numpy as np

    from chinvex.embedding.builtin import BuiltinEmbedder

    with tarfile.open(data / "cosqa-dev" / "cosqa_functions.tar.gz") as archive:
        files = sorted((m.name, archive.extractfile(m).read().decode("utf-8"))  # type: ignore[union-attr]
                       for m in archive.getmembers() if m.isfile() and m.name.endswith(".py"))
    golden = json.loads((data / "cosqa-dev" / "golden-dev.json").read_text(encoding="utf-8"))
    embedder = BuiltinEmbedder.from_config(None)
    queries = [(q, _unit(embedder.embed_query(q["query"]))) for q in golden["queries"] if q.get("expected")]
    names = [name for name, _ in files]
    for label, present in CODE_TEXTS.items():
        matrix = np.asarray([_unit(v) for v in embedder.embed_documents([present(n, src) for n, src in files])])
        reciprocal = []
        for q, qv in queries:
            wanted = {e["path"] for e in q["expected"]}
            top = np.argsort(-(matrix @ qv))[:10]
            reciprocal.append(next((1 / r for r, j in enumerate(top, 1) if names[j] in wanted), 0.0))
        yield label, statistics.fmean(reciprocal)


# -- the table ----------------------------------------------------------------------------------

GRIDS: dict[str, list[dict]] = {
    "agreement": [{"a": a, "centre": c} for a in (-0.3, -0.15, 0.15, 0.3) for c in (0.3, 0.5)],
    "prf": [{"m": m, "beta": b} for m in (1, 3, 5, 10) for b in (0.25, 0.5, 1.0)],
    "sibling": [{"g": g} for g in (0.05, 0.1, 0.2, 0.3)],
    "mmr": [{"lam": lam, "same_doc": same} for same in (True, False) for lam in (0.95, 0.9, 0.85, 0.8, 0.7)],
    "coverage": [{"g": g} for g in (0.05, 0.1, 0.2, 0.3)],
    "proximity": [{"g": g} for g in (0.05, 0.1, 0.2, 0.3)],
    "paragraphs": [{"alpha": a} for a in (0.7, 0.5, 0.3, 0.0)],
}


def variant_rankings(kind: str, params: dict, s: SetData, blocks: dict | None) -> Iterator[list[dict]]:
    for q in s.queries:
        if kind == "agreement":
            yield with_agreement(s, q, params["a"], params["centre"])
        elif kind == "prf":
            yield with_prf(s, q, params["m"], params["beta"])
        elif kind == "sibling":
            yield with_sibling(s, q, params["g"])
        elif kind == "mmr":
            yield with_mmr(s, q, params["lam"], params["same_doc"])
        elif kind in ("coverage", "proximity"):
            yield with_term_score(s, q, params["g"], kind)
        elif kind == "paragraphs":
            yield with_paragraphs(s, q, params["alpha"], blocks or {})
        else:
            raise ValueError(kind)


def headline(s: SetData, rankings: Iterator[list[dict]]) -> float:
    return statistics.fmean(metrics_of(q, r)[s.metric] for q, r in zip(s.queries, rankings))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", action="append", choices=sorted(SETS), dest="sets")
    parser.add_argument("--only", action="append", choices=[*GRIDS, "code_text"], dest="kinds")
    add_data_argument(parser)
    args = parser.parse_args()
    kinds = args.kinds or [*GRIDS, "code_text"]
    names = [n for n in (args.sets or list(SETS)) if (TUNE / f"{n}.json.gz").exists()]
    if not names and any(k != "code_text" for k in kinds):
        print("no collected candidates: run bench/quality.py, then bench/tune_fusion.py collect",
              file=sys.stderr)
        return 1
    sets = {n: gather(n) for n in names} if any(k != "code_text" for k in kinds) else {}
    if sets:
        base = {n: headline(s, (default_ranking(q).candidates for q in s.queries)) for n, s in sets.items()}
        print("variant | " + " | ".join(f"{n} ({sets[n].metric})" for n in names) + " | mean")
        print("default | " + " | ".join(f"{base[n]:.3f}" for n in names) + f" | {statistics.fmean(base.values()):.4f}",
              flush=True)
    for kind in kinds:
        if kind == "code_text":
            for label, value in code_text_variants(args.data):
                print(f"code_text CoSQA dev vector MRR@10, {label} | {value:.3f}", flush=True)
            continue
        blocks = {n: paragraph_vectors(s) for n, s in sets.items()} if kind == "paragraphs" else {}
        for params in GRIDS[kind]:
            values = [headline(sets[n], variant_rankings(kind, params, sets[n], blocks.get(n))) for n in names]
            print(f"{kind} {params} | " + " | ".join(f"{v:.3f}" for v in values)
                  + f" | {statistics.fmean(values):.4f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
