"""Human (non-JSON) output: no `None`, no float with more than 3 decimals, dates written as
`YYYY-MM-DD HH:MM UTC`, sizes in B/KB/MB — over the real output of every command on a small real
ingest (the CLI as a subprocess), and the formatting functions (`chinvex/fmt.py`) themselves."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

from chinvex import fmt
from helpers import assert_no_traceback, run_cli, run_cli_in_process

LONG_FLOAT = re.compile(r"\d\.\d{4,}")
ISO_STAMP = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}")
READABLE_DATE = re.compile(r"\b\d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC\b")


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> dict:
    base = tmp_path_factory.mktemp("human")
    repo, notes = base / "repo", base / "notes"
    (repo / "src").mkdir(parents=True)
    notes.mkdir()
    (repo / "src" / "retry.py").write_text(textwrap.dedent('''\
        """Retry helpers for webhook delivery."""


        def backoff_delay(attempt: int) -> float:
            """Exponential backoff between webhook delivery attempts."""
            return 0.5 * 2 ** attempt
        '''), encoding="utf-8")
    (notes / "policy.md").write_text("# Retry policy\n\nWebhooks are retried with exponential backoff.\n",
                                     encoding="utf-8")
    golden = base / "golden.json"
    golden.write_text('{"name": "demo", "k": 5, "queries": ['
                      '{"id": "q1", "query": "webhook backoff delay", "expected": [{"path": "src/retry.py"}]},'
                      '{"id": "q2", "query": "settlement reconciliation", "expected": [{"path": "nowhere.md"}]}]}',
                      encoding="utf-8")
    env = {"CHINVEX_HOME": str(base / "home"), "CHINVEX_CONTEXT": "", "EDI_PROJECT_PATH": ""}
    for args in (("context", "create", "demo", "--alias", "dm", "--repo", str(repo), "--note-root", str(notes)),
                 ("ingest", "--context", "demo")):
        result = run_cli_in_process(*args, env=env)  # set-up; the outputs under test are processes
        assert result.code == 0, result
    chunk = run_cli("search", "--context", "demo", "backoff", "--json", env=env).json["results"][0]["chunk_id"]
    return {"env": env, "golden": golden, "chunk": chunk, "repo": repo}


def _human_outputs(demo) -> dict[str, str]:
    commands = {
        "stats": ("stats", "--context", "demo"),
        "search": ("search", "--context", "demo", "webhook backoff", "--explain"),
        # words no chunk contains: vector-only candidates, whose raw BM25 is absent
        "search-vector-only": ("search", "--context", "demo", "zebra xylophone quasar", "--explain"),
        "eval": ("eval", "--context", "demo", "--golden", str(demo["golden"])),
        "doctor": ("doctor", "--context", "demo"),
        "context show": ("context", "show", "demo"),
        "context list": ("context", "list"),
        "chunk get": ("chunk", "get", demo["chunk"], "--context", "demo"),
        "ingest": ("ingest", "--context", "demo"),
    }
    outputs = {}
    for name, args in commands.items():
        result = run_cli(*args, env=demo["env"])
        assert_no_traceback(result)
        assert result.code == 0, (name, result)
        outputs[name] = result.stdout + result.stderr
    return outputs


def test_no_none_no_long_floats_and_readable_dates(demo):
    outputs = _human_outputs(demo)
    for name, text in outputs.items():
        assert "None" not in text, (name, text)
        assert not LONG_FLOAT.search(text), (name, LONG_FLOAT.search(text), text)
        assert not ISO_STAMP.search(text), (name, text)
    for name in ("stats", "doctor", "context show", "context list", "chunk get"):
        assert READABLE_DATE.search(outputs[name]), (name, outputs[name])
    assert re.search(r"on disk: hybrid\.db \d+\.\d (KB|MB), chroma \d+\.\d (KB|MB)", outputs["stats"]), outputs["stats"]
    assert "fts – -> 0.000" in outputs["search-vector-only"], outputs["search-vector-only"]
    assert "misses: q2" in outputs["eval"] and re.search(r"latency p50 \d+(\.\d)? m?s", outputs["eval"])
    assert "previous none (first chunk)" in outputs["chunk get"] and "[repo]" in outputs["chunk get"]
    assert "(aliases: dm)" in outputs["context show"] and "note root" in outputs["context show"]


def test_json_output_keeps_raw_values(demo):
    stats = run_cli("stats", "--context", "demo", "--json", env=demo["env"]).json
    assert ISO_STAMP.match(stats["last_run"]["started_at"])
    assert isinstance(stats["index"]["hybrid_db_bytes"], int) and stats["index"]["chroma_url"] is None
    shown = run_cli("context", "show", "demo", "--json", env=demo["env"]).json
    assert shown["context"]["name"] == "demo" and ISO_STAMP.match(shown["context"]["created_at"])


# -- the formatting functions ---------------------------------------------------------------------

def test_dates():
    assert fmt.when("2026-11-24T14:03:59.999Z") == "2026-11-24 14:03 UTC"
    assert fmt.when("2026-11-24T16:03:00+02:00") == "2026-11-24 14:03 UTC"
    assert fmt.when(None) == "never" and fmt.when("", missing="–") == "–"
    assert fmt.when("not a date") == "not a date"
    assert (fmt.dates_in("completed at 2026-11-24T14:03:05.120Z; started 2026-01-02T03:04:05+02:00.")
            == "completed at 2026-11-24 14:03 UTC; started 2026-01-02 01:04 UTC.")
    assert fmt.dates_in("version 2026-11-24 and 12:30") == "version 2026-11-24 and 12:30"


def test_numbers_and_sizes():
    assert fmt.score(0.7575433850288391) == "0.758" and fmt.score(None) == "–"
    assert fmt.raw(2.376118067978533e-06) == "2.38e-06" and fmt.raw(14.23456) == "14.235"
    assert fmt.raw(0.024318) == "0.024" and fmt.raw(-0.015) == "-0.015" and fmt.raw(0.0) == "0.000"
    assert fmt.raw(None) == "–" and fmt.raw(float("nan")) == "–"
    assert [fmt.number(v) for v in (1.0, 0.9, 0.125, 8.5149, 3, None)] == ["1", "0.9", "0.125", "8.515", "3", "–"]
    assert [fmt.size(v) for v in (0, 1023, 1024, 208_896, 5 * 1024**2, 3 * 1024**5, None)] == [
        "0 B", "1023 B", "1.0 KB", "204.0 KB", "5.0 MB", "3072.0 TB", "–"]
    assert [fmt.duration_ms(v) for v in (8.51, 555.4, 1444.0, None)] == ["8.5 ms", "555 ms", "1.4 s", "–"]
    assert fmt.text(None) == "–" and fmt.text("") == "–" and fmt.text(0.30000000000000004) == "0.3"


def test_context_show_renders_unknown_sections(tmp_path: Path):
    from chinvex.cli.context_cmd import format_config

    text = format_config({
        "name": "x", "includes": {"repos": [], "chat_roots": ["/c"]}, "index": {"sqlite_path": "/i/h.db",
        "chroma_dir": "/i/c", "chroma_url": None}, "embedding": {"provider": "ollama", "model": "m", "host": None},
        "codex_appserver": {"mode": "off", "command": ["codex", "app-server"]}, "future_key": None,
        "created_at": "2026-01-02T03:04:05.000Z", "updated_at": None,
    }, "/ctx/x/context.json")
    assert "None" not in text and "chat root        /c" in text and "embedding        ollama (model=m)" in text
    assert "codex_appserver  mode=off, command=codex app-server" in text and "future_key" not in text
    assert "created          2026-01-02 03:04 UTC · updated –" in text


def test_counts_take_the_plural_their_noun_needs():
    assert fmt.counted(1, "chunk") == "1 chunk" and fmt.counted(0, "chunk") == "0 chunks"
    assert fmt.counted(1204, "chunk") == "1,204 chunks"
    assert fmt.counted(3, "memory") == "3 memories" and fmt.counted(2, "feedback") == "2 feedback"
    assert fmt.counted(2, "chunk embedded") == "2 chunks embedded"
    assert fmt.counted(1, "chunk embedded") == "1 chunk embedded"
