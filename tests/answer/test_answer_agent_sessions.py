"""Answers over agent sessions: what a tool returned is not what anyone said. In real Codex and
Claude Code sessions most turns are tool results (a command's output, a file printed by `sed`),
and a log line or a transcript the agent read answered "What are the action items?" over the
assistant's own summary of them. A tool's result answers only questions about output, and a line
inside it that looks like "Name: text" is not a speaker. A user's request ("Add jitter to the
backoff") says what was wanted: it answers "What did I ask…?", not how or why it was done."""

from __future__ import annotations

from support_cases import result, verdict_for

from chinvex.answer.dialogue_units import dialogue_turns, dialogue_units

SESSION = """[Turn 3 of 5] user:
Summarise the meeting transcript for me.

[Turn 4 of 5] tool (exec_command):
00:49:04 <v Peter>No, the action items are for next week, I will draft the budget.
Result: the budget draft is due Friday.

[Turn 5 of 5] assistant:
The action items are that Dana drafts the governance demo and Peter reviews the budget.
"""


def test_only_turn_markers_start_a_turn_in_a_rendered_conversation():
    turns = dialogue_turns(SESSION)
    assert [t.name for t in turns] == ["user", "tool (exec_command)", "assistant"]
    assert "Result: the budget draft is due Friday." in turns[1].body


def test_a_tools_result_is_output_not_a_statement():
    units = dialogue_units(dialogue_turns(SESSION), chunk=0)
    forms = {u.speaker: u.form for u in units}
    assert forms["tool (exec_command)"] == "tool output"
    assert forms["assistant"] == "" and forms["user"] == "request"


def test_the_assistants_summary_answers_not_the_transcript_it_read():
    _, _, verdict, _ = verdict_for("What are the action items?", [result(SESSION, path="sessions/s.jsonl")])
    assert verdict.ok, verdict.reason
    assert verdict.best.unit.speaker == "assistant"
    assert all(c.unit.form != "tool output" for c in verdict.pool)


def test_a_question_about_output_is_answered_by_it():
    _, _, verdict, _ = verdict_for("What did the command output say about the budget draft?",
                                   [result(SESSION, path="sessions/s.jsonl")])
    assert any(c.unit.form == "tool output" for c in verdict.pool)


JITTER = """[Turn 1 of 4] user:
Retries from many clients line up; add jitter to the backoff.

[Turn 2 of 4] assistant:
Adding jitter so that clients retrying together spread out.

[Turn 3 of 4] tool (apply_patch):
Tool: apply_patch

[Turn 4 of 4] assistant:
with_backoff now adds up to half the delay as random jitter.
"""


def test_a_request_says_what_was_wanted_not_how_or_why_it_was_done():
    """"Add jitter to the backoff" echoes "How did we add jitter to the backoff?" better than the
    assistant's account of the change: a user's request answers neither how nor why."""
    evidence = [result(JITTER, path="sessions/jitter.jsonl")]
    _, _, how, _ = verdict_for("How did we add jitter to the backoff?", evidence)
    assert how.ok, how.reason
    assert how.best.unit.text == "with_backoff now adds up to half the delay as random jitter."
    _, _, why, _ = verdict_for("Why did we add jitter to the retries?", evidence)
    assert why.ok, why.reason
    assert why.best.unit.speaker == "assistant"
    # what was asked for is the request
    _, _, asked, _ = verdict_for("What did I ask for about the backoff?", evidence)
    assert asked.ok, asked.reason
    assert asked.best.unit.speaker == "user"


def test_which_sentences_of_a_user_turn_are_requests():
    turns = dialogue_turns("[Turn 1 of 2] user:\nCan you fix the login bug? We use Postgres 15. "
                           "Please add a test.\n\n[Turn 2 of 2] assistant:\nAdd the test first, then fix it.\n")
    forms = [(u.speaker, u.text, u.form) for u in dialogue_units(turns, chunk=0)]
    assert forms == [("user", "Can you fix the login bug?", "request"), ("user", "We use Postgres 15.", ""),
                     ("user", "Please add a test.", "request"),
                     ("assistant", "Add the test first, then fix it.", "")]
