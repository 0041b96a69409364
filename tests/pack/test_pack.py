"""Context packs (`chinvex pack`): never over budget, byte-identical for the same input, at most
D chunks per document. The packer is driven with the real built-in tokenizer over random
corpora and budgets (hypothesis); the command runs against a real index."""

from __future__ import annotations

import random
import re
import textwrap

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chinvex.embedding.tokenizer import count_tokens
from chinvex.pack.assemble import MIN_TRUNCATED_TOKENS, PackCandidate, assemble, pack_order
from chinvex.pack.service import prefix_of
from helpers import assert_no_traceback, run_cli, run_cli_in_process

_words = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=0, max_size=400)


@st.composite
def corpora(draw):
    n = draw(st.integers(0, 14))
    docs = draw(st.integers(1, 5))
    out = []
    for i in range(n):
        out.append(PackCandidate(
            chunk_id=f"c{draw(st.integers(0, 30)):02d}", doc_id=f"d{draw(st.integers(0, docs - 1))}",
            score=draw(st.sampled_from([0.0, 0.25, 0.5, 0.5000000001, 1.0, draw(st.floats(0, 1))])),
            path=draw(st.sampled_from(["a.py", "b/c.md", "“Chat” turns 1-2"])), offset=draw(st.integers(0, 5000)),
            text=draw(_words), header=f"### {i}"))
    return out


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(corpus=corpora(), budget=st.integers(0, 700), diversity=st.one_of(st.none(), st.integers(1, 3)),
       seed=st.integers(0, 10_000))
def test_never_over_budget_deterministic_and_diverse(corpus, budget, diversity, seed):
    pack = assemble(corpus, budget=budget, diversity=diversity, count_tokens=count_tokens, prefix_of=prefix_of)
    assert count_tokens(pack.text) <= budget
    assert pack.used == count_tokens(pack.text)  # the blocks' counts add up to the whole
    shuffled = list(corpus)
    random.Random(seed).shuffle(shuffled)
    again = assemble(shuffled, budget=budget, diversity=diversity, count_tokens=count_tokens, prefix_of=prefix_of)
    assert again.text.encode() == pack.text.encode()  # input order does not matter
    ids = [p.candidate.chunk_id for p in pack.chunks]
    assert len(ids) == len(set(ids))
    if diversity is not None:
        per_doc = [p.candidate.doc_id for p in pack.chunks]
        assert max((per_doc.count(d) for d in per_doc), default=0) <= diversity
    order = [c.chunk_id for c in pack_order(corpus)]
    assert ids == [i for i in order if i in ids]  # packed in ranked order
    for p in pack.chunks:
        if p.truncated:
            assert p.candidate.text.startswith(p.text) and count_tokens(p.text) >= MIN_TRUNCATED_TOKENS
        else:
            assert p.text == p.candidate.text


def test_ties_break_by_path_then_offset_then_id():
    def c(cid, score, path, offset):
        return PackCandidate(cid, "d" + cid, score, path, offset, "text " + cid, "### " + cid)

    ranked = pack_order([c("z", 0.5, "b.py", 0), c("y", 0.5, "a.py", 9), c("x", 0.5, "a.py", 2),
                         c("w", 0.5 + 1e-9, "a.py", 2), c("v", 0.9, "z.py", 0)])
    assert [r.chunk_id for r in ranked] == ["v", "w", "x", "y", "z"]


def test_a_chunk_that_does_not_fit_is_cut_to_a_prefix_and_packing_stops():
    long = " ".join(f"word{i}" for i in range(400))
    corpus = [PackCandidate("a", "d1", 0.9, "a.md", 0, long, "### a.md"),
              PackCandidate("b", "d2", 0.5, "b.md", 0, "short note", "### b.md")]
    pack = assemble(corpus, budget=60, diversity=None, count_tokens=count_tokens, prefix_of=prefix_of)
    assert [p.candidate.chunk_id for p in pack.chunks] == ["a"]
    assert pack.chunks[0].truncated and long.startswith(pack.chunks[0].text)
    assert pack.used <= 60 and pack.truncated and pack.left_out_for_budget == 1


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError):
        assemble([], budget=-1, diversity=None, count_tokens=count_tokens, prefix_of=prefix_of)
    with pytest.raises(ValueError):
        assemble([], budget=10, diversity=0, count_tokens=count_tokens, prefix_of=prefix_of)


@pytest.fixture(scope="module")
def notes_context(tmp_path_factory):
    base = tmp_path_factory.mktemp("pack")
    notes = base / "notes"
    notes.mkdir()
    topics = ["retry backoff for webhooks", "idempotency keys for payments", "settlement at midnight",
              "webhook signatures and secrets rotation", "rate limits per merchant"]
    for i, topic in enumerate(topics):
        body = "\n\n".join(f"## Part {j}\n\nWe discussed {topic} in meeting {j}. " * 6 for j in range(4))
        (notes / f"note{i}.md").write_text(f"# {topic.title()}\n\n{body}\n")
    (notes / "webhooks.md").write_text(textwrap.dedent("""\
        # Webhooks

        Webhook deliveries are retried with exponential backoff and full jitter, five attempts.
        """))
    env = {"CHINVEX_HOME": str(base / "home")}
    assert run_cli_in_process("context", "create", "packs", "--note-root", str(notes), env=env).code == 0
    assert run_cli_in_process("ingest", "--context", "packs", env=env).code == 0
    return env


def test_pack_command_is_byte_identical_budgeted_and_diverse(notes_context):
    env = notes_context
    args = ("pack", "exponential backoff with full jitter", "--context", "packs", "--budget-tokens", "300", "--json")
    first, second = run_cli(*args, env=env), run_cli(*args, env=env)
    assert first.code == 0, first
    assert first.stdout.encode() == second.stdout.encode()
    data = first.json
    assert 0 < data["used_tokens"] <= 300 and count_tokens(data["text"]) == data["used_tokens"]
    assert data["chunks"][0]["where"].startswith("webhooks.md")
    for chunk in data["chunks"]:
        assert chunk["source_uri"] and chunk["sha256"] and chunk["mtime"] and chunk["range"]
    wide = run_cli("pack", "webhooks payments settlement meeting", "--context", "packs", "--budget-tokens",
                   "20000", "--diversity", "1", "--json", env=env).json
    docs = [c["doc_id"] for c in wide["chunks"]]
    assert len(docs) == len(set(docs)) == 6 and wide["skipped_for_diversity"] > 0
    human = run_cli("pack", "exponential backoff with full jitter", "--context", "packs", "--budget-tokens", "300", env=env)
    assert human.code == 0 and "webhooks.md" in human.stdout and "of 300 tokens" in human.stdout
    one = run_cli("pack", "exponential backoff with full jitter", "--context", "packs", "--budget-tokens", "40", env=env)
    assert re.search(r"^\d+ of 40 tokens, 1 chunk; cut to fit", one.stdout, re.M), one.stdout  # not "1 chunks"


@pytest.mark.parametrize("args, needle", [
    (("--budget-tokens", "0"), "--budget-tokens"),
    (("--diversity", "0"), "--diversity"),
    (("--budget-tokens", "lots"), "--budget-tokens"),
])
def test_pack_usage_errors_exit_2(notes_context, args, needle):
    result = run_cli("pack", "webhooks", "--context", "packs", *args, env=notes_context)
    assert_no_traceback(result)
    assert result.code == 2 and needle in result.stderr


def test_empty_task_exits_2(notes_context):
    result = run_cli("pack", "  ", "--context", "packs", env=notes_context)
    assert result.code == 2 and "TASK" in result.stderr
