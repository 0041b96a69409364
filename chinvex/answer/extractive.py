"""The default generator: offline, deterministic, quotes the evidence instead of paraphrasing it.

Two steps.

1. **Does the evidence answer the question at all?** Judged from signals with an absolute
   meaning, never from the per-query min-max scores (which give the top hit 1.0 whatever it is):
   - *coverage*: the share of the question's content terms (stemmed like the index, weighted by
     their inverse document frequency in this context) that one passage contains. A passage is a
     turn of a dialogue, a paragraph of prose, or a whole code chunk (plus its file/heading
     header). Questions ("...?") never count as support: they ask, they do not tell.
   - *who it is about*: when the question names a participant of a dialogue ("What did Caroline
     realize after her charity race?"), only what the dialogue says about that person counts
     (units.py resolves "I", "you" and forms of address), and if the evidence says much more
     about someone else (Melanie ran the race) the support drops by CONTRAST times the gap.
   - *relatedness*: the raw cosine of the closest chunk (under MIN_COSINE nothing retrieved is
     about the question, whatever words it shares), and whether the two legs of retrieval agree
     on the best passage's chunk (among the best few, or near-tied with the best, by raw BM25
     *and* among the best few by cosine), which lowers the coverage needed by AGREEMENT_RELIEF.
   Below the threshold of the passage kind, the generator refuses with the refusal text and a
   reason, and the grounding gate reports GROUNDING_FAILED.

2. **Compose**: the most relevant sentences / lines of the best passages (at most MAX_QUOTES
   from at most MAX_CHUNKS chunks), grouped by chunk into paragraphs, each paragraph ending with
   its `[chunk:<id>]`.

The thresholds were calibrated on LoCoMo (bench/answers.py: 231 answerable and 71 adversarial
questions over two long chats) and on this repository's golden queries plus off-topic
questions (tests/test_answer.py); the figures are in bench/RESULTS.md.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from chinvex.answer.base import GenerationRequest, Generated
from chinvex.answer.evidence import Evidence
from chinvex.answer.grounding import REFUSAL, cite
from chinvex.answer.text import Stemmer, TermWeights, content_words
from chinvex.answer.units import Unit, _same_person, split_evidence
from chinvex.retrieval.lexical import index_text

MIN_SUPPORT = {"dialogue": 0.46, "prose": 0.5, "code": 0.5}
"""Least support (IDF-weighted share of the question's terms in one passage) per passage kind."""
AGREEMENT_RELIEF = 0.1
"""Support needed drops by this much when both retrieval legs rank the passage's chunk top-3."""
CONTRAST = 2.0
"""How much a better description of someone else lowers the support for the one asked about."""
MIN_COSINE = 0.2
"""Below this raw cosine (when vectors exist) a chunk is unrelated whatever words it shares."""
USER_ROLES = frozenset({"user", "human", "you", "me", "prompt"})
REPLY_ROLES = frozenset({"assistant", "ai", "model", "chatgpt", "claude", "bot", "tool", "response"})
"""Role labels of chat transcripts: a reply's passage includes the request it answers."""
MAX_CHUNKS = 4
MAX_QUOTES = 4
RELATIVE_FLOOR = 0.5
"""A passage is quoted only if its coverage is at least this share of the best passage's."""
MAX_QUOTE_CHARS = 400
MAX_CODE_LINES = 12


@dataclass
class Passage:
    """A turn, a paragraph or a code chunk: where one answer can be read."""

    chunk: int
    units: list[Unit]
    stems: frozenset[str]
    coverage: float = 0.0


@dataclass
class Analysis:
    terms: frozenset[str]
    participants: frozenset[str]
    passages: list[Passage]
    best: Passage | None
    support: float
    threshold: float
    other_coverage: float
    reason: str | None = None
    notes: dict[str, object] = field(default_factory=dict)


class ExtractiveGenerator:
    name = "extractive"

    def generate(self, request: GenerationRequest) -> Generated:
        stemmer = Stemmer()
        try:
            analysis = analyse(request, stemmer)
            if analysis.reason is not None:
                return Generated(text=REFUSAL, reason=analysis.reason, notes=analysis.notes)
            return Generated(text=compose(request.evidence, analysis, stemmer), notes=analysis.notes)
        finally:
            stemmer.close()


# -- step 1: is there support? ----------------------------------------------------------------


def analyse(request: GenerationRequest, stemmer: Stemmer) -> Analysis:
    evidence = request.evidence
    kinds, units = split_evidence([(item.text, item.source_type, item.metadata) for item in evidence])

    # voices with names; role labels ("user", "assistant") are not people a question names
    speakers = {u.speaker.lower() for u in units if u.speaker} - USER_ROLES - REPLY_ROLES - {"system"}
    speakers = {s for s in speakers if s.split(" ")[0] not in REPLY_ROLES}
    words = content_words(request.query)
    named = [w for w in words if (w[:1].isupper() or w.lower() in speakers)
             and any(_same_person(w, s) for s in speakers)]
    participants = frozenset(s for s in speakers if any(_same_person(w, s) for w in named))
    topic = [w for w in words if w not in named]
    terms = stemmer.stems(index_text(" ".join(topic))) if topic else frozenset()

    def refuse(reason: str, **notes: object) -> Analysis:
        return Analysis(terms, participants, [], None, 0.0, 0.0, 0.0, reason, dict(notes))

    if not evidence:
        return refuse("Nothing was retrieved for this query.")
    if not terms:
        return refuse("The question has no content words to look for.")

    weights = _weights(request, terms)
    total = weights.weight(terms) or 1.0
    stem_sets = stemmer.stem_sets([u.analysed for u in units])
    headers = stemmer.stem_sets([index_text(_header(item)) for item in evidence])
    unit_stems = {id(u): s for u, s in zip(units, stem_sets)}

    echo = _normalised(request.query)
    requests: dict[tuple[int, int], frozenset[str]] = {}
    for u in units:
        if u.kind == "dialogue" and (u.speaker or "").lower() in USER_ROLES:
            key = (u.chunk, u.block)
            requests[key] = requests.get(key, frozenset()) | unit_stems[id(u)]

    def passages(about: frozenset[str] | None) -> list[Passage]:
        grouped: dict[tuple[int, int], list[Unit]] = defaultdict(list)
        for u in units:
            if u.question or (echo and echo in _normalised(u.text)):
                continue  # a question asks, and a passage repeating this one does not answer it
            if about is not None and u.kind == "dialogue" and not (u.about & about):
                continue
            grouped[(u.chunk, u.block)].append(u)
        out = []
        for (chunk, block), members in grouped.items():
            stems = frozenset().union(*(unit_stems[id(u)] for u in members))
            if kinds[chunk] != "dialogue":
                stems |= headers[chunk]
            elif _is_reply(members[0].speaker) and (chunk, block - 1) in requests:
                stems |= requests[(chunk, block - 1)]  # an assistant's turn answers the request before it
            p = Passage(chunk, members, stems)
            p.coverage = weights.weight(terms & stems) / total
            out.append(p)
        out.sort(key=lambda p: (-p.coverage, p.chunk, p.units[0].order))
        return out

    found = passages(participants or None)
    others = frozenset(speakers - participants)
    other_best = 0.0
    if participants and others:
        alternative = passages(others)
        other_best = alternative[0].coverage if alternative else 0.0
    best = found[0] if found else None
    coverage = best.coverage if best else 0.0
    support = coverage - CONTRAST * max(0.0, other_best - coverage)

    kind = kinds[best.chunk] if best else "prose"
    threshold = MIN_SUPPORT[kind]
    agree = best is not None and _legs_agree(evidence, best.chunk)
    if agree:
        threshold -= AGREEMENT_RELIEF
    cosines = [e.result.scores.vector for e in evidence if e.result.scores.vector is not None]
    cosine = max(cosines) if cosines else None
    notes = {
        "coverage": round(coverage, 3), "support": round(support, 3), "threshold": round(threshold, 3),
        "other_coverage": round(other_best, 3), "legs_agree": agree, "cosine": cosine,
        "participants": sorted(participants), "terms": sorted(terms),
    }
    analysis = Analysis(terms, participants, found, best, support, threshold, other_best, None, notes)
    if cosine is not None and cosine < MIN_COSINE:
        analysis.reason = (f"The retrieved chunks are unrelated to the question (best cosine "
                           f"{cosine:.2f} < {MIN_COSINE}).")
    elif support < threshold or best is None or coverage == 0.0:
        if participants and other_best > coverage:
            who = ", ".join(sorted(participants))
            analysis.reason = (f"No retrieved chunk supports a direct answer: what the evidence says on "
                               f"this is about someone other than {who} (coverage {coverage:.0%} vs "
                               f"{other_best:.0%}).")
        elif coverage == 0.0:
            analysis.reason = "No retrieved chunk contains the terms of the question."
        else:
            analysis.reason = (f"No retrieved chunk supports a direct answer: the best passage covers "
                               f"{coverage:.0%} of the question's terms (needs {threshold:.0%}).")
    return analysis


def _is_reply(speaker: str | None) -> bool:
    return (speaker or "").lower().split(" ")[0] in REPLY_ROLES


def _weights(request: GenerationRequest, terms: frozenset[str]) -> TermWeights:
    if request.term_weights is None:
        return TermWeights.uniform()
    try:
        return request.term_weights(terms)
    except Exception:  # the index's vocabulary is a refinement; never fail an answer over it
        return TermWeights.uniform()


def _header(item: Evidence) -> str:
    meta = item.metadata
    parts = [str(meta.get("header") or ""), str(item.result.title or "")]
    if meta.get("path"):
        parts.append(str(meta["path"]))
    return " ".join(p for p in parts if p)


BM25_NEAR_TOP = 0.9
"""Raw BM25 within this share of the pack's best counts as top: BM25 scores of chunks that share
the question's terms often differ by a few percent, which says nothing about which is better."""


def _legs_agree(evidence: list[Evidence], chunk: int, top: int = 3) -> bool:
    """Is the chunk among the `top` best of the evidence (or near-tied with the best) by raw BM25
    *and* among the `top` best by raw cosine?"""
    target = evidence[chunk].result.scores
    if target.fts is None or target.vector is None:
        return False
    by_fts = sorted((e.result.scores.fts or 0.0 for e in evidence), reverse=True)
    by_vec = sorted((e.result.scores.vector or -1.0 for e in evidence), reverse=True)
    fts_top = target.fts >= by_fts[min(top, len(by_fts)) - 1] or target.fts >= BM25_NEAR_TOP * by_fts[0]
    return fts_top and target.vector >= by_vec[min(top, len(by_vec)) - 1]


# -- step 2: compose --------------------------------------------------------------------------


def compose(evidence: list[Evidence], analysis: Analysis, stemmer: Stemmer) -> str:
    best = analysis.best
    assert best is not None
    floor = max(1e-9, RELATIVE_FLOOR * best.coverage)
    chosen: list[Passage] = []
    for p in analysis.passages:
        if p.coverage < floor:
            break
        if any(c.chunk == p.chunk for c in chosen):
            continue
        chosen.append(p)
        if len(chosen) == MAX_CHUNKS:
            break
    quotes: dict[int, list[Unit]] = defaultdict(list)
    budget = MAX_QUOTES
    for p in chosen:
        if budget <= 0:
            break
        picked = _best_units(p, analysis.terms, stemmer, limit=1 if len(chosen) > 2 else 2)
        quotes[p.chunk].extend(picked[:budget])
        budget -= len(picked[:budget])
    paragraphs = []
    for p in chosen:
        units = sorted(quotes.get(p.chunk, []), key=lambda u: u.order)
        if units:
            paragraphs.append(_paragraph(evidence[p.chunk], units))
    return "\n\n".join(paragraphs)


def _best_units(passage: Passage, terms: frozenset[str], stemmer: Stemmer, limit: int) -> list[Unit]:
    """The passage's units that carry most of the question's terms (not headings, not empty)."""
    candidates = [u for u in passage.units if not u.heading and u.text.strip()]
    if not candidates:
        return []
    stems = stemmer.stem_sets([u.analysed for u in candidates])
    scored = sorted(
        ((len(terms & s), -i, u) for i, (u, s) in enumerate(zip(candidates, stems))),
        key=lambda x: (x[0], x[1]), reverse=True,
    )
    picked = [u for n, _, u in scored if n > 0][:limit]
    return picked or [candidates[0]]


def _normalised(text: str) -> str:
    return " ".join("".join(ch if ch.isalnum() else " " for ch in text.lower()).split())


def _paragraph(item: Evidence, units: list[Unit]) -> str:
    source = item.display_path()
    if units[0].kind == "code":
        symbol = _symbol(item)
        lines: list[str] = []
        for u in units:
            body = u.text.splitlines()
            if len(body) > MAX_CODE_LINES:
                body = body[:MAX_CODE_LINES] + ["..."]
            if lines:
                lines.append("...")
            lines.extend(body)
        language = str(item.metadata.get("language") or "")
        where = f"`{source}`" + (f" ({symbol})" if symbol else "")
        return f"In {where} {cite(item.chunk_id)}:\n```{language}\n" + "\n".join(lines) + "\n```"
    quoted = []
    last_label = None
    for u in units:
        text = _clip(u.text)
        if u.kind == "dialogue" and u.label and u.label != last_label:
            quoted.append(f"{u.label}: “{text}”")
            last_label = u.label
        else:
            quoted.append(f"“{text}”")
    return f"{' '.join(quoted)} ({source}) {cite(item.chunk_id)}"


def _symbol(item: Evidence) -> str:
    """"def fuse" from a code chunk's header "chinvex/retrieval/fusion.py · def fuse"."""
    header = str(item.metadata.get("header") or "")
    return header.split(" · ", 1)[1].strip() if " · " in header else ""


def _clip(text: str) -> str:
    one = " ".join(text.split())
    return one if len(one) <= MAX_QUOTE_CHARS else one[: MAX_QUOTE_CHARS - 1].rstrip() + "…"
