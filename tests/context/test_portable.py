"""`chinvex export` / `chinvex import` (issue 19): a context holding Codex sessions, ChatGPT
exports and Claude Code transcripts (the fixtures context, real pipeline) goes out as JSONL and
into a new context, where the golden queries return the same chunks with the same scores and
`stats` agree; a damaged file changes nothing and names its first bad line; a second import
changes nothing."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from chinvex.retrieval.vector_leg import EXHAUSTIVE_LIMIT
from helpers import FIXTURES, REPO_ROOT, assert_no_traceback, run_cli, run_cli_in_process

GOLDEN = REPO_ROOT / "golden_queries" / "fixtures.json"
"""The golden queries written for the fixtures context (golden_queries/README.md)."""


def _create(env, name: str) -> None:
    created = run_cli_in_process("context", "create", name,
                                 "--codex-sessions", str(FIXTURES / "codex-rollout"),
                                 "--chat-root", str(FIXTURES / "chatgpt-export"),
                                 "--claude-sessions", str(FIXTURES / "claude-code"), env=env)
    assert created.code == 0, created


def _ranked(env, context: str, query: str, mode: str = "fts") -> list[tuple[str, float]]:
    found = run_cli("search", query, "--context", context, "--mode", mode, "--json", env=env)
    assert found.code == 0, found
    return [(r["chunk_id"], round(r["scores"]["rank"], 6)) for r in found.json["results"]]


def _golden_results(env, context: str, mode: str, out: Path) -> dict[str, list[tuple[str, float]]]:
    """Each golden query's top 10 as (chunk id, score), unrounded: one `chinvex eval` run
    for all of them (in this process)."""
    file = out / f"{context}-{mode}.jsonl"
    done = run_cli_in_process("eval", "--context", context, "--golden", str(GOLDEN), "--k", "10",
                              "--mode", mode, "--output", str(file), "--json", env=env)
    assert done.code == 0, done
    records = [json.loads(line) for line in file.read_text().splitlines()]
    assert len(records) == len(json.loads(GOLDEN.read_text())["queries"])
    return {r["query"]: [(hit["chunk_id"], hit["score"]) for hit in r["results"]] for r in records}


def _comparable_stats(env, context: str) -> dict:
    """`stats` without what names this context (its name, its files and their sizes) and without
    the last ingest run, which the import is not."""
    stats = run_cli_in_process("stats", "--context", context, "--json", env=env).json
    return {k: v for k, v in stats.items() if k not in ("context", "index", "last_run")}


@pytest.fixture(scope="module")
def exported(fixtures_context, tmp_path_factory):
    env = fixtures_context["env"]
    out = tmp_path_factory.mktemp("export") / "fixtures.jsonl"
    done = run_cli_in_process("export", "--context", "fixtures", "--out", str(out), "--include-vectors", env=env)
    assert done.code == 0, done
    return {"env": env, "file": out}


def test_round_trip_gives_the_same_search_results_and_stats(exported):
    env, file = exported["env"], exported["file"]
    lines = [json.loads(line) for line in file.read_text().splitlines()]
    kinds = {r["kind"] for r in lines}
    assert {"header", "source", "document", "chunk", "end"} <= kinds and all(r["v"] == 1 for r in lines)
    assert all("vector" in r for r in lines if r["kind"] == "chunk")
    _create(env, "copy")
    imported = run_cli_in_process("import", str(file), "--context", "copy", "--json", env=env)
    assert imported.code == 0, imported
    assert imported.json["vectors_reused"] and imported.json["chunks_embedded"] == 0
    assert imported.json["documents_imported"] == sum(1 for r in lines if r["kind"] == "document")
    for mode in ("fts", "hybrid"):
        # Exact in both legs: BM25, and a vector leg that scores every vector of a context this
        # size (vector_leg.EXHAUSTIVE_LIMIT), so the approximate graph, which Chroma builds anew and
        # differently in the imported store, chooses nothing.
        original, copy = (_golden_results(env, c, mode, file.parent) for c in ("fixtures", "copy"))
        assert all(original.values()), original
        for query in original:
            assert copy[query] == original[query], (mode, query)
    stats = _comparable_stats(env, "fixtures")
    assert stats["totals"]["chunks"] <= EXHAUSTIVE_LIMIT  # else the vector leg is approximate
    assert _comparable_stats(env, "copy") == stats
    again = run_cli_in_process("import", str(file), "--context", "copy", "--json", env=env)
    assert again.code == 0 and again.json["documents_imported"] == 0 and again.json["chunks_imported"] == 0
    ingest = run_cli_in_process("ingest", "--context", "copy", "--json", env=env)  # its sources: nothing to do
    assert ingest.json["sources"]["indexed"] == 0 and ingest.json["sources"]["removed"] == 0


def test_without_vectors_the_import_embeds_and_ranks_the_same(tmp_path):
    """A small notes context (embedding the fixtures context again would cost ~20 s)."""
    notes = tmp_path / "notes"
    notes.mkdir()
    for i, topic in enumerate(["webhook retries with backoff", "settlement at midnight", "idempotency keys"]):
        (notes / f"n{i}.md").write_text(f"# Note {i}\n\nWe decided on {topic} after the incident review.\n")
    env = {"CHINVEX_HOME": str(tmp_path / "home")}
    for name in ("src", "dst"):
        assert run_cli_in_process("context", "create", name, "--note-root", str(notes), env=env).code == 0
    assert run_cli_in_process("ingest", "--context", "src", env=env).code == 0
    plain = tmp_path / "plain.jsonl"
    assert run_cli_in_process("export", "--context", "src", "--out", str(plain), env=env).code == 0
    imported = run_cli_in_process("import", str(plain), "--context", "dst", "--json", env=env)
    assert imported.code == 0 and imported.json["chunks_embedded"] > 0 and not imported.json["vectors_reused"]
    for query in ("how are webhooks retried", "when does settlement happen"):
        assert _ranked(env, "dst", query) == _ranked(env, "src", query)
        assert _ranked(env, "dst", query, "hybrid")[0][0] == _ranked(env, "src", query, "hybrid")[0][0]


def test_import_progress_counts_data_and_embedding_and_export_says_counts_in_english(tmp_path, monkeypatch):
    """Progress hears of sources, documents, chunks and each chunk embedded (the slow part), never
    of the header and end records; the export's summary line counts in English."""
    from chinvex.context.portable import import_file
    from chinvex.context.registry import Registry

    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "only.md").write_text("# Only\n\nThe one note about webhook retries.\n")
    env = {"CHINVEX_HOME": str(tmp_path / "home")}
    for name in ("src", "dst"):
        assert run_cli_in_process("context", "create", name, "--note-root", str(notes), env=env).code == 0
    assert run_cli_in_process("ingest", "--context", "src", env=env).code == 0
    plain = tmp_path / "plain.jsonl"
    exported = run_cli_in_process("export", "--context", "src", "--out", str(plain), env=env)
    assert exported.code == 0
    assert f"exported src to {plain}: 1 source, 1 document, 1 chunk" in exported.stderr, exported.stderr
    summary = run_cli_in_process("export", "--context", "src", "--out", str(plain), "--json", env=env)
    assert summary.code == 0 and summary.json["counts"] == {"source": 1, "document": 1, "chunk": 1}
    assert summary.json["ok"] is True and summary.json["out"] == str(plain)
    streamed = run_cli_in_process("export", "--context", "src", "--json", env=env)  # stdout is the export
    assert streamed.code == 2 and "needs --out" in streamed.json["error"]["message"]
    heard: list[str] = []
    monkeypatch.setenv("CHINVEX_HOME", env["CHINVEX_HOME"])
    result = import_file(Registry().resolve("dst"), plain, on_record=heard.append)
    assert sorted(set(heard)) == ["chunk", "chunk embedded", "document", "source"], heard
    assert heard.count("chunk embedded") == result["chunks_embedded"] == 1


