"""The phrase that answers a "what" question (phrases.py): what the sentence says beyond the
question's words, not the whole sentence; the sentence stays the citation's quote. Real
sentences, real stemmer (SQLite FTS5), evidence built by hand (support_cases)."""

from __future__ import annotations

from support_cases import result, verdict_for

from chinvex.answer.compose import compose
from chinvex.answer.phrases import answer_phrase, asked_nouns
from chinvex.answer.question import analyse_question
from chinvex.answer.text import Stemmer
from chinvex.retrieval.lexical import index_text


PEOPLE = frozenset("Andrew Jolene John James Nate Deborah Gina".split())
"""The speakers: support.analyse leaves the people a question names out of its terms."""


def _phrase(question: str, sentence: str) -> str | None:
    stemmer = Stemmer()
    asked = analyse_question(question)
    terms = stemmer.stems(index_text(" ".join(w for w in asked.words if w not in PEOPLE)))
    return answer_phrase(asked, sentence, terms, stemmer)


def test_the_noun_the_question_asks_for_comes_with_the_words_naming_its_kind():
    assert _phrase("What type of date is Andrew going on Sunday?",
                   "Because on Sunday I am going on a picnic date with my girlfriend.") == "picnic date"
    assert _phrase("What course did Jolene sign up for?",
                   "I signed up for a meditation course at a retreat near a lake.") == "meditation course"
    assert _phrase("What kind of music does John like?", "I'm into electronic and rock music.") == \
        "electronic and rock music"


def test_a_name_the_asked_thing_is_called_by_is_the_answer():
    assert _phrase("What game has Nate been playing nonstop?",
                   "I've also been playing a game nonstop with a great futuristic setting and gameplay "
                   "called \"Cyberpunk 2077\".") == "Cyberpunk 2077"


def test_what_follows_the_question_words_up_to_the_clause_boundary():
    assert _phrase("What new hobby did James become interested in?",
                   "Lately I've become interested in extreme sports.") == "extreme sports"
    assert _phrase("What was Deborah's mom passionate about?", "My mom had a big passion for cooking.") == "cooking"
    assert _phrase("What did the charity race raise awareness for?",
                   "Making a difference & raising awareness for mental health is super rewarding") == "mental health"


def test_what_stands_before_them_only_as_their_subject():
    assert _phrase("Which specific type of bird mesmerizes Andrew?", "Eagles have always mesmerized me") == "Eagles"
    # the speaker did it: what they made is not before the words
    assert _phrase("What did Gina make a limited edition line of?", "I made a limited edition line!") is None


def test_particles_times_and_pronouns_are_not_an_answer():
    assert _phrase("What does Nate rely on for cheer and joy?", "but my turtles always cheer me up.") == "turtles"
    assert _phrase("What did the game do for Nate's mood?", "It cheered me up.") is None
    assert _phrase("What did Melanie do after the road trip to relax?",
                   "It was a nice way to relax after the road trip.") != "after"


def test_the_nouns_a_question_names_its_answer_by():
    assert asked_nouns(analyse_question("What kind of professional experience did Gina get?")) == \
        ["professional", "experience"]
    assert asked_nouns(analyse_question("What course did Jolene take?")) == ["course"]
    assert asked_nouns(analyse_question("What is one of Jolene's favorite dishes?")) == []


def test_the_composed_answer_is_the_phrase_and_the_sentence_its_quote():
    talk = ("**[D1:1] Jon:** Anything new?\n\n"
            "**[D1:2] Gina:** I just got accepted for a fashion internship!\n\n"
            "**[D1:3] Jon:** Congrats!")
    analysis, weights, verdict, stemmer = verdict_for(
        "What kind of professional experience did Gina get accepted for?", [result(talk)])
    assert verdict.ok, verdict.reason
    composed = compose([verdict.best], terms=analysis.terms, expects=analysis.question.expects, stemmer=stemmer,
                       weights=weights, said_on=lambda c: None, asked_about=analysis.participants,
                       question=analysis.question)
    assert composed.text == "“fashion internship” [chunk:c00000000000]", composed.text
    assert composed.quotes["c00000000000"] == "Gina: “I just got accepted for a fashion internship!”"


def test_the_fullest_phrase_between_the_question_words_and_no_time_at_its_edges():
    assert _phrase("What instrument did James used to play when he was younger?",
                   "I used to play a guitar when I was younger") == "guitar"
    assert _phrase("What was Joanna's audition for?",
                   "Been quite a ride - had an audition yesterday for a writing gig.") == "writing gig"
    assert _phrase("What event is Nate organizing?",
                   "I'm organizing a gaming party two weekends later - it'll be hectic but fun!") == "gaming party"
    # a name with a colon in it is one word, not a clause boundary
    assert _phrase("What game did John play?", "I played CS:GO all night") == "CS:GO"


def test_what_the_speaker_did_before_the_question_words_is_the_object_of_their_verb():
    # the question's words come after the answer: the object of "I <verb>", up to a preposition
    assert _phrase("What did Joanna make for one of the ladies at her writing club?",
                   "I just finished this cute little bookmark for one of the ladies at my writing club!") == \
        "cute little bookmark"
    assert _phrase("What did Nate take to the beach in Tampa?", "I took my turtles to the beach in Tampa yesterday!") \
        == "turtles"
    # a verb of being or an auxiliary has no object to give
    assert _phrase("What did Jon do at the studio opening?", "I have been at the studio opening.") is None


def test_a_lone_past_tense_verb_is_not_the_thing_asked_for():
    assert _phrase("What flavor of ice cream did Nate make for his friend?",
                   "I made my friend some ice cream and they loved it!") != "loved"
    assert _phrase("What genre is Joanna's first screenplay?",
                   "I finally finished my first full screenplay and printed it last Friday.") != "printed"


def test_a_description_alone_is_not_the_thing_asked_for():
    # "amazing", "one", "easy" describe; the clause stays the answer
    assert _phrase("What does James think about The Witcher 3?", "The Witcher 3 is amazing.") is None
    assert _phrase("What game did Nate try last week?", "I tried one last week.") is None
    assert _phrase("What flowers does Audrey take care of?", "They are easy to take care of.") is None
    # a description with the thing named is still a phrase
    assert _phrase("What did Gina bake for the party?", "I baked some amazing pastries for the party.") \
        == "amazing pastries"
