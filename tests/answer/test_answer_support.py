"""The parts of an answer that are pure functions: what a question asks for, dates resolved
against the day they were said, which sentence answers, whom it is about, and the preference of
implementation over tests. Evidence here is built by hand (real models, no index), so each rule
is pinned by a case that fails when the rule goes."""

from __future__ import annotations

from datetime import date

import pytest

from chinvex.answer.compose import clause, code_statement, compose
from chinvex.answer.dates import header_date, parse_date, resolve
from chinvex.answer.evidence import build_evidence
from chinvex.answer.generators.extractive import pick
from chinvex.answer.question import analyse_question
from chinvex.answer.roles import role_of, role_weight
from chinvex.answer.support import CONTRAST, analyse, judge, question_names
from chinvex.answer.text import Stemmer, TermWeights
from chinvex.models import Range, Scores, SearchResult


def result(text: str, *, path: str = "notes/talk.md", rank: float = 1.0, vector: float | None = 0.6,
           header: str | None = None, n: int = 0) -> SearchResult:
    source_type = "repo" if path.endswith(".py") else "note"
    return SearchResult(
        rank=n + 1, chunk_id=f"c{n:011d}", doc_id=f"d{n}", context="t", source_type=source_type,
        source_uri=f"/root-of-source/{path}", text=text, range=Range(line_start=1, line_end=text.count("\n") + 1),
        scores=Scores(fts=1.0, vector=vector, rank=rank, blended=rank),
        metadata={"header": header or path, "kind": "code" if path.endswith(".py") else "text",
                  "language": "python" if path.endswith(".py") else "markdown"},
    )


def verdict_for(question: str, results: list[SearchResult], said_on: date | None = None, min_cosine=None):
    evidence = build_evidence(results)
    stemmer = Stemmer()
    analysis, weights = analyse(analyse_question(question), evidence, stemmer, lambda stems: TermWeights.uniform(),
                                (lambda item, unit: said_on) if said_on else None)
    return analysis, weights, judge(analysis, evidence, min_cosine=min_cosine), stemmer


def answered(question: str, talk: str):
    """The composed answer from the best sentence of `talk` (which must answer `question`)."""
    analysis, weights, verdict, stemmer = verdict_for(question, [result(talk)])
    assert verdict.ok, verdict.reason
    return compose([verdict.best], terms=analysis.terms, expects=analysis.question.expects, stemmer=stemmer,
                   weights=weights, said_on=lambda c: None, asked_about=analysis.participants)


TALK = (
    "**[D1:1] Caroline:** Hey Mel! Good to see you!\n\n"
    "**[D1:2] Melanie:** Hey Caroline! I'm swamped with the kids & work.\n\n"
    "**[D1:3] Caroline:** I went to a LGBTQ support group yesterday and it was so powerful.\n\n"
    "**[D1:4] Melanie:** Wow! I ran a charity race for mental health last Saturday, it made me realize "
    "how much self-care matters.\n\n"
    "**[D1:5] Caroline:** That charity race sounds great, Mel!"
)


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


# -- dates ------------------------------------------------------------------------------------


def test_relative_dates_resolve_against_the_day_they_were_said():
    said = date(2023, 5, 8)
    assert resolve("I went to a support group yesterday", said).meaning == "7 May 2023"
    assert resolve("I painted that sunrise last year!", said).meaning == "2022"
    # a weekday is the nearest one before, with its basis: "last Friday" can mean either
    assert resolve("I ran a charity race last Saturday", said).meaning == "6 May 2023 (the Saturday before 8 May 2023)"
    assert resolve("Last Fri I took the kids to a workshop", said).meaning == "5 May 2023 (the Friday before 8 May 2023)"
    assert resolve("We're going camping next month", said).meaning == "June 2023"
    assert resolve("my school event last week", said).meaning == "the week before 8 May 2023"
    assert resolve("I quit three days ago", said).meaning == "5 May 2023"
    assert resolve("nothing happened", said) is None


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
    from chinvex.answer.support import subject_of

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


