"""`max_tokens` of the MCP search and answer tools: a result an agent pastes into its context
must not blow it up. Texts are kept in rank order until the budget is spent; the first text that
does not fit is cut to a token prefix, the rest are dropped, and the result says so."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

DEFAULT_MAX_TOKENS = 2000
MAX_TOKENS_LIMIT = 100_000
MIN_KEPT_TOKENS = 16
"""A cut text keeps at least this much, or it is dropped with the rest."""


def fit(items: list[dict[str, Any]], key: str, max_tokens: int, *,
        count: Callable[[str], int] | None = None,
        prefix_of: Callable[[str, int], str] | None = None) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """(the items that fit, with the overflowing one cut; a note {max_tokens, used_tokens,
    truncated, dropped}). Pure apart from the tokenizer, which tests may pass in."""
    texts = [str(item.get(key) or "") for item in items]
    if count is None or prefix_of is None:
        from chinvex.embedding.tokenizer import count_tokens, count_tokens_batch
        from chinvex.pack.service import prefix_of as cut

        counts = count_tokens_batch(texts, parallel=True) if texts else []  # one call into the tokenizer
        count, prefix_of = count or count_tokens, prefix_of or cut
    else:
        counts = [count(text) for text in texts]
    kept: list[dict[str, Any]] = []
    used = 0
    truncated = False
    for item, text, tokens in zip(items, texts, counts):
        if used + tokens <= max_tokens:
            kept.append(item)
            used += tokens
            continue
        room = max_tokens - used
        if room >= MIN_KEPT_TOKENS:
            piece = prefix_of(text, room)
            kept.append({**item, key: piece, "truncated": True})
            used += count(piece)
        truncated = True
        break
    note = {"max_tokens": max_tokens, "used_tokens": used, "truncated": truncated,
            "dropped": len(items) - len(kept)}
    return kept, note
