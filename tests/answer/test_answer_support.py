"""The parts of an answer that are pure functions, first half: what a question asks for, dates
resolved against the day they were said, and whom a sentence is about (refusing what the sources
say of someone else). Evidence is built by hand (support_cases), so each rule is pinned by a case
that fails when the rule goes."""

from __future__ import annotations

from datetime import date

import pytest
from support_cases import TALK, result, verdict_for

from chinvex.answer.compose import compose
from chinvex.answer.dates import header_date, parse_date, resolve
from chinvex.answer.generators.extractive import pick
from chinvex.answer.question import analyse_question
from chinvex.answer.question_names import question_names, subject_of
from chinvex.answer.support import CONTRAST

# -- what a question asks for -----------------------------------------------------------------


@pytest.mark.parametrize("question, expects", [
    ("When did Caroline go to the support group?", "date"),
    ("What year did she move?", "date"),
    ("How long ago was her birthday?", "date"),
    ("How long has she been painting?", "duration"),
    ("How many children does Melanie have?", "number"),
    ("How far is Sintra from Lisbon?", "duration"),
    ("How often does she run?", "frequency"),
    ("Where did Caroline move from?", "place"),
    ("In which city did they meet?", "place"),
    ("Who supports Caroline?", "person"),
    ("Why did Jon start a studio?", "reason"),
    ("How does hybrid retrieval combine scores?", "manner"),
    ("What did Caroline research?", "thing"),
    ("Did Caroline make the bowl?", "thing"),
    ("Which environment variables move the indexes folder?", "name"),
    ("What function blends the scores?", "name"),
    ("What book did Melanie read?", "title"),
])
def test_the_kind_of_answer_a_question_expects(question, expects):
    assert analyse_question(question).expects == expects


def test_question_periods_plans_and_tests():
    assert analyse_question("When did Melanie go camping in July?").period == (None, 7)
    assert analyse_question("What did Jon find on 1 February, 2023?").period == (2023, 2)
    assert analyse_question("How many times did she swim in 2023?").period == (2023, None)
    assert analyse_question("When is Melanie planning to go camping?").future is True
    assert analyse_question("When did Melanie go camping?").future is False
    assert analyse_question("which tests cover the retry policy").about_tests is True
    assert analyse_question("how is the retry policy implemented").about_tests is False


def test_names_a_question_uses_must_be_found():
    assert question_names("What is the capital of Australia?") == ["Australia"]
    assert question_names("walk from current_node to the root") == ["current_node"]
    assert question_names("how do I configure Codex's config.toml") == ["Codex", "config.toml"]
    assert question_names("How does hybrid retrieval combine scores?") == []
    # each sentence's first word is capitalised as a sentence's, not as a name; "Dr." ends none
    assert question_names("Was September good for Nate and Joanna? Answer yes or no.") == ["Nate", "Joanna"]
    assert question_names("What Dr. Seuss book does Melanie like?") == ["Dr", "Seuss", "Melanie"]


# -- dates ------------------------------------------------------------------------------------


def test_relative_dates_resolve_against_the_day_they_were_said():
    said = date(2023, 5, 8)
    assert resolve("I went to a support group yesterday", said).meaning == "7 May 2023"
    assert resolve("I painted that sunrise last year!", said).meaning == "2022"
    # a weekday is said against the day: "last Friday" said on a Monday can mean either Friday
    assert resolve("I ran a charity race last Saturday", said).meaning == "the Saturday before 8 May 2023"
    assert resolve("Last Fri I took the kids to a workshop", said).meaning == "the Friday before 8 May 2023"
    assert resolve("We're going camping next month", said).meaning == "June 2023"
    assert resolve("my school event last week", said).meaning == "the week before 8 May 2023"
    assert resolve("I quit three days ago", said).meaning == "5 May 2023"
    assert resolve("nothing happened", said) is None
    # what is to come, counted from the day of saying
    assert resolve("I'm organizing a party two weekends later", said).meaning == "two weekends after 8 May 2023"
    assert resolve("We move in three days", said).meaning == "11 May 2023"
    assert resolve("a month from now", said).meaning == "June 2023"
    assert resolve("the talk is in 10 minutes", said) is None


