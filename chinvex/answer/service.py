"""`answer()`: retrieve an evidence pack, let a generator write, put the result through the
grounding gate, and return the seed spec's response schema v1 (§6).

It never raises for the failures the schema has codes for: an empty query (EMPTY_QUERY), an
unreadable index (RETRIEVAL_ERROR), a generator that cannot run (GENERATOR_ERROR) and an
answer that fails the gate (GROUNDING_FAILED) all come back in `errors`, with the evidence
that was retrieved. CONTEXT_NOT_FOUND is the registry's (raised before this is called); a bad
`k` or generator name is a usage error and is raised.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterable
from datetime import date

from chinvex.answer.base import Generated, GenerationRequest, GeneratorError
from chinvex.answer.generators import generator_name, generator_warnings, make_generator
from chinvex.answer.evidence import Evidence, build_evidence, citation_for, evidence_pack, path_in_repository
from chinvex.answer.roles import role_weight
from chinvex.answer.grounding import REFUSAL, validate
from chinvex.answer.question import analyse_question
from chinvex.answer.confidence import default_min_confidence
from chinvex.answer.judgement import Verdict
from chinvex.answer.support import RELATED_COSINE, analyse, far_chunks, judge, sentences_to_embed
from chinvex.embedding.factory import provider_of
from chinvex.answer.dates import header_date, parse_date
from chinvex.answer.text import DocumentFrequencies, Stemmer, TermWeights
from chinvex.answer.units import Unit
from chinvex.errors import ChinvexError, UsageError
from chinvex.models import AnswerError, AnswerResponse, ContextConfig, Retrieval, SearchResult
from chinvex.retrieval.search import RetrievalError, Searcher, SearchRequest
from chinvex.storage.search_reads import created_at_of, first_chunk_text


def answer(config: ContextConfig, query: str, *, k: int = 8, grounded: bool = True,
           source_types: list[str] | None = None, generator: str | None = None,
           searcher: Searcher | None = None, model: str | None = None,
           filter_expression: str | None = None, min_confidence: float | None = None) -> AnswerResponse:
    """The answer to `query` from `config`'s index, gated: refused (GROUNDING_FAILED) when its
    confidence is below `min_confidence`, else context.json `answer.min_confidence`, else the
    calibrated default (confidence.py)."""
    return answer_and_verdict(config, query, k=k, grounded=grounded, source_types=source_types,
                              generator=generator, searcher=searcher, model=model,
                              filter_expression=filter_expression, min_confidence=min_confidence)[0]


def refusal_point(config: ContextConfig, min_confidence: float | None = None) -> float:
    """The confidence below which an answer is refused: the caller's, else the context's, else
    the default chosen on held-out conversations."""
    if min_confidence is not None:
        if not 0.0 <= min_confidence <= 1.0:
            raise UsageError(f"min_confidence must be between 0 and 1 (got {min_confidence})")
        return min_confidence
    configured = config.answer.min_confidence if config.answer is not None else None
    return configured if configured is not None else default_min_confidence()


def answer_and_verdict(config: ContextConfig, query: str, *, k: int = 8, grounded: bool = True,
                       source_types: list[str] | None = None, generator: str | None = None,
                       searcher: Searcher | None = None, model: str | None = None,
                       filter_expression: str | None = None, min_confidence: float | None = None,
                       ) -> tuple[AnswerResponse, Verdict | None]:
    """`answer`, with the gate's verdict (its features and confidence; None when no answer was
    attempted), for bench/fit_gate.py."""
    started = time.perf_counter()
    name = generator_name(generator, config, model)
    threshold = refusal_point(config, min_confidence)
    types = [t for t in dict.fromkeys(source_types or []) if t] or None
    retrieval = Retrieval(k=k, filters={"source_types": types} if types else {},
                          weights_used=_weights_used(config, types), generator=name)

    def response(**fields) -> AnswerResponse:
        retrieval.took_ms = round((time.perf_counter() - started) * 1000, 2)
        base = {"context": config.name, "query": query, "grounded": False, "answer": "", "retrieval": retrieval}
        return AnswerResponse(**{**base, **fields})

    if not query or not query.strip():
        return response(errors=[AnswerError(code="EMPTY_QUERY", detail="The query is empty or whitespace only.")]), None

    own_searcher = searcher is None
    searcher = searcher or Searcher()
    try:
        try:
            found = searcher.search([config], SearchRequest(query=query, k=max(k, ANSWER_POOL), source_types=types,
                                                             filter_expression=filter_expression))
        except UsageError:
            raise
        except (RetrievalError, ChinvexError) as exc:
            return response(errors=[AnswerError(code="RETRIEVAL_ERROR", detail=exc.message)]), None
        except (sqlite3.Error, OSError) as exc:
            return response(errors=[AnswerError(code="RETRIEVAL_ERROR",
                                                detail=f"the index of context {config.name} cannot be read ({exc})")]), None
        retrieval.mode = found.stats.mode
        retrieval.warnings = list(found.stats.warnings) + generator_warnings(generator, config, model)
        asked = analyse_question(query)
        results = with_best_lexical(prefer_the_thing(found.results, asked.about_tests, asked.how_to), k,
                                    asked.about_tests, asked.how_to)
        evidence = build_evidence(results, _created_at(searcher, config, results))
        pack = evidence_pack(evidence)

        generator_impl = make_generator(name, config, model=model)
        model = getattr(generator_impl, "model", None)
        retrieval.model = model if name != "extractive" else None
        request = GenerationRequest(
            query=query, evidence=evidence, config=config,
            term_weights=lambda stems: _term_weights(searcher, config, stems),
            said_on=_said_on_lookup(searcher, config),
            min_cosine=RELATED_COSINE.get(provider_of(config.embedding)),
        )
        stemmer = Stemmer()
        try:
            request.analysis, request.weights_used = analyse(
                asked, evidence, stemmer, request.weights, request.said_on)
            request.analysis.min_confidence = threshold  # a generator judging on its own uses it too
            if far_chunks(evidence, request.min_cosine):
                request.analysis.sentence_cosine = _sentence_cosine(searcher, config, query, request.analysis)
            try:
                generated = generator_impl.generate(request)
            except GeneratorError as exc:
                return response(evidence_pack=pack, errors=[AnswerError(code="GENERATOR_ERROR", detail=exc.message)]), None
        finally:
            stemmer.close()
        if generated.model:
            retrieval.model = generated.model
        return _gate(response, generated, request, pack, grounded, threshold)
    finally:
        if own_searcher:
            searcher.close()


def _gate(response, generated: Generated, request: GenerationRequest, pack, grounded: bool,
          threshold: float) -> tuple[AnswerResponse, Verdict | None]:
    """The same checks for every generator: the answer's form (every paragraph cites chunks of
    the evidence pack), what the cited chunks say (some sentence of them, about the right
    subject, says what the question asks; support.judge) and how likely an answer resting on
    that sentence is to be right (its confidence, at least `threshold`). For an LLM's answer the
    confidence is that of the best sentence of the chunks it cites, not of its own wording:
    the model was fitted on answers quoting a sentence, and an LLM's paraphrase carries no
    features of its own."""
    evidence = request.evidence
    by_id = {item.chunk_id: item for item in evidence}
    text = generated.text
    check = validate(text, by_id)
    citations = [citation_for(by_id[cid], quote=generated.quotes.get(cid)) for cid in check.cited]
    detail = generated.reason or check.detail
    verdict = None
    if check.ok and request.analysis is not None:
        cited = set(check.cited)
        verdict = judge(request.analysis, evidence, restrict=lambda c: c.item.chunk_id in cited,
                        min_cosine=request.min_cosine, min_confidence=threshold)
        if not verdict.ok:
            detail = f"The cited sources do not say it: {verdict.reason}"
            check.ok = False
    elif request.analysis is not None:  # refused by the generator: the confidence it had to go on
        verdict = judge(request.analysis, evidence, min_cosine=request.min_cosine, min_confidence=threshold)
    sure = round(verdict.confidence, 2) if verdict is not None and verdict.confidence is not None else 0.0
    if check.ok:
        return response(grounded=True, answer=text.strip(), confidence=sure, citations=citations,
                        evidence_pack=pack), verdict
    error = AnswerError(code="GROUNDING_FAILED", detail=detail)
    if grounded:
        return response(grounded=False, answer=REFUSAL, confidence=sure, citations=[], evidence_pack=pack,
                        errors=[error]), verdict
    return response(grounded=False, answer=text.strip(), confidence=sure, citations=citations,
                    evidence_pack=pack, errors=[error]), verdict


def _sentence_cosine(searcher: Searcher, config: ContextConfig, query: str, analysis) -> float | None:
    """The best cosine between the question and the sentences that may answer it (support.
    sentences_to_embed), by the context's embedder; None when there are none or it fails (the
    chunks' closeness then decides alone)."""
    texts = sentences_to_embed(analysis)
    if not texts:
        return None
    try:
        vectors = searcher.embedder(config).embed_documents([query, *texts])
    except (ChinvexError, OSError, RuntimeError, ValueError):
        return None
    import numpy as np

    norms = np.linalg.norm(vectors, axis=1)
    if not norms[0] or not norms[1:].all():
        return None
    return float(max((vectors[1:] @ vectors[0]) / (norms[1:] * norms[0])))


