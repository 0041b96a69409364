"""Answers over documentation prose and docstrings (bench/prose_answers.py measures them on the
requests library's docs): a name the whole context says everywhere need not be repeated by the
sentence that answers, and a docstring's reST fields are statements of their own. Evidence is
built by hand (support_cases) with real stemming and, where it matters, document frequencies."""

from __future__ import annotations

from support_cases import composed_answer, result

from chinvex.answer.compose import code_statement
from chinvex.answer.evidence import build_evidence
from chinvex.answer.question import analyse_question
from chinvex.answer.support import COMMON_NAME_SHARE, analyse, judge
from chinvex.answer.text import Stemmer, TermWeights

REDIRECTS = ("## Redirection and History\n\n"
             "By default Requests will perform location redirection for all verbs except HEAD.\n\n"
             "We can use the history property of the Response object to track redirection.\n")
QUESTION = "For which HTTP verb does Requests not follow redirects by default?"


def _verdict(question: str, text: str, df: dict[str, int], total: int):
    evidence = build_evidence([result(text, path="docs/user/quickstart.md")])
    stemmer = Stemmer()
    try:
        analysis, _ = analyse(analyse_question(question), evidence, stemmer, lambda stems: TermWeights(df, total))
        return judge(analysis, evidence)
    finally:
        stemmer.close()


def test_a_name_said_all_over_the_context_need_not_be_in_the_answering_sentence():
    verdict = _verdict(QUESTION, REDIRECTS, {"http": 600, "request": 700}, 1000)
    assert verdict.ok, verdict.reason
    assert "except HEAD" in verdict.best.unit.text


def test_a_rare_name_must_still_be_there():
    """The same passage, in a context where "HTTP" is in few chunks: the sentence does not say
    it, so it does not answer (the name tells which passage is meant)."""
    rare = int(1000 * COMMON_NAME_SHARE) - 1
    verdict = _verdict(QUESTION, REDIRECTS, {"http": rare, "request": 700}, 1000)
    assert not (verdict.ok and "except HEAD" in verdict.best.unit.text)


def test_a_docstring_field_is_a_statement_of_its_own():
    stemmer = Stemmer()
    code = ('def get(url, params=None, **kwargs):\n'
            '    r"""Sends a GET request.\n\n'
            '    :param url: URL for the new :class:`Request` object.\n'
            '    :param params: (optional) Dictionary, list of tuples or bytes to send\n'
            '        in the query string for the :class:`Request`.\n'
            '    :return: :class:`Response <Response>` object\n'
            '    :rtype: requests.Response\n'
            '    """\n')
    try:
        terms = stemmer.stems("keyword argument passes query string parameters")
        said = code_statement(code, terms, stemmer, TermWeights.uniform())
    finally:
        stemmer.close()
    assert said.startswith(":param params: (optional) Dictionary, list of tuples or bytes to send in the query string")
    assert ":param url" not in said and "Sends a GET request" not in said


def test_a_clause_is_not_cut_inside_braces_or_a_code_span():
    from chinvex.answer.compose import _top_level_parts

    text = ("`embedding` {provider builtin|ollama, model, host}, `codex_appserver` {mode auto|on|off, command}, "
            "and the `answer` section")
    parts = _top_level_parts(text)
    assert "`embedding` {provider builtin|ollama, model, host}" in parts
    assert not any(p.endswith("ollama") for p in parts)
    assert _top_level_parts("shown as `[1], [2]` in the output, then the sources") == [
        "shown as `[1], [2]` in the output", "then the sources"]


def test_a_phrase_never_cuts_a_code_span_in_two():
    from chinvex.answer.compose import _whole

    clause = "Without `--context` (`chinvex/context/default.py`, shared by the CLI and the MCP server)"
    assert _whole("/default", clause) is None
    assert _whole("`", "`context` is optional on every tool") is None
    assert _whole("citations shown as `", "the answer with its citations shown as `[1]`") is None
    assert _whole("carries `quote`", "Every citation carries `quote`") == "carries `quote`"


def test_a_what_question_over_prose_is_answered_by_the_clause_not_a_phrase_of_it():
    """Phrases are read off around the question's words in chat ("a fashion internship"); in
    documentation the clause is the statement: "keep both busy" read off "On two cores the
    built-in models already keep both busy" answers nothing."""

    text = "## Embedding\n\nOn two cores the built-in embedding models already keep both busy.\n"
    composed = composed_answer("Which embedding model is built in?", [result(text, path="docs/guide.md")])
    assert "On two cores the built-in embedding models" in composed.text, composed.text
