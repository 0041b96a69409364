"""The names a question uses, read as a person would: a name is found in a sentence that says
it however it is spelled there (the question's words are read with the parts of a camel-cased
name, "YouTube" -> "you tube youtube", a sentence's words as they stand, and the check must not
demand the parts), and a participant asked about with one letter wrong is still that participant."""

from __future__ import annotations

from support_cases import result, verdict_for

TALK = (
    "**[D9:1] Joanna:** Are you working on anything new these days?\n\n"
    "**[D9:2] Nate:** Yeah actually - creating gaming content for YouTube.\n\n"
    "**[D9:3] Joanna:** That sounds like a lot of fun, good luck with it!"
)


def test_a_camel_cased_name_is_found_in_the_sentence_that_says_it():
    analysis, _, verdict, stemmer = verdict_for("What new content is Nate creating for YouTube?", [result(TALK)])
    stemmer.close()
    assert analysis.names == ("YouTube",)
    saying = [c for c in analysis.candidates if "YouTube" in c.unit.text]
    assert saying and all(c.names for c in saying)
    assert verdict.best is not None and "YouTube" in verdict.best.unit.text


def test_a_name_no_sentence_says_is_still_missing():
    analysis, _, verdict, stemmer = verdict_for("What new content is Nate creating for TikTok?", [result(TALK)])
    stemmer.close()
    assert not any(c.names for c in analysis.candidates)
    assert not verdict.ok and "TikTok" in (verdict.reason or "")


def test_a_participant_misspelt_by_one_letter_is_still_the_one_asked_about():
    from chinvex.answer.attribution import asked_person

    assert asked_person("Andew", "andrew") and asked_person("Deboran", "deborah")
    assert asked_person("Caroline", "carolien")  # two letters swapped
    assert not asked_person("Jon", "john")  # short names differ by one letter and are other people
    assert not asked_person("James", "jane") and not asked_person("Andrew", "audrey")
    talk = ("**[D2:1] Andrew:** I took my dogs on a long hike at Fox Hollow last weekend.\n\n"
            "**[D2:2] Audrey:** That sounds lovely, how did they like it?\n\n"
            "**[D2:3] Andrew:** They loved every minute of it!")
    analysis, _, verdict, stemmer = verdict_for("Where did Andew hike with his dogs?", [result(talk)])
    stemmer.close()
    assert analysis.participants == frozenset({"andrew"}) and analysis.names == ()
    assert verdict.best is not None and "Fox Hollow" in verdict.best.unit.text