def test_a_transcript_header_gives_the_day_and_garbage_gives_none():
    assert header_date("# conv\n\nDate: 1:56 pm on 8 May, 2023\n\n**[D1:1] A:** hi") == date(2023, 5, 8)
    assert parse_date("2023-05-08T13:56:00Z") == date(2023, 5, 8)
    assert parse_date("next tuesday") is None and header_date("no date here") is None


def test_a_when_answer_carries_the_resolved_date():
    analysis, weights, verdict, stemmer = verdict_for(
        "When did Caroline go to the LGBTQ support group?", [result(TALK)], said_on=date(2023, 5, 8))
    assert verdict.ok, verdict.reason
    composed = compose(pick(verdict.best, verdict.ranked), terms=analysis.terms, expects="date", stemmer=stemmer,
                       weights=weights, said_on=lambda c: date(2023, 5, 8))
    # the answer is the date; the words it rests on go with the citation
    assert composed.text == "7 May 2023 [chunk:c00000000000]"
    assert composed.quotes["c00000000000"].startswith("Caroline: “I went to a LGBTQ support group yesterday")


def test_a_when_answer_without_a_time_expression_is_bounded_by_the_day_it_was_said():
    analysis, weights, verdict, stemmer = verdict_for(
        "When did Melanie run a charity race?", [result("**[D1:1] Caroline:** How have you been?\n\n"
                                                  "**[D1:2] Melanie:** I ran a charity race for mental health.\n\n"
                                                  "**[D1:3] Caroline:** That's great!")],
        said_on=date(2023, 5, 8))
    assert verdict.ok, verdict.reason
    composed = compose([verdict.best], terms=analysis.terms, expects="date", stemmer=stemmer, weights=weights,
                       said_on=lambda c: date(2023, 5, 8))
    assert composed.text == "By 8 May 2023 [chunk:c00000000000]"
    assert composed.quotes["c00000000000"] == "Melanie: “I ran a charity race for mental health.”"


def test_a_when_answer_takes_the_time_of_the_sentence_before_in_the_same_turn():
    """"Something exciting happened last Friday. I went to a game convention…": the convention
    was last Friday, and the quote shows the words that say so. A plan said before ("Next week I
    start a class.") is not when what follows was done: that stays bounded by the day of saying."""
    said = date(2022, 10, 9)
    turn = ("**[D1:1] Joanna:** Any news?\n\n"
            "**[D1:2] Nate:** Something exciting happened last Friday. I went to a game convention and met "
            "new people.\n\n**[D1:3] Joanna:** Cool!")
    analysis, weights, verdict, stemmer = verdict_for("When did Nate go to a game convention?", [result(turn)],
                                                      said_on=said)
    assert verdict.ok, verdict.reason
    composed = compose([verdict.best], terms=analysis.terms, expects="date", stemmer=stemmer, weights=weights,
                       said_on=lambda c: said, question=analysis.question)
    assert composed.text == "The Friday before 9 October 2022 [chunk:c00000000000]"
    assert composed.quotes["c00000000000"] == (
        "Nate: “Something exciting happened last Friday. I went to a game convention and met new people.”")

    planned = turn.replace("Something exciting happened last Friday.", "Next week I start a class.")
    analysis, weights, verdict, stemmer = verdict_for("When did Nate go to a game convention?", [result(planned)],
                                                      said_on=said)
    composed = compose([verdict.best], terms=analysis.terms, expects="date", stemmer=stemmer, weights=weights,
                       said_on=lambda c: said, question=analysis.question)
    assert composed.text == "By 9 October 2022 [chunk:c00000000000]"
    assert composed.quotes["c00000000000"] == "Nate: “I went to a game convention and met new people.”"


