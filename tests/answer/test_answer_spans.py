"""The asked span (issue 39 items 3 and 4): a count, a measure, a place, a name, a date, "Yes"
or "No" instead of the whole sentence, which rides with the citation as its quote; text that is
not a statement (tool-call arguments, patches, listings, usage lines, checklists) answers only
questions about it; sentences and clauses are never cut inside a time, a version, a URL, a path
or a number. Real sentences, real stemmer (SQLite FTS5), evidence built by hand (support_cases)."""

from __future__ import annotations

from datetime import date

from support_cases import composed_answer, result, verdict_for

from chinvex.answer.compose import clause
from chinvex.answer.generators.extractive import statements_only
from chinvex.answer.question import analyse_question
from chinvex.answer.statements import forms_asked
from chinvex.answer.text import Stemmer, TermWeights
from chinvex.answer.units import form_of, sentences

OUTAGE = ("# Incident notes\n\nDate: 4 March 2024\n\n"
          "The payments outage on 3 March 2024 lasted 47 minutes (14:02 to 14:49 UTC). "
          "Card payments failed at around 8:00 the next morning too, for a few minutes.\n\n"
          "- [ ] Write the payments outage postmortem and say how long it lasted\n")


# -- never cut inside a time, a version, a URL, a path or a number -----------------------------


def test_a_clause_is_never_cut_inside_a_time():
    stemmer = Stemmer()
    text = "The payments outage lasted 47 minutes (14:02 to 14:49 UTC), and then it recovered."
    kept = clause(text, stemmer.stems("payments outage last"), "duration", stemmer, TermWeights.uniform())
    assert kept == "The payments outage lasted 47 minutes (14:02 to 14:49 UTC)"
    kept = clause("We met at around 8:00 every morning; it was early.", stemmer.stems("met morning"), "thing",
                  stemmer, TermWeights.uniform())
    assert kept == "We met at around 8:00 every morning"
    kept = clause("The maintenance window ran 14:02–14:49 — then traffic resumed.", stemmer.stems("maintenance"),
                  "thing", stemmer, TermWeights.uniform())
    assert kept == "The maintenance window ran 14:02–14:49"


def test_a_clause_is_never_cut_inside_a_url_a_path_a_version_or_a_number():
    stemmer = Stemmer()
    weights = TermWeights.uniform()
    kept = clause("The docs live at https://example.org/chinvex/answer: read them first.",
                  stemmer.stems("docs live"), "thing", stemmer, weights)
    assert kept == "The docs live at https://example.org/chinvex/answer"
    kept = clause(r"Install it under C:\Tools\chinvex, then restart.", stemmer.stems("install"), "thing",
                  stemmer, weights)
    assert kept == r"Install it under C:\Tools\chinvex"
    kept = clause("Version 1.2.3 costs 1,250.50 dollars per seat; cheaper than before.",
                  stemmer.stems("version cost seat"), "thing", stemmer, weights)
    assert kept == "Version 1.2.3 costs 1,250.50 dollars per seat"


def test_sentences_are_not_cut_after_an_abbreviation_or_before_a_numbered_reference():
    assert sentences("It took approx. 47 minutes. Then it was fine.") == [
        "It took approx. 47 minutes.", "Then it was fine."]
    assert sentences("Ask Dr. Smith about v. 2.0.1 first. See No. 5 and e.g. Python 3.12 docs.") == [
        "Ask Dr. Smith about v. 2.0.1 first.", "See No. 5 and e.g. Python 3.12 docs."]
    assert sentences("I said no. It was fine.") == ["I said no.", "It was fine."]


# -- the asked span -----------------------------------------------------------------------------


def test_how_long_is_the_measure_with_its_times_and_the_sentence_is_the_quote():
    composed = composed_answer("How long did the payments outage last?", [result(OUTAGE)])
    assert composed.text == "47 minutes (14:02 to 14:49 UTC) [chunk:c00000000000]", composed.text
    assert composed.quotes["c00000000000"].startswith("“The payments outage on 3 March 2024 lasted 47 minutes")


def test_a_question_asking_two_things_gets_both():
    composed = composed_answer("When was the payments outage and how long did it last?", [result(OUTAGE)],
                         said_on=date(2024, 3, 4))
    assert composed.text == ("3 March 2024 [chunk:c00000000000]\n\n"
                             "How long: 47 minutes (14:02 to 14:49 UTC) [chunk:c00000000000]"), composed.text


def test_a_question_asking_two_things_says_which_part_is_not_stated():
    notes = "Date: 4 March 2024\n\nThe payments outage on 3 March 2024 hit card payments in every region.\n"
    composed = composed_answer("When was the payments outage and how long did it last?", [result(notes)],
                         said_on=date(2024, 3, 4))
    first, second = composed.text.split("\n\n")
    assert first == "3 March 2024 [chunk:c00000000000]"
    assert second == "How long: not stated in the retrieved sources."


