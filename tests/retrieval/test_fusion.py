"""Issue 4: score fusion exactly as the seed spec §4 (pure functions)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chinvex.models.documents import DEFAULT_WEIGHTS
from chinvex.retrieval.fusion import Candidate, blend, fuse, normalize

W = {"ctx": dict(DEFAULT_WEIGHTS)}


def cand(key, source_type="repo", fts=None, vector=None, updated_at=None, chunk_id=None):
    return Candidate(key=key, chunk_id=chunk_id or key, source_type=source_type,
                     updated_at=updated_at, fts=fts, vector=vector, weight_table="ctx")


def test_normalize_min_max_and_all_equal():
    assert normalize([]) == []
    assert normalize([3.0, 3.0]) == [1.0, 1.0]
    assert normalize([1.0, 3.0, 2.0]) == [0.0, 1.0, 0.5]


def test_blend_is_0_6_fts_plus_0_4_vector():
    assert blend(1.0, 0.0) == pytest.approx(0.6)
    assert blend(0.0, 1.0) == pytest.approx(0.4)
    assert blend(0.5, 0.5) == pytest.approx(0.5)


def test_missing_signal_counts_as_zero():
    fused = {f.candidate.key: f for f in fuse([
        cand("a", fts=10.0, vector=0.9), cand("b", fts=5.0), cand("c", vector=0.1),
    ], W)}
    assert fused["b"].vector_norm == 0.0 and fused["c"].fts_norm == 0.0
    assert fused["a"].blended == pytest.approx(1.0)


def test_seed_6_equal_match_ranks_repo_above_chat_by_weight():
    fused = fuse([cand("chat1", "chat", fts=7.0, vector=0.6), cand("repo1", "repo", fts=7.0, vector=0.6),
                  cand("other", "note", fts=1.0, vector=0.1)], W)
    assert [f.candidate.key for f in fused][:2] == ["repo1", "chat1"]
    assert fused[0].blended == fused[1].blended
    assert fused[0].rank_score == pytest.approx(fused[0].blended * 1.0)
    assert fused[1].rank_score == pytest.approx(fused[1].blended * 0.8)


@given(
    scores=st.lists(st.tuples(st.floats(0.01, 50), st.floats(-1, 1)), min_size=1, max_size=30),
    scale=st.integers(-20, 20).map(lambda e: 2.0 ** e),
)
def test_changing_bm25_scale_does_not_change_order(scores, scale):
    """Blending uses normalised values: multiplying every BM25 score by a constant cannot
    reorder results (powers of two keep the float arithmetic exact, so equality is bitwise)."""
    types = ["repo", "chat", "note", "codex_session"]
    base = [cand(f"k{i}", types[i % 4], fts=f, vector=v, chunk_id=f"c{i:03d}") for i, (f, v) in enumerate(scores)]
    scaled = [cand(f"k{i}", types[i % 4], fts=f * scale, vector=v, chunk_id=f"c{i:03d}")
              for i, (f, v) in enumerate(scores)]
    first = fuse(base, W)
    second = fuse(scaled, W)
    assert [f.candidate.key for f in first] == [f.candidate.key for f in second]
    for a, b in zip(first, second):
        assert a.blended == b.blended


def test_raw_blend_would_depend_on_scale():
    """The counter-example normalisation prevents: blending raw scores lets BM25's scale decide."""
    a, b = (2.0, 0.1), (1.0, 0.9)  # (bm25, cosine)
    raw = lambda s, scale: 0.6 * s[0] * scale + 0.4 * s[1]  # noqa: E731
    assert (raw(a, 1) > raw(b, 1)) != (raw(a, 0.1) > raw(b, 0.1))
    fused_1 = fuse([cand("a", fts=a[0], vector=a[1]), cand("b", fts=b[0], vector=b[1])], W)
    fused_01 = fuse([cand("a", fts=a[0] * 0.1, vector=a[1]), cand("b", fts=b[0] * 0.1, vector=b[1])], W)
    assert [f.candidate.key for f in fused_1] == [f.candidate.key for f in fused_01]


def test_tie_breaks_newer_then_source_priority_then_chunk_id():
    same = dict(fts=5.0, vector=0.5)
    # repo weight 1.0 vs codex_session 0.9: give them equal rank via custom weights
    weights = {"ctx": {"repo": 1.0, "codex_session": 1.0, "chat": 1.0, "note": 1.0}}
    fused = fuse([
        cand("old-repo", "repo", updated_at="2025-01-01T00:00:00.000Z", chunk_id="a", **same),
        cand("new-note", "note", updated_at="2026-01-01T00:00:00.000Z", chunk_id="b", **same),
        cand("new-repo", "repo", updated_at="2026-01-01T00:00:00.000Z", chunk_id="c", **same),
        cand("new-repo2", "repo", updated_at="2026-01-01T00:00:00.000Z", chunk_id="0", **same),
        cand("undated", "repo", updated_at=None, chunk_id="d", **same),
    ], weights)
    assert [f.candidate.key for f in fused] == ["new-repo2", "new-repo", "new-note", "old-repo", "undated"]


def test_unknown_source_type_weighs_half():
    fused = fuse([cand("x", "martian", fts=1.0, vector=1.0)], W)
    assert fused[0].weight == 0.5


def test_ties_follow_the_seed_order_newer_then_priority_then_chunk_id():
    """Equal rank scores: newer updated_at first (missing dates last), then source priority,
    then chunk id; compared with the spec's order written as one sort key."""
    import random

    from chinvex.retrieval.fusion import SOURCE_PRIORITY, Candidate, Fused, ordered

    rng = random.Random(3)
    dates = [None, "2024-01-01T00:00:00Z", "2025-06-01T12:00:00Z", "2025-06-01T12:00:01Z"]
    types = ["repo", "chat", "note", "codex_session", "memory", "unknown"]
    items = []
    for i in range(400):
        c = Candidate(key=f"k{i}", chunk_id=f"{rng.randrange(50):04x}{i}", source_type=rng.choice(types),
                      updated_at=rng.choice(dates))
        score = rng.choice([0.5, 0.25, 0.75])
        items.append(Fused(c, 0.0, 0.0, score, 1.0, score))

    def spec_key(item):
        c = item.candidate
        newest = -int(c.updated_at.replace("-", "").replace(":", "").replace("T", "")[:14]) if c.updated_at else 1
        return (-item.rank_score, newest, SOURCE_PRIORITY.get(c.source_type, 99), c.chunk_id, c.key)

    assert [i.candidate.key for i in ordered(items)] == [i.candidate.key for i in sorted(items, key=spec_key)]
