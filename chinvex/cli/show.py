"""How search hits and conversations read in a terminal (rich markup; `--json` is untouched).

A hit shows why it matched: the lines of its chunk that hold a query word (the same stems the
full-text index matched), numbered by file line or labelled with their turn and role, instead of
the chunk's first lines, which often say nothing about the query. A conversation hit is
labelled by agent, title and date rather than by its export file. Turns are numbered from 1 and
times read `2026-11-24 14:03 UTC` everywhere, as in the web UI.
"""

from __future__ import annotations

from typing import Any

from rich.markup import escape

from chinvex import fmt
from chinvex.models.turn_markers import MARKER

MATCHED_LINES = 3
LINE_CHARS = 160
# chinvex's conversation chunks mark each turn `[Turn 3 of 12] assistant:` on a line of its own
_TURN_HEADER = MARKER


def matched_lines(text: str, matches: Any, *, first_line: int | None, limit: int = MATCHED_LINES) -> list[str]:
    """Up to `limit` lines of a chunk that hold a query word, each prefixed by where it is: its
    file line number (`first_line` is the chunk's first line), or `turn N · role` inside a
    conversation chunk. `matches(line)` says how much a line holds of the query (a count of its
    words, or True/False): the lines holding the most are shown, in the chunk's order, so the
    line naming the thing asked about is not crowded out by earlier lines with one common word.
    With no matching line (a vector-only hit), the chunk's first lines, placed the same way. A
    line cut at LINE_CHARS ends with an ellipsis."""
    numbered = first_line is not None
    turn = ""
    shown: list[str] = []
    found: list[tuple[int, int, str]] = []
    for index, line in enumerate(_lines(text)):
        header = _TURN_HEADER.match(line)
        if header:
            turn = f"turn {header.group(1)} · {header.group(2)}"
            continue
        if not line.strip():
            continue
        where = f"{first_line + index}" if numbered else turn
        placed = f"{where} │ {_cut(line.strip())}" if where else _cut(line.strip())
        if len(shown) < limit:
            shown.append(placed)
        held = int(matches(line))
        if held:
            found.append((held, index, placed))
    best = sorted(found, key=lambda f: (-f[0], f[1]))[:limit]
    return [placed for _, _, placed in sorted(best, key=lambda f: f[1])] or shown


def _cut(line: str) -> str:
    return line if len(line) <= LINE_CHARS else line[:LINE_CHARS - 1] + "…"


def hit_label(result: Any, *, with_context: bool) -> str:
    """`[repo] path:12-40` for a file; `[agent_session] claude_code · "title" · 2025-12-10 19:38
    UTC · turns 8-9` for a conversation (its agent, title and date say more than its file). The
    agent is named as `stats`, `timeline` and `--filter "agent = …"` name it (`codex`, not the
    reader `cx_sessions_jsonl`)."""
    from chinvex.models.documents import agent_of
    from chinvex.models.turn_markers import turns_label

    meta = result.metadata
    ctx = f"{result.context}/" if with_context else ""
    if meta.get("turn_start") is not None:
        parts = [agent_of(meta["source"]) if meta.get("source") else result.source_type]
        if result.title:
            parts.append(f'"{result.title}"')
        when = meta.get("ts_start") or result.updated_at
        if when:
            parts.append(fmt.when(when))
        parts.append(turns_label(meta, result.text))
        return f"[{ctx}{result.source_type}] " + " · ".join(parts)
    where = meta.get("path") or result.source_uri
    if result.range.line_start is not None:
        where += f":{result.range.line_start}-{result.range.line_end}"
    return f"[{ctx}{result.source_type}] {where}"


def _explain_line(e: dict[str, Any]) -> str:
    return (f"    fts {fmt.raw(e['fts']['raw_bm25'])} -> {fmt.score(e['fts']['normalized'])} · vector "
            f"{fmt.raw(e['vector']['raw_cosine'])} -> {fmt.score(e['vector']['normalized'])} · blended "
            f"{fmt.score(e['blended'])} × weight {fmt.number(e['source_weight'])}"
            + (f" × {e['role']} {fmt.number(e['role_weight'])}" if e.get("role") and e["role_weight"] != 1 else "")
            + f" = {fmt.score(e['rank'])} · {e['why']}")


def search_text(response: Any, query: str, mode_label: str) -> str:
    """Every hit with its label, score and matched lines, then one line of search figures."""
    from chinvex.retrieval.lexical import query_terms
    from chinvex.retrieval.matching import QueryMatcher

    lines: list[str] = []
    multi = len(response.contexts) > 1
    with QueryMatcher(query_terms(query)) as matcher:
        for r in response.results:
            label = hit_label(r, with_context=multi or r.scope == "global")
            stale = f" [STALE: {r.freshness.reason}]" if r.freshness.stale else ""
            reranked = f"  reranked {fmt.raw(r.scores.rerank)}" if r.scores.rerank is not None else ""
            lines.append(f"[bold]{r.rank}.[/bold] {escape(label)}  score {fmt.score(r.scores.rank)}{reranked}  "
                         f"chunk {r.chunk_id}{escape(stale)}")
            first = r.range.line_start if _numbered(r) else None
            lines.extend("    " + escape(line) for line in matched_lines(r.text, matcher.held, first_line=first))
            if r.explain:
                lines.append(escape(_explain_line(r.explain)))
    if not response.results:
        lines.append("No results.")
    reranker = f", reranked by {response.stats.reranker}" if response.stats.reranker else ""
    lines.append(f"[dim]{escape(mode_label)}, {fmt.counted(response.stats.candidates, 'candidate')}"
                 f"{escape(reranker)}, {fmt.duration_ms(response.stats.took_ms)}[/dim]")
    return "\n".join(lines)


def _numbered(result: Any) -> bool:
    """Whether the chunk's text is exactly its file's lines line_start..line_end (so line numbers
    can be given); a chunk whose text was cut or joined differently gets none rather than wrong
    ones."""
    rng = result.range
    if rng.line_start is None or rng.line_end is None:
        return False
    return len(_lines(result.text)) == rng.line_end - rng.line_start + 1


def _lines(text: str) -> list[str]:
    """Lines as files count them: split at newlines only (a stray carriage return or form feed
    inside a line does not start a new one, as `str.splitlines` would have it)."""
    lines = text.split("\n")
    return lines[:-1] if lines and lines[-1] == "" else lines


def conversation_text(found: dict[str, Any]) -> str:
    """`chinvex get` for a conversation: a header, then each turn (numbered from 1) under its role
    and time. Plain text: the caller escapes it."""
    agent = (found.get("metadata") or {}).get("source") if isinstance(found.get("metadata"), dict) else None
    kind = ", ".join(p for p in (agent, found["source_type"], found["context"]) if p)
    lines = [f"{found['title'] or found['thread_id']}  ({kind})",
             f"thread {found['thread_id']} · {found['source_uri']} · {fmt.counted(found['turn_count'], 'turn')}", ""]
    for turn in found["turns"]:
        when = f" · {fmt.when(turn['ts'])}" if turn.get("ts") else ""
        lines.append(f"[Turn {int(turn['index']) + 1}] {turn['role']}{when}")
        lines.extend("    " + line for line in turn["text"].splitlines() or [""])
    return "\n".join(lines)