TURTLES = ("**[D3:1] Joanna:** How are your pets doing?\n\n"
           "**[D3:2] Nate:** Great! I have three turtles now, they sit on a rock in the pond all day.\n\n"
           "**[D3:3] Joanna:** Aww, cute!\n\n"
           "**[D3:4] Nate:** Oliver the dog hid his bone in my slipper once!\n\n"
           "**[D3:5] Joanna:** I moved here from Sweden four years ago, and I take my pup to the park twice a week.\n\n"
           "**[D3:6] Nate:** My cousin Matt Patterson played at the party.")


def test_how_many_is_the_count_of_the_thing_asked_for():
    assert answered("How many turtles does Nate have?", TURTLES).text == "three [chunk:c00000000000]"


def test_where_is_the_place_said_of_the_speaker_in_the_third_person():
    assert answered("Where did Oliver hide his bone?", TURTLES).text == "Nate's slipper [chunk:c00000000000]"
    assert answered("Where did Joanna move from?", TURTLES).text == "Sweden [chunk:c00000000000]"


def test_how_often_is_the_rate_and_who_is_the_name():
    assert answered("How often does Joanna take her pup to the park?", TURTLES).text == \
        "twice a week [chunk:c00000000000]"
    assert answered("Who played at Nate's party?", TURTLES).text == "Matt Patterson [chunk:c00000000000]"


def test_a_yes_no_question_is_answered_yes_or_no_with_the_supporting_sentence_quoted():
    talk = ("**[D4:1] Jon:** Did you ever dance competitively?\n\n"
            "**[D4:2] Gina:** I used to compete in a few dance competitions and shows.\n\n"
            "**[D4:3] Jon:** I have never been to a dance competition myself.")
    composed = answered("Did Gina compete in dance competitions?", talk)
    assert composed.text == "Yes [chunk:c00000000000]"
    assert composed.quotes["c00000000000"] == "Gina: “I used to compete in a few dance competitions and shows.”"
    composed = answered("Has Jon been to a dance competition?", talk)
    assert composed.text == "No [chunk:c00000000000]", composed.text


def answered(question: str, talk: str):
    return composed_answer(question, [result(talk)])


def _session(n: int, day: str, turns: str) -> str:
    return f"# session {n}\n\nDate: {day}\n\n{turns}"


def test_what_activities_gathers_a_comma_separated_list_each_part_cited():
    sessions = [
        _session(1, "8 May 2023", "**[D1:1] Caroline:** What did you do this weekend?\n\n"
                 "**[D1:2] Melanie:** My family and I went camping at the beach, such fun!\n\n"
                 "**[D1:3] Caroline:** Nice!"),
        _session(2, "9 June 2023", "**[D2:1] Caroline:** How are the kids?\n\n"
                 "**[D2:2] Melanie:** Great, my family and I did pottery together on Sunday.\n\n"
                 "**[D2:3] Caroline:** Lovely!"),
        _session(3, "1 July 2023", "**[D3:1] Caroline:** Any news?\n\n"
                 "**[D3:2] Melanie:** My family went hiking in the mountains last week.\n\n"
                 "**[D3:3] Caroline:** Wow!"),
    ]
    results = [result(text, n=i, path=f"notes/session_{i}.md") for i, text in enumerate(sessions)]
    assert analyse_question("What activities has Melanie done with her family?").many
    composed = composed_answer("What activities has Melanie done with her family?", results)
    assert "\n" not in composed.text, composed.text
    parts = composed.text.split(", ")
    assert len(parts) == 3 and all("[chunk:c" in p for p in parts), composed.text
    text = composed.text.lower()
    assert "camping" in text and "pottery" in text and "hiking" in text
    assert len(composed.quotes) == 3


# -- text that is not a statement ---------------------------------------------------------------


def test_forms_of_text_that_is_not_a_statement():
    assert form_of("- [ ] Write the payments outage postmortem") == "checklist"
    assert form_of("@@ -1,3 +1,4 @@") == "patch" and form_of("+ return x", "diff") == "patch"
    assert form_of("src/chinvex/answer/compose.py") == "listing" and form_of("├── compose.py") == "listing"
    assert form_of("usage: chinvex answer [-h] QUERY") == "usage"
    assert form_of("$ chinvex ingest --context notes") == "usage"
    assert form_of('input: {"file_path": "/srv/app/team.md", "old_string": "CEO: Jane"}') == "tool call"
    for statement in ("The payments outage lasted 47 minutes.", "Version 2.0 shipped.", "Thanks!",
                      "It cost $5 in the end."):
        assert form_of(statement) == "", statement


