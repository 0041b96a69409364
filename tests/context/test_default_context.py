"""`--context` is optional: the CLI (a subprocess started in various working directories) picks
CHINVEX_CONTEXT, else the context with the deepest source folder containing the directory, else
fails with exit 2 and the list of contexts; the same rule as the MCP server
(`chinvex/context/default.py`, tested for the server in tests/mcp/test_mcp.py)."""

from __future__ import annotations

import os
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

from chinvex.context.default import contexts_containing, resolve_default
from chinvex.context.registry import Registry
from helpers import assert_no_traceback, run_cli, run_cli_in_process


@dataclass
class Nest:
    home: Path
    proj: Path
    docs: Path
    outside: Path

    def env(self, **extra: str) -> dict[str, str]:
        # Neutralise whatever the developer's shell sets, then apply the test's own values.
        return {"CHINVEX_HOME": str(self.home), "CHINVEX_CONTEXT": "", "EDI_PROJECT_PATH": "", **extra}


def _ok(result):
    assert_no_traceback(result)
    assert result.code == 0, result
    return result


@pytest.fixture(scope="module")
def nest(tmp_path_factory) -> Nest:
    """`outer` over the repo proj/, `inner` over the note root proj/docs/ nested inside it (a
    different include kind on purpose), both ingested."""
    base = tmp_path_factory.mktemp("nest")
    proj, outside = base / "proj", base / "elsewhere"
    docs = proj / "docs"
    (proj / "src" / "deep").mkdir(parents=True)
    (docs / "guides").mkdir(parents=True)
    outside.mkdir()
    (proj / "src" / "ledger.py").write_text(textwrap.dedent('''\
        """Double-entry ledger postings for the settlement service."""


        def post_entry(debit: str, credit: str, amount: int) -> tuple[str, str, int]:
            """Record one balanced ledger posting between two accounts."""
            return debit, credit, amount
        '''), encoding="utf-8")
    (docs / "guides" / "onboarding.md").write_text(
        "# Onboarding\n\nNew engineers pair with a mentor for their first sprint.\n", encoding="utf-8")
    nest = Nest(home=base / "home", proj=proj, docs=docs, outside=outside)
    _ok(run_cli_in_process("context", "create", "outer", "--repo", str(proj), env=nest.env()))
    _ok(run_cli_in_process("context", "create", "inner", "--note-root", str(docs), env=nest.env()))
    _ok(run_cli_in_process("ingest", "--context", "outer", env=nest.env()))
    _ok(run_cli_in_process("ingest", "--context", "inner", env=nest.env()))
    return nest


def test_search_without_context_inside_a_repo(nest):
    found = _ok(run_cli("search", "ledger posting", "--json", cwd=nest.proj / "src" / "deep", env=nest.env()))
    assert found.json["contexts"] == ["outer"]
    assert found.json["results"][0]["source_uri"].endswith("src/ledger.py")
    assert found.stderr == ""  # --json: nothing but the document
    human = _ok(run_cli("search", "ledger posting", "--mode", "fts", cwd=nest.proj / "src", env=nest.env()))
    assert "ledger.py" in human.stdout
    assert "context: outer (its sources contain the current directory)" in human.stderr


def test_the_deepest_root_wins(nest):
    inside_docs = nest.docs / "guides"
    found = _ok(run_cli("search", "mentor sprint", "--mode", "fts", "--json", cwd=inside_docs, env=nest.env()))
    assert found.json["contexts"] == ["inner"]
    # the same directory through every other command that takes --context
    assert _ok(run_cli("stats", "--json", cwd=inside_docs, env=nest.env())).json["context"] == "inner"
    assert _ok(run_cli("context", "show", "--json", cwd=inside_docs, env=nest.env())).json["context"]["name"] == "inner"
    chunk_id = found.json["results"][0]["chunk_id"]
    got = _ok(run_cli("chunk", "get", chunk_id, "--json", cwd=inside_docs, env=nest.env()))
    assert got.json["chunk"]["context"] == "inner"
    doctor = run_cli("doctor", "--json", cwd=inside_docs, env=nest.env())
    assert_no_traceback(doctor)
    assert doctor.json["context"] == "inner"
    # outer's root contains docs/ too, but only as a shallower root
    assert _ok(run_cli("stats", "--json", cwd=nest.proj, env=nest.env())).json["context"] == "outer"


def test_ingest_eval_and_answer_without_context(nest, tmp_path):
    cwd = nest.proj / "src"
    ingested = _ok(run_cli("ingest", cwd=cwd, env=nest.env()))
    assert ingested.stdout.startswith("outer: ") and "context: outer" in ingested.stderr
    golden = tmp_path / "golden.json"
    golden.write_text('{"k": 5, "queries": [{"id": "q1", "query": "balanced ledger posting", '
                      '"expected": [{"path": "src/ledger.py"}]}]}', encoding="utf-8")
    report = _ok(run_cli("eval", "--golden", str(golden), "--mode", "fts", "--json", cwd=cwd, env=nest.env()))
    assert report.json["metrics"]["hit"] == 1.0
    answered = run_cli("answer", "How is a ledger posting recorded?", "--json", cwd=cwd, env=nest.env())
    assert_no_traceback(answered)
    assert answered.json["context"] == "outer" and answered.code in (0, 1), answered


