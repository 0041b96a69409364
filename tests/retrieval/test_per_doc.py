"""`--per-doc`: at most N chunks of one document among the results (real index, real embedder)."""

from __future__ import annotations

import pytest

from chinvex.retrieval.fusion import Candidate, Fused, at_most_per_document
from helpers import assert_no_traceback, run_cli, run_cli_in_process

SECTION = ("The lantern cache evicts entries with a clock sweep. A cold entry survives one sweep and "
           "is dropped on the second, which keeps hot keys resident without per-access bookkeeping. ")


def _fused(key: str, rank: float) -> Fused:
    return Fused(Candidate(key=key, chunk_id=key, source_type="note", updated_at=None), 0, 0, 0, 1, rank)


def test_the_limit_keeps_the_order_and_drops_only_the_extra_chunks():
    ranked = [_fused(k, r) for k, r in [("a1", 9), ("a2", 8), ("b1", 7), ("a3", 6), ("b2", 5), ("c1", 4)]]
    doc = {"a1": "A", "a2": "A", "a3": "A", "b1": "B", "b2": "B", "c1": "C"}
    keys = lambda items: [i.candidate.key for i in items]  # noqa: E731
    assert keys(at_most_per_document(ranked, 1, lambda i: doc[i.candidate.key])) == ["a1", "b1", "c1"]
    assert keys(at_most_per_document(ranked, 2, lambda i: doc[i.candidate.key])) == ["a1", "a2", "b1", "b2", "c1"]
    assert keys(at_most_per_document(ranked, 9, lambda i: doc[i.candidate.key])) == keys(ranked)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    base = tmp_path_factory.mktemp("perdoc")
    notes = base / "notes"
    notes.mkdir()
    sections = "\n\n".join(f"## Part {i}\n\n" + SECTION * 6 + f"Part {i} of the lantern notes." for i in range(4))
    (notes / "long.md").write_text("# Lantern cache, in depth\n\n" + sections + "\n")
    for name in ("short1", "short2", "short3"):
        (notes / f"{name}.md").write_text(f"# {name}\n\nThe lantern cache uses a clock sweep ({name}).\n")
    env = {"CHINVEX_HOME": str(base / "home")}
    assert run_cli_in_process("context", "create", "P", "--note-root", str(notes), env=env).code == 0
    assert run_cli_in_process("ingest", "--context", "P", env=env).code == 0
    return env


def _docs(env, *args):
    result = run_cli("search", "--context", "P", "lantern cache clock sweep", "--k", "6", *args, "--json", env=env)
    assert_no_traceback(result)
    assert result.code == 0, result
    return [r["doc_id"] for r in result.json["results"]]


def test_search_per_doc_gives_distinct_documents(corpus):
    plain = _docs(corpus)
    assert max(plain.count(d) for d in plain) >= 2, "the long note has several matching chunks"
    one = _docs(corpus, "--per-doc", "1")
    assert len(one) == len(set(one)) == 4  # every document once, the freed places filled
    two = _docs(corpus, "--per-doc", "2")
    assert max(two.count(d) for d in two) == 2 and len(two) == 5  # two of the long note, three short
    # The order among what is kept is the plain ranking's (which may not reach every document).
    first_seen = list(dict.fromkeys(plain))
    assert one[:len(first_seen)] == first_seen


@pytest.mark.parametrize("value", ["0", "-1"])
def test_per_doc_below_one_is_a_usage_error(corpus, value):
    result = run_cli("search", "--context", "P", "lantern", "--per-doc", value, env=corpus)
    assert_no_traceback(result)
    assert result.code == 2 and "--per-doc" in result.stderr