ANSWER_POOL = 24
"""Results an answer's evidence is chosen from: the best k after the role weights (roles.py)."""


def prefer_the_thing(results: list[SearchResult], about_tests: bool, how_to: bool = False) -> list[SearchResult]:
    """Search results reordered for answering: a repository file's rank score times its role
    weight, so the implementation and its docs come before tests, fixtures and benchmark tables
    that talk about it (unless the question is about tests). Stable: equal products keep the
    search's order."""
    def key(item: tuple[int, SearchResult]) -> float:
        # The search's rank before its own role prior: the answer weighs roles its own way.
        return -item[1].scores.blended * _prior(item[1], about_tests, how_to)

    return [r for _, r in sorted(enumerate(results), key=lambda item: (key(item), item[0]))]


def _prior(result: SearchResult, about_tests: bool, how_to: bool) -> float:
    """A result's source weight times the answer's weight of its file's role."""
    path = path_in_repository(result) or result.source_uri
    return result.scores.weight * role_weight(path, result.source_type, about_tests, how_to)


def with_best_lexical(ordered: list[SearchResult], k: int, about_tests: bool, how_to: bool = False,
                      ) -> list[SearchResult]:
    """The first `k` of `ordered`, with the pool's best lexical match among them (in place of the
    k-th when it is not). The blend leans on the embedder, which ranks passages that merely
    mention a project's name above the one saying the question's rarer words ("How do I install
    chinvex?": README's Install section is the best BM25 match and 19th by the blend); the gate
    asks for those words said, so the passage saying them best must be read. Its BM25 is weighed
    by its source and role as the blend is."""
    chosen = ordered[:k]
    if k < 2 or len(ordered) <= k:
        return chosen

    def lexical(result: SearchResult) -> float:
        return (result.scores.fts or 0.0) * _prior(result, about_tests, how_to)

    best = max(ordered, key=lexical)
    if lexical(best) <= 0 or best in chosen:
        return chosen
    return [*chosen[:k - 1], best]


