"""A question asking which variable, flag or function is answered by that name, the sentence
kept as the citation's quote; when the sentence does not single one name out, the sentence
stays the answer."""

from __future__ import annotations

import pytest
from support_cases import composed_answer, result

from chinvex.answer.code_names import asked_name
from chinvex.answer.question import analyse_question
from chinvex.answer.text import Stemmer

ROOTS = "`CHINVEX_CONTEXTS_ROOT` and `CHINVEX_INDEXES_ROOT` move either root."


@pytest.fixture
def stemmer():
    s = Stemmer()
    yield s
    s.close()


@pytest.mark.parametrize("question, name", [
    ("Which environment variable moves the contexts folder?", "CHINVEX_CONTEXTS_ROOT"),
    ("Which environment variable moves the indexes folder?", "CHINVEX_INDEXES_ROOT"),
])
def test_the_name_whose_words_the_question_uses(stemmer, question, name):
    assert asked_name(analyse_question(question), ROOTS, stemmer) == name


def test_a_lone_name_is_the_answer(stemmer):
    question = analyse_question("Which environment variable sets the trusted CA bundle?")
    said = "You can set the `REQUESTS_CA_BUNDLE` environment variable to a trusted CA bundle file."
    assert asked_name(question, said, stemmer) == "REQUESTS_CA_BUNDLE"


def test_no_name_when_the_question_does_not_single_one_out(stemmer):
    question = analyse_question("Which environment variable moves a root?")
    assert asked_name(question, ROOTS, stemmer) is None


def test_a_name_the_question_writes_is_not_its_answer(stemmer):
    question = analyse_question("Which function does `fuse_scores` call?")
    assert asked_name(question, "`fuse_scores` calls `min_max` on each leg.", stemmer) == "min_max"


def test_only_name_questions_get_a_name(stemmer):
    assert asked_name(analyse_question("What moves the contexts folder?"), ROOTS, stemmer) is None
    assert asked_name(analyse_question("Which environment variables move the roots?"), ROOTS, stemmer) is None


def test_the_answer_is_the_name_and_the_quote_its_sentence():
    question = "Which environment variable moves the contexts folder?"
    text = ("## Home\n\nThe environment variables `CHINVEX_CONTEXTS_ROOT` and `CHINVEX_INDEXES_ROOT` move "
            "either folder.\n")
    composed = composed_answer(question, [result(text, path="docs/home.md")])
    assert composed.text.startswith("`CHINVEX_CONTEXTS_ROOT` [")
    assert "CHINVEX_INDEXES_ROOT" not in composed.text
    assert any("move either folder" in quoted for quoted in composed.quotes.values())


@pytest.mark.parametrize("question, many", [
    ("Which flag makes ingest quiet?", False),
    ("Which song motivates Caroline to be courageous?", False),
    ("Which command lists every agent's session store?", False),
    ("What movie genres does she like?", True),
    ("Which environment variables move the roots?", True),
    ("What books has Melanie read?", True),
])
def test_an_s_word_after_a_singular_kind_noun_is_its_verb(question, many):
    assert analyse_question(question).many is many


def test_only_a_name_shaped_like_the_kind_asked_for(stemmer):
    said = "List every agent's session store found under your home folder (and overrides such as CODEX_HOME)"
    assert asked_name(analyse_question("Which command lists every agent's session store?"), said, stemmer) is None
    flags = "nothing with `--json` or `--quiet`, and `CHINVEX_PROGRESS_EVERY` sets the pace"
    assert asked_name(analyse_question("Which flag makes ingest quiet?"), flags, stemmer) == "--quiet"
    assert asked_name(analyse_question("Which environment variable sets the pace?"), flags, stemmer) == \
        "CHINVEX_PROGRESS_EVERY"