def test_a_turn_names_its_speaker_unless_the_question_asks_about_them():
    """"What did Melanie run?" is answered in Melanie's words without "Melanie:" before them
    (the citation's quote names her); words of anyone else keep their speaker."""
    talk = ("**[D1:1] Caroline:** How have you been?\n\n"
            "**[D1:2] Melanie:** I ran a charity race for mental health last weekend.\n\n"
            "**[D1:3] Caroline:** That's great, Melanie!")
    analysis, weights, verdict, stemmer = verdict_for("What did Melanie run for mental health?", [result(talk)])
    assert verdict.ok, verdict.reason
    assert analysis.participants == {"melanie"}
    composed = compose([verdict.best], terms=analysis.terms, expects="thing", stemmer=stemmer, weights=weights,
                       said_on=lambda c: None, asked_about=analysis.participants)
    assert composed.text.startswith("“I ran a charity race for mental health"), composed.text
    assert composed.quotes["c00000000000"].startswith("Melanie: “I ran a charity race")
    composed = compose([verdict.best], terms=analysis.terms, expects="thing", stemmer=stemmer, weights=weights,
                       said_on=lambda c: None, asked_about=frozenset({"caroline"}))
    assert composed.text.startswith("Melanie: “I ran a charity race"), composed.text


# -- whom it is about -------------------------------------------------------------------------


def test_the_subject_check_refuses_what_the_sources_say_of_someone_else():
    _, _, wrong, _ = verdict_for("What did Caroline realize after her charity race?", [result(TALK)])
    assert not wrong.ok and "someone other than caroline" in wrong.reason
    _, _, right, _ = verdict_for("What did Melanie realize after her charity race?", [result(TALK)])
    assert right.ok and right.best.unit.speaker == "Melanie"
    # "you" in a reply is the one spoken to: Caroline's comment is about Melanie's race
    _, _, also, _ = verdict_for("What did Melanie run for mental health?", [result(TALK)])
    assert also.ok and "charity race" in also.best.unit.text


def test_advice_is_not_a_fact_about_the_one_advised():
    talk = ("**[D2:1] Melanie:** How did you start with adoption?\n\n"
            "**[D2:2] Caroline:** Do your research and find an adoption agency that supports you.\n\n"
            "**[D2:3] Melanie:** Thanks, I will!")
    _, _, verdict, _ = verdict_for("Which adoption agency does Melanie support?", [result(talk)])
    assert not verdict.ok, verdict.best and verdict.best.unit.text
    told = talk.replace("Do your research and find", "You found")
    _, _, verdict, _ = verdict_for("Which adoption agency does Melanie support?", [result(told)])
    assert verdict.ok and verdict.best.unit.speaker == "Caroline", verdict.reason


def test_the_subject_a_question_names_must_be_in_the_passage_that_answers():
    people = ["caroline", "melanie"]
    assert subject_of("What was grandpa's gift to Caroline?", people) == ["grandpa", "gift"]
    assert subject_of("When is Caroline's youth center putting on a show?", people) == ["youth center"]
    assert subject_of("What is Melanie's attitude towards running?", people) == []  # the kind of answer
    talk = ("**[D4:1] Caroline:** This necklace is a gift from my grandma in Sweden.\n\n"
            "**[D4:2] Melanie:** It's beautiful!\n\n**[D4:3] Caroline:** Thanks, it reminds me of home.")
    _, _, verdict, _ = verdict_for("What was grandpa's gift to Caroline?", [result(talk)])
    assert not verdict.ok and "grandpa" in verdict.reason
    # a youth center named in another passage does not make this talent show its
    show = ("**[D6:1] Caroline:** We're putting on a talent show at the library next month.\n\n"
            "**[D6:2] Melanie:** Fun!\n\n**[D6:3] Caroline:** I hope so.")
    center = "# Places\n\nThe youth center is on Elm Street.\n"
    _, _, verdict, _ = verdict_for("When is Caroline's youth center putting on a talent show?",
                                   [result(show), result(center, n=1)])
    assert not verdict.ok and verdict.reason == "The passages that say this do not mention youth center.", verdict.reason
    _, _, verdict, _ = verdict_for("What was grandma's gift to Caroline?", [result(talk)])
    assert verdict.ok, verdict.reason
    # the subject may be named anywhere in the passage, not only in the answering sentence
    talk = ("**[D5:1] Caroline:** I volunteer at the youth center every week.\n\n"
            "**[D5:2] Melanie:** That's lovely!\n\n"
            "**[D5:3] Caroline:** We're putting on a talent show for the kids next month.")
    _, _, verdict, _ = verdict_for("When is Caroline's youth center putting on a talent show?", [result(talk)])
    assert verdict.ok and "talent show" in verdict.best.unit.text, verdict.reason