# -- the thing over talk about it -------------------------------------------------------------


def test_roles_from_paths():
    assert role_of("tests/test_fusion.py") == "test" and role_of("src/app.spec.ts") == "test"
    assert role_of("tests/fixtures/x.json") == "fixture" and role_of("golden_queries/q.json") == "fixture"
    assert role_of("bench/RESULTS.md") == "bench" and role_of("docs/DESIGN.md") == "docs"
    assert role_of("chinvex/eval/metrics.py") == "code" and role_of("pyproject.toml") == "config"
    assert role_weight("tests/test_fusion.py", "repo", about_tests=True) == 1.0
    assert role_weight("tests/test_fusion.py", "note", about_tests=False) == 1.0


IMPLEMENTATION = '''def blend(fts: float, vec: float, weight: float) -> float:
    """Blend min-max normalised lexical and vector scores 0.6/0.4, times the source weight."""
    return (0.6 * fts + 0.4 * vec) * weight
'''
TEST = '''def test_blend_scores_with_source_weight():
    """Blend min-max normalised lexical and vector scores 0.6/0.4 with the source weight."""
    assert blend(1.0, 0.0, 1.0) == 0.6
'''


def test_code_answers_prefer_the_implementation_over_its_test():
    question = "How are lexical and vector scores blended?"
    results = [result(TEST, path="tests/test_fusion.py", rank=1.0, n=0),
               result(IMPLEMENTATION, path="src/fusion.py", rank=0.9, n=1)]
    _, _, verdict, _ = verdict_for(question, results)
    assert verdict.ok and verdict.best.item.relative_path() == "src/fusion.py"
    _, _, about_tests, _ = verdict_for("Which test checks how scores are blended?", results)
    assert about_tests.ok and about_tests.best.item.relative_path() == "tests/test_fusion.py"


REGISTER_DOCS = ("## Codex\n\nTo register the server, add this table to `~/.codex/config.toml`: "
                 "`[mcp_servers.search]` with `command = \"search-mcp\"`.\n")
REGISTER_CODE = ('def register(config_path: str) -> None:\n'
                 '    """Register the MCP server in a Codex config.toml: write its table."""\n'
                 '    write_table(config_path, "mcp_servers.search")\n')


def test_a_how_to_question_prefers_the_docs_and_a_how_does_question_the_code():
    results = [result(REGISTER_CODE, path="src/register.py", rank=1.0, n=0),
               result(REGISTER_DOCS, path="README.md", rank=1.0, n=1)]
    _, _, how_to, _ = verdict_for("How do I register the MCP server in Codex's config.toml?", results)
    assert how_to.ok and how_to.best.item.relative_path() == "README.md", how_to.reason
    _, _, how_does, _ = verdict_for("How does the MCP server get registered in Codex's config.toml?", results)
    assert how_does.ok and how_does.best.item.relative_path() == "src/register.py", how_does.reason


def test_a_name_holding_the_question_words_is_not_a_statement():
    code = "def test_seed_4_meaning_of_life_is_refused(ctx):\n    assert run(ctx) == 1\n"
    _, _, verdict, _ = verdict_for("What is the meaning of life?", [result(code, path="tests/test_answer.py")])
    assert not verdict.ok


def test_one_word_of_a_short_question_does_not_answer_it():
    """A sentence that says "life" (and names `test_meaning_of_life_is_refused`) covers half of
    "What is the meaning of life?" by share, but says nothing about the meaning of life."""
    doc = ('def words_only(text):\n'
           '    """Identifiers are names, not statements: `test_meaning_of_life_is_refused` says '
           'nothing of life."""\n    return strip(text)\n')
    _, _, verdict, _ = verdict_for("What is the meaning of life?", [result(doc, path="src/words.py")])
    assert not verdict.ok
    note = "# Life\n\nThe cat slept all afternoon; that is life here.\n"
    _, _, verdict, _ = verdict_for("What is the meaning of life?", [result(note)])
    assert not verdict.ok
    note = "# Philosophy\n\nFor the Stoics the meaning of life was to live in agreement with nature.\n"
    _, _, verdict, _ = verdict_for("What is the meaning of life?", [result(note)])
    assert verdict.ok, verdict.reason


