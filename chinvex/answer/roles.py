"""Prefer the thing over talk about it: what role a retrieved file plays in its repository.

A question about how a repository does something is answered by its implementation and its
docs. Tests, fixtures, evaluation sets and benchmark tables talk *about* that code: they repeat
its names and often the very words of the question (a test named after the behaviour it
checks, a golden file holding the question itself), so they retrieve well and answer badly.
Their evidence keeps its place in the pack but counts for less when the answer is chosen,
unless the question is about tests.

The classification is retrieval's (chinvex.retrieval.roles), which weighs roles when it ranks;
the weights here are how much each role's evidence counts when an answer is chosen.
"""

from __future__ import annotations

from chinvex.retrieval.roles import role_of
from chinvex.retrieval.roles import role_weight as _role_weight

__all__ = ["ROLE_WEIGHT", "grounds", "role_of", "role_weight"]

ROLE_WEIGHT = {
    "code": 1.0,
    "docs": 0.85,
    "config": 0.8,
    "bench": 0.5,
    "test": 0.45,
    "fixture": 0.35,
}
"""How much a file of each role counts when an answer is chosen (the question not being about
tests). Implementation first; prose docs close behind (they state the design in words); tests,
benchmarks and sample data well behind, so they only win when nothing else says it."""


def grounds(path: str | None, source_type: str, about_tests: bool) -> bool:
    """Can what this file says ground an answer? Sample data (fixtures, golden question sets,
    benchmark corpora) is material a repository tests itself on, not what its authors state: a
    scientific claim in an evaluation set does not make a code base an authority on immunology.
    It grounds answers only to questions about tests and their data."""
    if source_type != "repo" or not path or about_tests:
        return True
    return role_of(path) != "fixture"


HOW_TO_WEIGHT = {**ROLE_WEIGHT, "code": ROLE_WEIGHT["docs"], "docs": ROLE_WEIGHT["code"]}
"""For a question asking how to do something oneself, docs and code trade places: the docs
say it to the user ("add this to config.toml"), the code only does it."""


def role_weight(path: str | None, source_type: str, about_tests: bool, how_to: bool = False) -> float:
    """The weight of a repository file's evidence; 1.0 for other sources and for questions about
    tests (then tests and fixtures are the thing asked about)."""
    return _role_weight(path, source_type, about_tests, HOW_TO_WEIGHT if how_to else ROLE_WEIGHT)
