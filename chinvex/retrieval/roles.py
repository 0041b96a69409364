"""Prefer the thing over talk about it: what role a repository file plays, and how much a search
trusts each role.

A question about how a repository does something is answered by its implementation and its
docs. Tests, fixtures, evaluation sets and benchmark tables talk *about* that code: they repeat
its names and often the very words of the question (a test named after the behaviour it
checks, a golden file holding the question itself), so they retrieve well and answer badly.
Search multiplies a repository chunk's blended score by its role's weight (context.json
`role_weights`, merged over ROLE_WEIGHTS), and the answer layer reads the same classification.
A question about tests or their data (`about_tests`) weighs every role 1.0: then the tests and
fixtures are the thing asked about.

The role is read from the path alone, relative to its root (folder and file-name conventions of
the major ecosystems), so it costs nothing and behaves the same in every context. Only
repository files have roles: a note or a conversation is the user's own material, whatever its
folder is called.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from chinvex.models.documents import ROLE_WEIGHTS, ROLES  # noqa: F401  (the weights are data; models own them)

_TEST = re.compile(
    r"(?:^|/)(?:tests?|spec|specs|__tests__|testing)/|(?:^|/)test_[^/]+$|(?:^|/)conftest\.py$|"
    r"_tests?\.\w+$|\.(?:test|spec)\.\w+$|Tests?\.\w+$",
)
_FIXTURE = re.compile(
    r"(?:^|/)(?:fixtures?|testdata|test_data|__fixtures__|__snapshots__|snapshots|samples?|"
    r"golden\w*|datasets?|mocks?)/|(?:^|/)(?:bench|benches|benchmarks?|perf|tests?)/(?:[^/]+/)*data/",
    re.IGNORECASE,
)
_BENCH = re.compile(r"(?:^|/)(?:bench|benches|benchmarks?|perf)/", re.IGNORECASE)
_DOCS = re.compile(r"\.(?:md|markdown|rst|txt|adoc|org)$|(?:^|/)docs?/", re.IGNORECASE)
_CONFIG = re.compile(r"\.(?:toml|ya?ml|ini|cfg|json|lock)$|(?:^|/)(?:Makefile|Dockerfile)$", re.IGNORECASE)

_TEST_WORDS = re.compile(
    r"\b(?:tests?|testing|tested|pytest|unittest|fixtures?|mocks?|benchmarks?|bench|golden|datasets?|"
    r"samples?|eval(?:uation)?\s+sets?)\b"
    # a test named in the question: test_foo, foo_test, TestFoo, conftest
    r"|\b(?:test_\w+|\w+_tests?|Test[A-Z]\w*|conftest)\b",
    re.IGNORECASE,
)


def role_of(path: str) -> str:
    """"test", "fixture", "bench", "docs", "config" or "code", from a path relative to its root."""
    p = path.replace("\\", "/")
    if _FIXTURE.search(p):
        return "fixture"
    if _TEST.search(p):
        return "test"
    if _BENCH.search(p):
        return "bench"
    if _DOCS.search(p):
        return "docs"
    if _CONFIG.search(p):
        return "config"
    return "code"


def about_tests(query: str) -> bool:
    """Whether a question is about tests, fixtures, benchmarks or their data (it says so, or
    names a test): then those files are what it asks for and keep their full weight."""
    return bool(_TEST_WORDS.search(query))


def role_weight(path: str | None, source_type: str, about_tests: bool,
                weights: Mapping[str, float] | None = None) -> float:
    """The weight of a repository file's role (`weights` over ROLE_WEIGHTS); 1.0 for other
    sources, for chunks without a path and for questions about tests."""
    if source_type != "repo" or not path or about_tests:
        return 1.0
    role = role_of(path)
    if weights is not None and role in weights:
        return float(weights[role])
    return ROLE_WEIGHTS[role]