def test_the_definition_a_question_names_answers_it():
    code = ('def chunk_id(doc_id: str, index: int, text: str) -> str:\n'
            '    """First 12 hex digits of sha256 over the document id, the index and the text."""\n'
            '    return sha256(f"{doc_id}:{index}:{text}")[:12]\n')
    analysis, weights, verdict, stemmer = verdict_for("How are chunk ids computed?", [result(code, path="src/ids.py")])
    assert verdict.ok, verdict.reason
    text = compose([verdict.best], terms=analysis.terms, expects="manner", stemmer=stemmer, weights=weights,
                   said_on=lambda c: None).text
    # named, and located by the whole definition (its body is part of what it is)
    assert text.startswith("`chunk_id` in `src/ids.py:1-3`: First 12 hex digits of sha256") and "[chunk:" in text


# -- trimming ---------------------------------------------------------------------------------


def test_clause_keeps_the_part_that_answers():
    stemmer = Stemmer()
    terms = stemmer.stems("research")
    text = "Researching adoption agencies — it's been a dream to have a family and give a loving home to kids."
    assert clause(text, terms, "thing", stemmer, TermWeights.uniform()) == "Researching adoption agencies"
    assert clause("Yeah, I painted that lake sunrise last year!", stemmer.stems("paint sunrise"), "date",
                  stemmer, TermWeights.uniform()) == "I painted that lake sunrise last year!"


def test_clause_is_never_cut_at_a_plain_and():
    """"and" joins the parts of one thought as often as two thoughts ("counseling and support
    groups"); cutting there left fragments such as "I saw how counseling" as answers."""
    stemmer = Stemmer()
    text = "I saw how counseling and support groups improved my life, so I want to give back."
    kept = clause(text, stemmer.stems("counseling"), "thing", stemmer, TermWeights.uniform())
    assert kept == "I saw how counseling and support groups improved my life"


def test_code_statement_prefers_the_sentence_that_answers_over_a_summary_line():
    stemmer = Stemmer()
    code = ('"""How hybrid retrieval combines the scores of its two legs.\n\nThe lexical and vector scores are\n'
            'min-max normalised and blended 0.6/0.4. Pure functions."""\n')
    said = code_statement(code, stemmer.stems("hybrid retrieval combine scores"), stemmer, TermWeights.uniform())
    assert said == ("How hybrid retrieval combines the scores of its two legs. The lexical and vector scores "
                    "are min-max normalised and blended 0.6/0.4.")


def test_a_definition_is_judged_with_its_body():
    """The docstring names the job; the body's comments and names say how it is done."""
    head = ('def sniff(sample: bytes) -> bool:\n'
            '    """Classify the first bytes of a file."""\n')
    body = ('    if sample.startswith(PNG_MAGIC):  # magic bytes of a binary image format\n'
            '        return True\n'
            '    return count_invalid_utf8(sample) > 0\n')
    question = "decide whether a file is binary from its magic bytes"
    _, _, verdict, _ = verdict_for(question, [result(head + "\n\ndef other():\n    pass\n", path="src/sniff.py")])
    assert not verdict.ok
    analysis, weights, verdict, stemmer = verdict_for(question, [result(head + body, path="src/sniff.py")])
    assert verdict.ok, verdict.reason
    text = compose([verdict.best], terms=analysis.terms, expects="thing", stemmer=stemmer, weights=weights,
                   said_on=lambda c: None).text
    assert text.startswith("`sniff` in `src/sniff.py:1-5`: Classify the first bytes of a file."), text