def test_chinvex_context_beats_the_working_directory(nest):
    found = _ok(run_cli("search", "mentor sprint", "--mode", "fts", cwd=nest.proj / "src",
                        env=nest.env(CHINVEX_CONTEXT="inner")))
    assert "onboarding.md" in found.stdout and "context: inner (from CHINVEX_CONTEXT)" in found.stderr
    # and --context beats both
    named = _ok(run_cli("stats", "--context", "outer", "--json", cwd=nest.docs, env=nest.env(CHINVEX_CONTEXT="inner")))
    assert named.json["context"] == "outer"
    # a CHINVEX_CONTEXT that names nothing is an error, never a fall-back to the directory
    wrong = run_cli("stats", cwd=nest.proj, env=nest.env(CHINVEX_CONTEXT="ghost"))
    assert wrong.code == 1 and "Unknown context: ghost" in wrong.stderr and "CHINVEX_CONTEXT" in wrong.stderr


@pytest.mark.parametrize("argv", [
    ("search", "anything"), ("stats",), ("ingest",), ("doctor",), ("chunk", "get", "abc"),
    ("context", "show"), ("eval", "--golden", "g.json"),
])
def test_no_context_found_is_a_usage_error_listing_the_contexts(nest, argv):
    result = run_cli(*argv, cwd=nest.outside, env=nest.env())
    assert_no_traceback(result)
    assert result.code == 2, result
    line = result.stderr.strip()
    assert len(line.splitlines()) == 1, result
    assert f"none contains {nest.outside}" in line and "--context NAME" in line
    assert line.endswith("Contexts: inner, outer"), line
    as_json = run_cli(*argv, "--json", cwd=nest.outside, env=nest.env())
    assert as_json.code == 2 and as_json.json["error"]["code"] == "USAGE_ERROR"


def test_answer_without_a_context_is_a_usage_error_in_the_answer_schema(nest):
    result = run_cli("answer", "anything?", "--json", cwd=nest.outside, env=nest.env())
    assert result.code == 2, result
    assert result.json["errors"][0]["code"] == "CONTEXT_NOT_FOUND"
    assert "Contexts: inner, outer" in result.json["errors"][0]["detail"]


# -- the rule itself, in process -------------------------------------------------------------------

def test_every_include_kind_counts_and_ties_are_refused(tmp_path):
    roots = {name: tmp_path / name for name in ("repo", "chats", "codex", "claude", "shared", "outside")}
    for folder in roots.values():
        folder.mkdir()
    reg = Registry()
    reg.create("r", includes={"repos": [str(roots["repo"])]})
    reg.create("c", includes={"chat_roots": [str(roots["chats"])]})
    reg.create("x", includes={"codex_session_roots": [str(roots["codex"])]})
    reg.create("k", includes={"claude_session_roots": [str(roots["claude"])]})
    reg.create("one", includes={"repos": [str(roots["shared"])]})
    reg.create("two", includes={"note_roots": [str(roots["shared"])]})

    def pick(cwd: Path, **env: str):
        return resolve_default(reg, given=None, env=env, cwd=str(cwd), advice="say which")

    for folder, name in (("repo", "r"), ("chats", "c"), ("codex", "x"), ("claude", "k")):
        (roots[folder] / "sub").mkdir()
        found = pick(roots[folder] / "sub")
        assert found.config is not None and found.config.name == name and found.via == "cwd"
    tie = pick(roots["shared"])
    assert tie.config is None and tie.problem == "ambiguous" and "(one, two)" in tie.error
    nothing = pick(roots["outside"])
    assert nothing.problem == "none" and nothing.error.endswith("Contexts: c, k, one, r, two, x")
    via_edi = pick(roots["outside"], EDI_PROJECT_PATH=str(roots["repo"]))
    assert via_edi.config.name == "r" and via_edi.via == "EDI_PROJECT_PATH"
    unknown = pick(roots["repo"], CHINVEX_CONTEXT="ghost")
    assert unknown.config is None and unknown.problem == "unknown" and unknown.cause.code == "CONTEXT_NOT_FOUND"


def test_symlinked_roots_and_prefixes(tmp_path):
    real = tmp_path / "real" / "app"
    (real / "pkg").mkdir(parents=True)
    link = tmp_path / "link"
    os.symlink(real, link)
    (tmp_path / "real" / "application").mkdir()
    reg = Registry()
    config = reg.create("linked", includes={"repos": [str(link)]}).config
    assert [c.name for c in contexts_containing([config], str(real / "pkg"))] == ["linked"]
    assert [c.name for c in contexts_containing([config], str(link / "pkg"))] == ["linked"]
    # a root is a folder, not a string prefix: /real/app does not contain /real/application
    assert contexts_containing([config], str(tmp_path / "real" / "application")) == []


def test_search_with_a_name_and_its_alias_searches_the_context_once(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "notes.md").write_text("# Retry policy\n\nRetries back off exponentially up to five times.\n")
    assert run_cli_in_process("context", "create", "Bx", "--alias", "bx", "--repo", str(repo)).code == 0
    assert run_cli_in_process("ingest", "--context", "Bx").code == 0
    result = run_cli("search", "--context", "bx", "--context", "Bx", "retry policy", "--json")
    assert result.code == 0, result
    ids = [r["chunk_id"] for r in result.json["results"]]
    assert ids and len(ids) == len(set(ids)), ids
    assert result.json["contexts"] == ["Bx"]
