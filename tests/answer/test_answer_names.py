"""A name the question uses is found in a sentence that says it, however the name is spelled:
the question's words are read with the parts of a camel-cased name ("YouTube" -> "you tube
youtube"), a sentence's words as they stand, and the check must not demand the parts."""

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