def test_a_definition_unit_spans_its_body_and_the_body_lines_stay_units():
    from chinvex.answer.units import split_units

    code = ('class Store:\n'
            '    """Where chunks live."""\n'
            '\n'
            '    def put(self, chunk):\n'
            '        self.rows.append(chunk)  # kept in order\n'
            '\n'
            'LIMIT = 3\n')
    units = split_units(code, chunk=0, kind="code")
    store = units[0]
    assert store.text == 'class Store:\n    """Where chunks live."""'
    assert (store.line_start, store.line_end) == (1, 5) and "kept in order" in store.extent
    put = next(u for u in units if u.text.startswith("def put"))
    assert (put.line_start, put.line_end) == (4, 5)
    assert any(u.text.startswith("self.rows.append") for u in units)
    assert units[-1].text == "LIMIT = 3" and units[-1].extent == ""


def test_a_question_asking_for_a_name_is_answered_by_the_sentence_that_gives_it():
    """Names in a sentence are usually not statements (a test named after a question says
    nothing), but when the question asks which variable, they are the answer."""
    doc = ("## Folders\n\nThe contexts and indexes folders live under the data folder by default.\n\n"
           "`CHINVEX_CONTEXTS_ROOT` and `CHINVEX_INDEXES_ROOT` move either root.\n")
    analysis, weights, verdict, stemmer = verdict_for(
        "Which environment variables move the contexts and indexes folders?", [result(doc, path="README.md")])
    assert verdict.ok and "CHINVEX_CONTEXTS_ROOT" in verdict.best.unit.text, verdict.best.unit.text
    assert verdict.best.said == 4  # move; contexts and indexes, which its names give; folders, from its heading
    from chinvex.answer.answer_types import holds

    assert holds("name", "set `--k` to 20") and holds("name", "see chinvex/retrieval/fusion.py")
    assert not holds("name", "The contexts folder lives under the data folder.")


def test_a_sentence_introducing_a_block_is_answered_with_the_block():
    """"add this to config.toml:" says where; the block after it is what to add."""
    doc = ("## Codex\n\nTo register the server with Codex, add to `~/.codex/config.toml`:\n\n"
           "```toml\n[mcp_servers.chinvex]\ncommand = \"chinvex\"\n```\n\nRestart Codex afterwards.\n")
    analysis, weights, verdict, stemmer = verdict_for("How do I register the server with Codex?",
                                                      [result(doc, path="README.md")])
    assert verdict.ok, verdict.reason
    text = compose([verdict.best], terms=analysis.terms, expects=analysis.question.expects, stemmer=stemmer,
                   weights=weights, said_on=lambda c: None).text
    assert text.endswith('```toml\n[mcp_servers.chinvex]\ncommand = "chinvex"\n```'), text
    assert "Restart" not in text
    # a block no sentence introduces is not attached to the sentence before it
    plain = doc.replace("`~/.codex/config.toml`:", "`~/.codex/config.toml`.")
    analysis, weights, verdict, stemmer = verdict_for("How do I register the server with Codex?",
                                                      [result(plain, path="README.md")])
    text = compose([verdict.best], terms=analysis.terms, expects=analysis.question.expects, stemmer=stemmer,
                   weights=weights, said_on=lambda c: None).text
    assert "```" not in text, text


def test_a_sql_schema_statement_says_what_it_defines():
    """`CREATE TRIGGER chunks_ad AFTER DELETE ON chunks` is declarative: its header reads as
    what it does, and its name is the definition's."""
    sql = ("CREATE TABLE IF NOT EXISTS chunks (\n    id INTEGER PRIMARY KEY,\n    text TEXT\n);\n"
           "CREATE TRIGGER IF NOT EXISTS chunks_ad AFTER DELETE ON chunks BEGIN\n"
           "    INSERT INTO chunks_fts(chunks_fts, rowid, text) VALUES ('delete', old.id, old.text);\nEND;\n")
    found = result(sql, path="db/schema.py")
    found = found.model_copy(update={"source_uri": "/root-of-source/db/schema.sql",
                                     "metadata": {**found.metadata, "language": "sql"}})
    analysis, weights, verdict, stemmer = verdict_for("trigger that updates chunks_fts after a delete", [found])
    assert verdict.ok, verdict.reason
    text = compose([verdict.best], terms=analysis.terms, expects=analysis.question.expects, stemmer=stemmer,
                   weights=weights, said_on=lambda c: None).text
    assert text.startswith("`chunks_ad` in `db/schema.sql:5-6`"), text