@pytest.mark.parametrize("damage, line_hint", [
    ("truncate", "ends before its end record"),
    ("garble", ":5: not JSON"),
    ("kind", ":4: unknown kind"),
    ("traversal", "record: doc_id: String should match pattern"),  # an id like ../../pwn3
])
def test_a_damaged_file_changes_nothing_and_names_the_line(exported, tmp_path, damage, line_hint):
    env = exported["env"]
    lines = exported["file"].read_text().splitlines()
    if damage == "truncate":
        lines = lines[:-3]
    elif damage == "garble":
        lines[4] = lines[4][: len(lines[4]) // 2]
    elif damage == "traversal":
        at = next(i for i, line in enumerate(lines) if json.loads(line)["kind"] == "document")
        lines[at] = json.dumps({**json.loads(lines[at]), "doc_id": "../../pwn3"})
    else:
        lines[3] = json.dumps({"v": 1, "kind": "mystery"})
    bad = tmp_path / f"{damage}.jsonl"
    bad.write_text("\n".join(lines) + "\n")
    name = f"victim{damage}"
    _create(env, name)
    result = run_cli("import", str(bad), "--context", name, env=env)
    assert_no_traceback(result)
    assert result.code == 2 and line_hint in result.stderr, result
    stats = run_cli_in_process("stats", "--context", name, "--json", env=env).json
    assert not stats["totals"].get("documents"), stats["totals"]


def test_export_to_stdout_and_bad_input(exported, tmp_path):
    env = exported["env"]
    streamed = run_cli("export", "--context", "fixtures", env=env)
    assert streamed.code == 0 and streamed.stdout.splitlines()[0].startswith('{"v":1,"kind":"header"')
    missing = run_cli("import", str(tmp_path / "nope.jsonl"), "--context", "fixtures", env=env)
    assert missing.code == 2 and "nope.jsonl" in missing.stderr


def test_an_ingest_after_an_import_keeps_what_was_imported(tmp_path):
    """A context created without sources, an export imported into it, then a plain ingest: the
    imported documents stay (their folders are not this context's), and the ingest says so;
    `chinvex rm` is how one leaves."""
    env = {"CHINVEX_HOME": str(tmp_path / "home")}
    notes = tmp_path / "notes"
    notes.mkdir()
    for n in range(3):
        (notes / f"note{n}.md").write_text(f"# Note {n}\n\nthe quartz lantern runbook part {n}\n", encoding="utf-8")
    assert run_cli_in_process("context", "create", "src", "--note-root", str(notes), env=env).code == 0
    assert run_cli_in_process("ingest", "--context", "src", env=env).code == 0
    out = tmp_path / "src.jsonl"
    assert run_cli_in_process("export", "--context", "src", "--out", str(out), env=env).code == 0
    assert run_cli_in_process("context", "create", "copy", env=env).code == 0
    assert run_cli_in_process("import", str(out), "--context", "copy", env=env).code == 0
    before = run_cli_in_process("stats", "--context", "copy", "--json", env=env).json["totals"]["documents"]
    assert before == 3
    ingested = run_cli_in_process("ingest", "--context", "copy", "--json", env=env)
    assert ingested.code == 0 and ingested.json["sources"]["removed"] == 0 and ingested.json["imported_kept"] == 3
    human = run_cli_in_process("ingest", "--context", "copy", env=env)
    assert "kept 3 imported sources" in human.stdout
    assert run_cli_in_process("stats", "--context", "copy", "--json", env=env).json["totals"]["documents"] == 3
    # The folder added to the context: from then on the ingest owns those sources like any other.
    assert run_cli_in_process("context", "add-source", "copy", "--note-root", str(notes), env=env).code == 0
    (notes / "note2.md").unlink()
    owned = run_cli_in_process("ingest", "--context", "copy", "--json", env=env).json
    assert owned["sources"]["removed"] == 1 and owned["imported_kept"] == 0


def test_import_into_an_unknown_context_says_to_create_it(tmp_path):
    env = {"CHINVEX_HOME": str(tmp_path / "home")}
    export = tmp_path / "x.jsonl"
    export.write_text("{}\n", encoding="utf-8")
    done = run_cli_in_process("import", str(export), "--context", "nope", env=env)
    assert done.code == 1 and "chinvex context create nope" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert_no_traceback(done)


def test_export_and_import_print_progress_lines_when_they_run_long(exported, tmp_path):
    """Piped, with a short interval: periodic lines on stderr naming what is done (issue 41)."""
    env = {**exported["env"], "CHINVEX_PROGRESS_EVERY": "0.01"}
    out = tmp_path / "again.jsonl"
    done = run_cli("export", "--context", "fixtures", "--out", str(out), "--include-vectors", env=env)
    assert done.code == 0 and re.search(r"^export fixtures: [\d,]+ sources", done.stderr, re.M), done.stderr
    _create(env, "progressed")
    imported = run_cli("import", str(out), "--context", "progressed", env=env)
    assert imported.code == 0 and re.search(r"^import again\.jsonl into progressed: .*documents", imported.stderr, re.M), \
        imported.stderr
    quiet = run_cli("import", str(out), "--context", "progressed", "--json", env=env)
    assert quiet.code == 0 and quiet.stderr == ""
