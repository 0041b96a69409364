"""Top-level commands other than `context` (ingest, stats, search, answer, ...)."""

from __future__ import annotations

from typing import Optional

import typer

from chinvex.cli.app import app
from chinvex.cli.options import CONTEXT_HELP, FILTER_HELP, JSON_OPTION, checked_filter
from chinvex.cli.output import emit


def _resolve(name: str | None, *, json_out: bool):
    """`--context NAME`, else the default context (see `context_choice`)."""
    from chinvex.cli.context_choice import context_config

    return context_config(name, json_mode=json_out)


@app.command("ingest")
def ingest(
    context: Optional[str] = typer.Option(None, "--context", help=CONTEXT_HELP),
    full: bool = typer.Option(False, "--full", help="Re-ingest every source (unchanged chunk texts are not embedded again)."),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Print each source's decision."),
    wait: bool = typer.Option(False, "--wait", help="Wait for another ingest of this context instead of failing."),
    strict: bool = typer.Option(False, "--strict", help="Exit 1 when any source failed (by default a failed source is reported and the run exits 0)."),
    show_progress: Optional[bool] = typer.Option(
        None, "--progress/--no-progress", help="Show progress on stderr: a bar on a terminal, else a line every "
        "10 s (CHINVEX_PROGRESS_EVERY); with --json, one JSON object per line. Default: on, except with "
        "--json or --quiet."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Print nothing but warnings and errors."),
    yes: bool = typer.Option(False, "--yes", "-y", help="Remove vanished sources even when they hold more than "
                             "5 % of the context's documents (otherwise asked on a terminal, held back elsewhere)."),
    json_out: bool = JSON_OPTION,
) -> None:
    """Index new and changed sources of a context; remove vanished ones.

    A source that cannot be read is reported, recorded for `doctor` and `stats`, and retried
    next time; the others are indexed and the run exits 0 (1 with --strict)."""
    from chinvex.cli.progress import IngestProgress, choose_mode
    from chinvex.ingest.pipeline import IngestOptions, run_ingest

    config = _resolve(context, json_out=json_out)
    mode = choose_mode(show_progress, json_out=json_out, quiet=quiet)
    from chinvex.cli.ingest_report import confirm_on_terminal, named_sources

    progress = IngestProgress(config.name, mode=mode, verbose=verbose and not json_out and not quiet,
                              named=named_sources(config))

    summary = run_ingest(config, IngestOptions(full=full, verbose=verbose, wait=wait, progress=progress, yes=yes,
                                               confirm_removal=confirm_on_terminal(progress, json_out=json_out)))
    if json_out:
        emit({"ok": summary.ok, **summary.model_dump(mode="json")}, json_mode=True)
    else:
        from chinvex.cli.ingest_report import summary_lines

        lines = summary_lines(summary, verbose=verbose, strict=strict, named_skips=progress.named_skips)
        if quiet:
            lines = [line for line in lines if line.startswith(("warning:", "[red]error:"))]
        if lines:
            emit({}, json_mode=False, human="\n".join(lines))
    if strict and not summary.ok:
        raise typer.Exit(1)


@app.command("stats")
def stats(
    context: Optional[str] = typer.Option(None, "--context", help=CONTEXT_HELP),
    json_out: bool = JSON_OPTION,
) -> None:
    """Documents and chunks by source type, last ingest run, embedder, sizes on disk."""
    from chinvex.ingest.stats import collect_stats, format_stats

    config = _resolve(context, json_out=json_out)
    data = collect_stats(config)
    emit(data, json_mode=json_out, human=format_stats(data))


def _resolve_many(names: list[str] | None, *, json_out: bool) -> list:
    """`--context` given any number of times (else the default context), each context once: an
    alias and its name are one context."""
    configs = ([_resolve(name, json_out=json_out) for name in dict.fromkeys(names)] if names
               else [_resolve(None, json_out=json_out)])
    return list({c.name: c for c in configs}.values())


def _split_types(value: str | None) -> list[str] | None:
    if not value:
        return None
    types = [t.strip() for t in value.split(",") if t.strip()]
    return types or None


def _date_bound(value: str | None, flag: str) -> str | None:
    """A date flag as the UTC bound filters compare with; a bare date covers its whole day, so
    `--until 2026-01-05` keeps that day's afternoon (see `filters.date_bound`)."""
    if value is None:
        return None
    from chinvex.errors import UsageError
    from chinvex.retrieval.filters import DATE_FORMS, date_bound

    try:
        return date_bound(value, end_of_day=flag == "--until")
    except ValueError:
        raise UsageError(f"{flag} {value!r}: not a date; use {DATE_FORMS}") from None


def _date_range(since: str | None, until: str | None) -> tuple[str | None, str | None]:
    """`--since` and `--until` as UTC bounds; a range that ends before it starts is a usage error
    (it could only ever match nothing)."""
    low, high = _date_bound(since, "--since"), _date_bound(until, "--until")
    if low is not None and high is not None and low > high:
        from chinvex.errors import UsageError

        raise UsageError(f"--since {since} is after --until {until}: no date is in that range")
    return low, high


@app.command("search")
def search(
    query: str = typer.Argument(..., help="What to look for (any text; no query syntax to learn)."),
    context: Optional[list[str]] = typer.Option(None, "--context", help="Context name or alias (repeat to search several); "
                                      "default: CHINVEX_CONTEXT, else the context whose source folders contain the current directory."),
    k: int = typer.Option(8, "--k", help="Number of results."),
    per_doc: Optional[int] = typer.Option(None, "--per-doc", help="At most this many chunks of one file or conversation "
                                          "(1: a list of distinct files); default: no limit."),
    source_types: str = typer.Option(None, "--source-types", help="Comma-separated: repo,codex_session,chat,note,agent_session,memory."),
    path: str = typer.Option(None, "--path", help="Only sources whose path matches this glob."),
    since: str = typer.Option(None, "--since", help="Only sources updated at or after this date."),
    until: str = typer.Option(None, "--until", help="Only sources updated at or before this date (a bare date includes the whole day, UTC)."),
    explain: bool = typer.Option(False, "--explain", help="Show each signal's raw and normalised score and why it matched."),
    mode: str = typer.Option("hybrid", "--mode", help="hybrid (default), fts or vector."),
    filter_expression: str = typer.Option(None, "--filter", help=FILTER_HELP),
    rerank: Optional[bool] = typer.Option(None, "--rerank/--no-rerank", help="Run or skip the reranking stage "
                                          "(context.json retrieval.rerank); default: run it when one is configured."),
    json_out: bool = JSON_OPTION,
) -> None:
    """Hybrid (full-text + vector) search, ranked with source weights."""
    from chinvex.errors import UsageError
    from chinvex.retrieval.request import InvalidFilterError, SearchRequest

    if not query.strip():
        raise UsageError("QUERY is empty.")
    if mode not in ("hybrid", "fts", "vector"):
        raise UsageError(f"--mode {mode!r}: expected hybrid, fts or vector")
    expression = checked_filter(filter_expression)
    configs = _resolve_many(context, json_out=json_out)
    low, high = _date_range(since, until)
    request = SearchRequest(query=query, k=k, source_types=_split_types(source_types), path_glob=path,
                            since=low, until=high,
                            explain=explain, mode=mode, filter_expression=expression, per_doc=per_doc,
                            rerank=rerank)  # type: ignore[arg-type]
    from chinvex.relay.client import ask
    from chinvex.relay.handlers import request_args

    relayed = ask("search", {"contexts": [c.name for c in configs], "request": request_args(request)})
    if relayed is not None:
        from chinvex.models import SearchResponse

        response = SearchResponse.model_validate(relayed)
    else:
        from chinvex.api import Engine
        from chinvex.retrieval.search import prefetch_vector_store

        if mode != "fts":
            prefetch_vector_store(configs)
        try:
            response = Engine().search(configs, request)
        except InvalidFilterError as exc:
            raise UsageError(f"--source-types: {exc.message}") from None
    if json_out:
        emit(response, json_mode=True)
        return
    from chinvex.cli.output import warn

    from chinvex.cli.show import search_text

    emit({}, json_mode=False, human=search_text(response, query, _mode_label(response.stats)))
    for warning in response.stats.warnings:  # on stderr: stdout holds the results only
        warn(warning, json_mode=False)


def _mode_label(stats) -> str:
    """"hybrid" only when every searched chunk had a vector, else e.g. "hybrid (vectors for
    23 % of chunks)" (chinvex.retrieval.coverage)."""
    from chinvex.retrieval.coverage import VectorCoverage, mode_label

    figure = stats.vector_coverage
    coverage = None if figure is None else VectorCoverage(figure.chunks, figure.with_vector)
    return mode_label(stats.mode, coverage)


chunk_app = typer.Typer(help="Inspect indexed chunks.", no_args_is_help=True, rich_markup_mode=None)
app.add_typer(chunk_app, name="chunk")


@chunk_app.command("get")
def chunk_get(
    chunk_id: str = typer.Argument(..., help="A chunk id from search results."),
    context: Optional[str] = typer.Option(None, "--context", help=CONTEXT_HELP),
    json_out: bool = JSON_OPTION,
) -> None:
    """A chunk's text, metadata, ranges and its neighbours' ids."""
    from chinvex.storage.chunk_reads import format_chunk, get_chunks

    config = _resolve(context, json_out=json_out)
    found = get_chunks(config, [chunk_id])
    if not found:
        from chinvex.errors import NotFoundError

        raise NotFoundError(f"Chunk {chunk_id} is not in context {config.name}.")
    chunk = found[0]
    emit({"chunk": chunk}, json_mode=json_out, human=format_chunk(chunk))


@app.command("get")
def get_command(
    identifier: str = typer.Argument(..., help="A conversation's id (Codex thread id, Claude Code session id, "
                                     "ChatGPT conversation id, or a unique prefix of 8+ characters), or a chunk id."),
    context: Optional[list[str]] = typer.Option(None, "--context", help="Context(s) to look in; default: every context."),
    json_out: bool = JSON_OPTION,
) -> None:
    """A whole conversation by its session or thread id (turns with roles and times), or a chunk."""
    from chinvex.api import Context, has_index
    from chinvex.context.registry import Registry
    from chinvex.errors import NotFoundError, UsageError
    from chinvex.storage.chunk_reads import format_chunk
    from chinvex.cli.show import conversation_text
    from chinvex.storage.threads import AmbiguousIdError

    wanted = identifier.strip()
    if not wanted:
        raise UsageError("ID is empty.")
    if context:
        configs = [_resolve(name, json_out=json_out) for name in dict.fromkeys(context)]
    else:
        configs = [e.config for e in Registry().entries() if e.config is not None]
    for config in configs:
        if not has_index(config):
            continue
        try:
            found = Context(config).get(wanted)
        except AmbiguousIdError as exc:
            raise UsageError(str(exc)) from None
        if found is None:
            continue
        if found.get("kind") == "chunk":
            emit(found, json_mode=json_out, human=format_chunk(found["chunk"]))
        else:
            emit(found, json_mode=json_out, human=None if json_out else _escaped(conversation_text(found)))
        return
    from chinvex.storage.threads import MIN_PREFIX

    where = ", ".join(c.name for c in configs) or "no context"
    short = (f" (an id's prefix needs at least {MIN_PREFIX} characters)"
             if len(wanted) < MIN_PREFIX else "")
    raise NotFoundError(f"no conversation or chunk with id {wanted!r} in {where}{short}")


def _escaped(text: str) -> str:
    from rich.markup import escape

    return escape(text)


@app.command("eval")
def eval_cmd(
    context: Optional[str] = typer.Option(None, "--context", help=CONTEXT_HELP),
    golden: str = typer.Option(..., "--golden", help="Golden query file (documented or legacy format)."),
    k: int = typer.Option(None, "--k", help="Results per query (default: the file's k, else 10)."),
    output: str = typer.Option(None, "--output", help="Write one JSON line per query to this file."),
    mode: str = typer.Option("hybrid", "--mode", help="hybrid (default), fts or vector."),
    filter_expression: str = typer.Option(None, "--filter", help=FILTER_HELP),
    json_out: bool = JSON_OPTION,
) -> None:
    """Measure retrieval quality (hit@k, recall@k, MRR, nDCG@k) and latency on golden queries."""
    from pathlib import Path

    from rich.markup import escape

    from chinvex import fmt
    from chinvex.errors import UsageError
    from chinvex.eval.golden import load_golden
    from chinvex.eval.runner import run_eval
    from chinvex.context.registry import Registry

    if mode not in ("hybrid", "fts", "vector"):
        raise UsageError(f"--mode {mode!r}: expected hybrid, fts or vector")
    if k is not None and not 1 <= k <= 200:
        raise UsageError(f"--k must be between 1 and 200 (got {k})")
    expression = checked_filter(filter_expression)
    config = _resolve(context, json_out=json_out)
    golden_file = load_golden(Path(golden))
    out_path = Path(output) if output else None
    if out_path is not None:
        try:
            out_path.parent.mkdir(parents=True, exist_ok=True)
            out_path.touch()
        except OSError as exc:
            raise UsageError(f"--output {output}: cannot write: {exc.strerror or exc}") from None
    report = run_eval(config, golden_file, resolve=Registry().resolve, k=k, output=out_path, mode=mode,
                      request_options={"filter_expression": expression} if expression else None)
    if json_out:
        emit(report, json_mode=True)
        return
    m = report["metrics"] or {}
    lines = [f"{report['name'] or golden}: {report['scored_queries']} scored queries, k={report['k']}"]
    if m:
        lines.append(f"hit@k {m['hit']:.3f}  recall@k {m['recall']:.3f}  MRR {m['mrr']:.3f}  nDCG@k {m['ndcg']:.3f}")
    for source_type, t in report["by_source_type"].items():
        lines.append(f"  {source_type:<14} n={t['queries']:<4} hit {t['hit']:.3f} recall {t['recall']:.3f} "
                     f"MRR {t['mrr']:.3f} nDCG {t['ndcg']:.3f}")
    if report["unanswerable"]["queries"]:
        lines.append(f"unanswerable (reported apart): {report['unanswerable']['queries']}")
    lat = report["latency_ms"]
    lines.append(f"latency p50 {fmt.duration_ms(lat['p50'])}, p95 {fmt.duration_ms(lat['p95'])}")
    if report["misses"]:
        lines.append("misses: " + ", ".join(fmt.text(x, missing="(no id)") for x in report["misses"][:30]))
    emit({}, json_mode=False, human=escape("\n".join(lines)))