def test_a_checklist_line_does_not_answer_a_question_about_what_happened():
    composed = composed_answer("How long did the payments outage last?", [result(OUTAGE)])
    assert "postmortem" not in composed.text
    analysis, _, verdict, stemmer = verdict_for("What is left on the payments outage checklist?", [result(OUTAGE)])
    # a user's request is asked about by every question but how and why
    assert forms_asked(analysis.terms, stemmer) == {"checklist", "request"}
    assert forms_asked(analysis.terms, stemmer, "reason") == {"checklist"}
    assert any("postmortem" in c.unit.text for c in statements_only(verdict.ranked, {"checklist"}))
    assert not any("postmortem" in c.unit.text for c in statements_only(verdict.ranked, frozenset()))


SESSION = ("[Turn 1 of 3] user:\nFix the typo in the team page.\n\n"
           "[Turn 2 of 3] assistant (Edit):\n"
           'input: {"file_path": "/srv/app/team.md", "new_string": "The CEO of Acme is Jane Roe.", '
           '"old_string": "The CEO of Acme is Jane Rpe."}\n\n'
           "[Turn 3 of 3] assistant:\nFixed the typo in the team page.")


def test_a_tool_call_is_not_an_answer_unless_the_question_is_about_it():
    analysis, _, verdict, stemmer = verdict_for("Who is the CEO of Acme?", [result(SESSION)])
    stated = statements_only(verdict.ranked, forms_asked(analysis.terms, stemmer))
    assert not verdict.ok or not stated, [c.unit.text for c in stated]
    analysis, _, verdict, stemmer = verdict_for("What did the edit of the team page change about the CEO of Acme?",
                                                [result(SESSION)])
    assert verdict.ok, verdict.reason
    assert statements_only(verdict.ranked, forms_asked(analysis.terms, stemmer))


def test_a_date_the_words_state_comes_before_the_day_they_were_said():
    """"By 16 June 2023" says only that the words were said by then; a sentence saying when
    ("yesterday") gives the date asked for, whichever of the two ranks first."""
    from chinvex.answer.compose import asked_span

    sessions = [_session(1, "16 June 2023", "**[D1:1] Jon:** How is business?\n\n"
                         "**[D1:2] Gina:** My online clothing store is doing great.\n\n**[D1:3] Jon:** Nice!"),
                _session(2, "16 March 2023", "**[D2:1] Jon:** News?\n\n"
                         "**[D2:2] Gina:** I opened my online clothing store yesterday!\n\n**[D2:3] Jon:** Wow!")]
    results = [result(text, n=i, path=f"notes/session_{i}.md") for i, text in enumerate(sessions)]
    days = {"c00000000000": date(2023, 6, 16), "c00000000001": date(2023, 3, 16)}
    analysis, _, verdict, stemmer = verdict_for("When did Gina open her online clothing store?", results)
    by_chunk = {}
    for candidate in analysis.candidates:
        if candidate.unit.speaker == "Gina":
            by_chunk.setdefault(candidate.item.chunk_id, candidate)
    chosen = [by_chunk["c00000000000"], by_chunk["c00000000001"]]
    composed = asked_span(chosen, analysis.question, analysis.terms, stemmer,
                          lambda c: days[c.item.chunk_id], analysis.participants)
    assert composed.text == "15 March 2023 [chunk:c00000000001]\n\nBy 16 June 2023 [chunk:c00000000000]", composed.text


def test_the_gate_itself_refuses_a_tool_call_as_the_answer_whatever_the_generator():
    """An LLM that quotes the Edit's `new_string` gets no further than the extractive generator:
    the gate (support.judge) does not let a tool call answer a question that is not about one."""
    analysis, _, verdict, _ = verdict_for("Who is the CEO of Acme?", [result(SESSION)])
    assert analysis.forms == {"request"}  # of the forms, only a user's request answers "who"
    assert not verdict.ok or all(c.unit.form in ("", "request") for c in verdict.ranked), \
        [c.unit.text for c in verdict.ranked]
    assert not (verdict.best is not None and verdict.ok and verdict.best.unit.form == "tool call")


def test_a_command_synopsis_opening_a_sentence_is_usage():
    """DESIGN.md's "`chinvex pack TASK [--budget-tokens N]` searches (hybrid…" says what the
    command takes; it answered "How does hybrid retrieval combine scores?" in the demo."""
    from chinvex.answer.prose_units import prose_units

    text = ("### Context packs\n\n`chinvex pack TASK [--budget-tokens N (2,000)] [--diversity D]` searches\n"
            "(hybrid, k = 3 × N / 130) and packs the hits.\n\nHybrid search blends both legs.\n")
    forms = {u.text.split()[0]: u.form for u in prose_units(text, 0)}
    assert forms["`chinvex"] == "usage" and forms["Hybrid"] == ""
    assert form_of("- `git log [--oneline]` lists commits") == "usage" and form_of("`chinvex search` blends") == ""
