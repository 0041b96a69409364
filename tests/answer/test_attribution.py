"""Whom a chat sentence is about, read from where its pronouns stand (chinvex/answer/attribution.py).
Sentences written for these tests: each case fails when its rule goes (a "you" that is an object
counted as the addressee, an opener read as the news, a named person missed)."""

from __future__ import annotations

import pytest

from chinvex.answer.attribution import about, discourse_body, persons, same_person

PEOPLE = ("Priya", "Tomasz")


@pytest.mark.parametrize("sentence", [
    "I signed up for a pottery class last week.",
    "My sister moved to Porto in spring.",
    "We drove up to the lake on Sunday.",
    "Can't wait to start the new job!",
])
def test_first_person_is_the_speakers(sentence):
    assert persons(sentence).speaker and not persons(sentence).addressee
    assert about(sentence, "Priya", "Tomasz", PEOPLE) == {"priya"}


@pytest.mark.parametrize("sentence", [
    "I wanted to tell ya I just joined a chess club.",
    "Just wanted to let you know that I got the grant.",
    "I'm so proud of you for finishing, I ran it too.",
    "I want to show you one of my sketches!",
    "Thanks for asking you, I finally fixed the bike.",
    "I love your garden so much!",
])
def test_the_addressee_as_object_or_aside_is_not_what_it_is_about(sentence):
    assert about(sentence, "Priya", "Tomasz", PEOPLE) == {"priya"}


@pytest.mark.parametrize("sentence", [
    "You joined a chess club?",
    "Your sketch of the harbour is lovely.",
    "Did you finish the marathon?",
    "That is already the third city you will visit!",
    "Sounds like you had a great time.",
    "Must've taken you ages to build it.",
])
def test_the_addressee_as_subject_is_what_it_is_about(sentence):
    assert about(sentence, "Priya", "Tomasz", PEOPLE) == {"tomasz"}


def test_a_sentence_about_both():
    assert about("I hope you had fun at the fair!", "Priya", "Tomasz", PEOPLE) == {"priya", "tomasz"}
    assert about("We should ask whether you want the big tent.", "Priya", "Tomasz", PEOPLE) == {"priya", "tomasz"}


def test_a_third_person_by_name():
    assert about("Tomasz's bakery opened on Friday.", "Priya", None, PEOPLE) == {"tomasz"}
    assert about("Tom said the bakery opened.", "Priya", None, PEOPLE) == {"tomasz"}
    assert about("The bakery opened on Friday.", "Priya", "Tomasz", PEOPLE) == frozenset()


def test_openers_are_dropped_and_only_openers():
    assert discourse_body("Guess what, I adopted a cat!") == "I adopted a cat!"
    assert discourse_body("I wanted to tell you that I moved.") == "I moved."
    assert discourse_body("You know the answer.") == "You know the answer."
    assert persons("You know the answer.").addressee


def test_same_person_by_prefix():
    assert same_person("Mel", "melanie")
    assert not same_person("Al", "alice")
    assert not same_person("Jon", "joanna")
