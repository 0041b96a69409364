"""What ingest says about files it did not index, in words rather than reason codes: the summary
line, the web ingest page, a named source's own reason without --verbose; `stats` naming the
Codex reader without nested parentheses; adapters' counts in the singular for one."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from chinvex import fmt
from chinvex.ingest.stats import format_stats
from chinvex.ingest.summary import skip_lines, skip_phrase
from helpers import assert_no_traceback, run_cli_in_process


def test_reason_codes_are_said_in_words_with_their_number():
    lines = skip_lines({"excluded_dir": 5, "not_supported": 1, "binary": 2})
    assert lines == ["not indexed: 5 in excluded folders, 1 not a supported format, 2 binary"]
    assert skip_phrase("excluded_dir", 1) == "1 in an excluded folder"
    assert skip_phrase("not_a_rollout", 2) == "2 not Codex rollouts"
    assert skip_phrase("some_new_reason", 3) == "3 some new reason"  # a code nobody worded yet
    assert "_" not in skip_lines({"too_large": 1, "not_a_rollout": 1, "excluded": 4})[0]


def test_the_reason_of_a_named_source_follows_its_count():
    lines = skip_lines({"not_supported": 1}, {"not_supported": ["/x/export.zip: zip archive without conversations.json"]})
    assert lines == ["not indexed: 1 not a supported format (/x/export.zip: zip archive without conversations.json)"]


def test_an_unreadable_only_chat_root_says_why_without_verbose(tmp_path: Path, chinvex_home: Path):
    export = tmp_path / "export.zip"
    with zipfile.ZipFile(export, "w") as archive:
        archive.writestr("photos/readme.json", "{}")
    assert run_cli_in_process("context", "create", "z", "--chat-root", str(export)).code == 0
    done = run_cli_in_process("ingest", "--context", "z")
    assert done.code == 0, done.stderr
    assert_no_traceback(done)
    line = [x for x in done.stdout.splitlines() if x.startswith("not indexed:")]
    assert line == [f"not indexed: 1 not a supported format ({export}: zip archive without conversations.json)"], \
        done.stdout


def test_a_skipped_file_inside_a_named_folder_keeps_the_short_line(tmp_path: Path, chinvex_home: Path):
    notes = tmp_path / "notes"
    (notes / "node_modules").mkdir(parents=True)
    (notes / "a.md").write_text("# A\n\ntext\n")
    (notes / "node_modules" / "b.md").write_text("# B\n")
    assert run_cli_in_process("context", "create", "n", "--note-root", str(notes)).code == 0
    done = run_cli_in_process("ingest", "--context", "n")
    assert "not indexed: 1 in an excluded folder\n" in done.stdout + "\n", done.stdout


def _stats_with_reader(why: str) -> dict:
    return {"context": "c", "totals": {"documents": 0, "chunks": 0}, "by_source_type": {},
            "last_run": {"started_at": "2026-11-24T14:03:00Z", "status": "completed",
                         "stats": {"sources": {}, "readers": {"/s": {"reader": "jsonl", "why": why}}}},
            "embedder": {}, "index": {}}


def test_stats_names_the_codex_reader_without_nested_parentheses():
    text = format_stats(_stats_with_reader("codex not on PATH (mode auto)"))
    assert "codex sessions /s: read by jsonl; codex not on PATH (mode auto)" in text
    assert "((" not in text and "))" not in text


def test_web_ingest_history_says_skips_in_words():
    from chinvex.web.pages.ingest import with_skip_words
    from chinvex.web.render import environment

    runs = with_skip_words([{"run_id": "r1", "started_at": "2026-11-24T14:03:00Z", "status": "completed",
                             "stats": {"sources": {"skipped": {"excluded_dir": 5, "not_supported": 1}}}},
                            {"run_id": "r2", "started_at": "2026-11-23T14:03:00Z", "status": "failed", "stats": None}])
    html = environment().get_template("ingest.html").render(page="ingest", context="c", contexts=["c"], csrf="t",
                                                            runs=runs, job=None, limit=30)
    assert "5 in excluded folders, 1 not a supported format" in html
    assert "excluded_dir" not in html and "not_supported" not in html
    assert runs[1]["skipped_words"] == ""


@pytest.mark.parametrize("n, expected", [(1, "1 unrecognised line"), (3, "3 unrecognised lines")])
def test_noun_takes_the_form_its_count_needs(n, expected):
    assert f"{n} unrecognised {fmt.noun(n, 'line')}" == expected
    assert fmt.noun(2, "entry") == "entries"


def test_adapter_messages_count_one_line_in_the_singular(tmp_path: Path):
    from chinvex.models.sources import ParseReport, SourceError
    from chinvex_adapters.claude_code import parse_transcript

    transcript = tmp_path / "0b7e3f5e-1c9a-4a57-9a54-3f1b6c3f0d11.jsonl"
    transcript.write_text("not json at all\n")
    with pytest.raises(SourceError) as caught:
        parse_transcript(transcript, ParseReport())
    assert "1 unreadable line)" in str(caught.value), caught.value