def test_a_refusal_never_reads_as_covering_what_it_needs():
    from chinvex.answer.support import _percent_below

    assert _percent_below(0.3499) == "34%" and _percent_below(0.35) == "35%" and _percent_below(0.0) == "0%"


def test_a_question_for_a_book_or_song_wants_a_title():
    asked = analyse_question("What book is Jon currently reading?")
    assert (asked.expects, asked.kind_noun) == ("title", "book")
    assert analyse_question("Which song motivates Caroline?").expects == "title"
    assert analyse_question("What dish did she cook?").expects == "thing"
    from chinvex.answer.answer_types import holds

    assert holds("title", 'I\'m currently reading "The Lean Startup" for tips.')
    assert holds("title", "I'm reading The Lean Startup right now.")
    assert not holds("title", "This book I read last year reminds me to pursue my dreams.")


READING = ("**[D2:1] Gina:** This book I read last year reminds me to always pursue my dreams!\n\n"
           "**[D2:2] Jon:** I'm currently reading \"The Lean Startup\" and hoping it'll give me tips.\n\n"
           "**[D2:3] Gina:** Nice, tell me how it goes!")


def test_a_title_names_the_kind_of_thing_asked_for():
    # Jon's sentence never says "book", yet names one; Gina's says "book" and names none
    _, _, verdict, _ = verdict_for("What book is Jon currently reading?", [result(READING)])
    assert verdict.ok and verdict.best.unit.speaker == "Jon", verdict.reason
    _, _, other, _ = verdict_for("What book is Gina currently reading?", [result(READING)])
    assert not other.ok


def test_a_title_answer_is_the_title_and_its_citation_quotes_the_words():
    composed = answered("What book is Jon currently reading?", READING)
    assert composed.text == "“The Lean Startup” [chunk:c00000000000]"
    assert composed.quotes["c00000000000"].startswith("Jon: “I'm currently reading \"The Lean Startup\"")


def test_a_title_answer_may_come_from_the_sentence_before():
    talk = ("**[D5:1] Melanie:** Which song do you love?\n\n"
            "**[D5:2] Caroline:** \"Brave\" by Sara Bareilles has a lot of significance for me. "
            "It's about being courageous and fighting for what's right.\n\n"
            "**[D5:3] Melanie:** Love it!")
    composed = answered("Which song motivates Caroline to be courageous?", talk)
    assert composed.text == "“Brave” [chunk:c00000000000]", composed.text


def test_a_where_answer_may_be_a_spot_not_a_named_place():
    from chinvex.answer.answer_types import holds

    assert holds("place", "He hid his bone in my slipper once!")
    assert holds("place", "The keys were under the sofa.")
    # time and abstractions after "in my/the" are not places
    assert not holds("place", "It was the best moment in my life.")
    assert not holds("place", "We talked in the morning.")


def test_a_caption_is_shown_without_the_bracket_its_clause_was_cut_from():
    talk = ("**[D7:1] Caroline:** How was the weekend?\n\n"
            "**[D7:2] Melanie:** Great! [shares an image: a photo of a painting of a sunset over a lake]\n\n"
            "**[D7:3] Caroline:** Wow!")
    composed = answered("What did Melanie paint over the lake?", talk)
    assert "sunset over a lake" in composed.text and "]" not in composed.text.split("[chunk:")[0], composed.text