def _weights_used(config: ContextConfig, types: list[str] | None) -> dict[str, float]:
    weights = config.effective_weights()
    if types:
        return {t: config.weight_for(t) for t in types}
    return weights


def _term_weights(searcher: Searcher, config: ContextConfig, stems: Iterable[str]) -> TermWeights:
    handle = searcher.handle(config)
    with handle.lock:
        if handle.vocabulary is None:
            handle.vocabulary = DocumentFrequencies()
        return TermWeights.from_index(handle.conn, stems, cache=handle.vocabulary)


def _said_on_lookup(searcher: Searcher, config: ContextConfig) -> Callable[[Evidence, Unit], date | None]:
    """When a passage was said: its conversation turns' timestamp, else a `Date:` line at the top
    of its document (a transcript exported as markdown), else unknown. Read lazily, once per
    document, only for answers that need a date."""
    by_doc: dict[str, date | None] = {}

    def said_on(item: Evidence, unit: Unit) -> date | None:
        stamp = item.metadata.get("ts_start") or item.metadata.get("ts_end")
        if stamp:
            return parse_date(str(stamp))
        doc_id = item.result.doc_id
        if doc_id not in by_doc:
            by_doc[doc_id] = header_date(item.text) or _first_chunk_date(searcher, config, doc_id)
        return by_doc[doc_id]

    return said_on


def _first_chunk_date(searcher: Searcher, config: ContextConfig, doc_id: str) -> date | None:
    try:
        handle = searcher.handle(config)
        with handle.lock:
            text = first_chunk_text(handle.conn, doc_id)
    except (ChinvexError, sqlite3.Error):
        return None
    return header_date(text) if text is not None else None


def _created_at(searcher: Searcher, config: ContextConfig, results) -> dict[str, str | None]:
    """Documents' created_at (search results carry only updated_at); best effort."""
    doc_ids = sorted({r.doc_id for r in results})
    if not doc_ids:
        return {}
    try:
        handle = searcher.handle(config)
        with handle.lock:
            return created_at_of(handle.conn, doc_ids)
    except (ChinvexError, sqlite3.Error):
        return {}
