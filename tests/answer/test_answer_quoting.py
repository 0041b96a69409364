"""The parts of an answer that are pure functions, second half: the thing itself over talk
about it (implementation over its tests, docs for how-to, a definition named for what is asked),
and what an answer quotes (clauses, code statements, titles, captions). Evidence is built by
hand (support_cases)."""

from __future__ import annotations

from support_cases import answered, result, verdict_for

from chinvex.answer.compose import clause, code_statement, compose
from chinvex.answer.question import analyse_question
from chinvex.answer.roles import role_of, role_weight
from chinvex.answer.text import Stemmer, TermWeights


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
    from chinvex.answer.evidence_units import split_units

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