def test_a_definition_named_for_what_is_asked_comes_before_talk_that_mentions_it():
    comment = ("def analyse(text):\n"
               "    # the name a definition gives says what it is: \"def chunk_id\" defines how chunk ids are made\n"
               "    return text\n")
    code = ('def chunk_id(doc_id: str, index: int, text: str) -> str:\n'
            '    """First 12 hex digits of sha256 over the document id, the index and how the chunk ids are made."""\n'
            '    return sha256(f"{doc_id}:{index}:{text}")[:12]\n')
    _, _, verdict, _ = verdict_for("How are chunk ids made?", [result(comment, path="src/support.py", n=0),
                                                               result(code, path="src/ids.py", rank=0.9, n=1)])
    assert verdict.ok and verdict.best.item.relative_path() == "src/ids.py", verdict.best.unit.text


def test_a_clear_statement_of_the_one_asked_about_is_not_outweighed_by_a_fuller_one_of_another():
    both = ("**[D3:1] Caroline:** I'm taking a class about painting.\n\n"
            "**[D3:2] Melanie:** I'm taking a great class about painting landscapes with watercolors.\n\n"
            "**[D3:3] Caroline:** Cool!")
    analysis, _, verdict, _ = verdict_for("What class about painting landscapes is Caroline taking?", [result(both)])
    # Melanie's sentence covers every term, Caroline's most of them: she says it herself
    assert verdict.ok and verdict.best.unit.speaker == "Caroline", verdict.reason
    rival = max((c for c in analysis.candidates if c.unit.speaker == "Melanie"), key=lambda c: c.support)
    assert rival.support >= verdict.best.support + CONTRAST


def test_a_question_naming_what_no_source_mentions_is_refused():
    _, _, verdict, _ = verdict_for("What is the capital of Australia?",
                                   [result("The capital letters of a heading are kept as written.")])
    assert not verdict.ok and "Australia" in verdict.reason


def test_unrelated_evidence_is_refused_by_its_similarity():
    _, _, verdict, _ = verdict_for("What did Caroline research?", [result(TALK, vector=0.12)], min_cosine=0.3)
    assert not verdict.ok and "0.12" in verdict.reason
    _, _, kept, _ = verdict_for("What did Caroline research?", [result(TALK, vector=0.12)], min_cosine=None)
    assert "similarity" not in (kept.reason or "")


def test_a_sentence_saying_all_of_it_outweighs_a_low_chunk_similarity():
    # a long chunk's embedding can sit far from a short question that one of its turns answers
    _, _, verdict, _ = verdict_for("When did Caroline go to the LGBTQ support group?", [result(TALK, vector=0.12)],
                                   min_cosine=0.3)
    assert verdict.ok and "support group" in verdict.best.unit.text, verdict.reason


def test_the_kind_of_answer_is_required_where_it_is_specific():
    _, _, verdict, _ = verdict_for("How many kids does Melanie have?",
                                   [result("**[D1:1] Melanie:** My kids love the beach.\n\n**[D1:2] Caroline:** "
                                           "Nice!\n\n**[D1:3] Melanie:** They do, the kids swim all day.")])
    assert not verdict.ok, "no number is said"
