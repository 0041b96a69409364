"""Issue 2: the context registry through the installed `chinvex` command (seed tests 1 and 2)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from helpers import assert_no_traceback, run_cli, run_cli_in_process

SEED_UNKNOWN = "Unknown context: {}. Use 'chinvex context list' to see available contexts."


def test_seed_1_create_then_create_again(chinvex_home: Path):
    first = run_cli("context", "create", "TestContext")
    assert first.code == 0, first
    assert (chinvex_home / "contexts" / "TestContext" / "context.json").is_file()
    assert (chinvex_home / "indexes" / "TestContext" / "hybrid.db").is_file()
    second = run_cli("context", "create", "TestContext")
    assert second.code == 1, second
    assert "already exists" in second.stderr
    assert_no_traceback(second)


CONTEXT_COMMANDS = [
    ("context", "show", "{}"),
    ("context", "rename", "{}", "Other"),
    ("context", "delete", "{}", "--yes"),
    ("context", "add-source", "{}", "--repo", "."),
    ("context", "remove-source", "{}", "."),
]


@pytest.mark.parametrize("argv", CONTEXT_COMMANDS, ids=lambda a: " ".join(a[:2]))
def test_seed_2_unknown_context_errors_and_is_never_created(chinvex_home: Path, argv):
    args = [a.format("NonExistent") for a in argv]
    result = run_cli(*args)
    assert result.code == 1, result
    assert SEED_UNKNOWN.format("NonExistent") in result.stderr
    assert_no_traceback(result)
    assert not (chinvex_home / "contexts" / "NonExistent").exists()
    assert not (chinvex_home / "indexes" / "NonExistent").exists()
    as_json = run_cli(*args, "--json")
    assert as_json.code == 1
    assert as_json.json == {
        "ok": False,
        "error": {"code": "CONTEXT_NOT_FOUND", "message": SEED_UNKNOWN.format("NonExistent")},
    }


def test_exists_never_creates(chinvex_home: Path):
    result = run_cli("context", "exists", "Ghost", "--json")
    assert result.code == 1
    assert result.json["exists"] is False
    assert not (chinvex_home / "contexts").exists()


@pytest.mark.parametrize("name", ["", "a/b", "..", "a\\b", "x" * 65, "-dash", "tab\there"])
def test_invalid_names_exit_2(chinvex_home: Path, name: str):
    result = run_cli("context", "create", "--json", "--", name)
    assert result.code == 2, result
    assert result.json["error"]["code"] == "INVALID_NAME"
    assert not (chinvex_home / "contexts").exists() or not any((chinvex_home / "contexts").iterdir())


def test_name_of_64_characters_is_fine():
    assert run_cli("context", "create", "n" * 64).code == 0


def test_aliases_resolve_and_collisions_are_refused(tmp_path: Path):
    assert run_cli("context", "create", "Alpha", "--alias", "a", "--alias", "alf").code == 0
    shown = run_cli("context", "show", "alf", "--json")
    assert shown.code == 0 and shown.json["context"]["name"] == "Alpha"
    dup = run_cli("context", "create", "Beta", "--alias", "a", "--json")
    assert dup.code == 1 and dup.json["error"]["code"] == "ALIAS_CONFLICT"
    assert "Alpha" in dup.json["error"]["message"]
    clash_with_name = run_cli("context", "create", "Gamma", "--alias", "Alpha", "--json")
    assert clash_with_name.code == 1 and clash_with_name.json["error"]["code"] == "ALIAS_CONFLICT"
    name_is_alias = run_cli("context", "create", "alf", "--json")
    assert name_is_alias.code == 1 and name_is_alias.json["error"]["code"] == "ALIAS_CONFLICT"
    self_alias = run_cli("context", "create", "Delta", "--alias", "Delta", "--json")
    assert self_alias.code == 1
    assert not run_cli("context", "exists", "Beta").code == 0


def test_create_with_sources_and_idempotent_merge(tmp_path: Path):
    repo = tmp_path / "repo"
    notes = tmp_path / "notes"
    repo.mkdir()
    notes.mkdir()
    created = run_cli("context", "create", "Proj", "--repo", str(repo), "--json")
    assert created.code == 0 and created.json["created"] is True
    again = run_cli("context", "create", "Proj", "--note-root", str(notes), "--alias", "p",
                    "--idempotent", "--json")
    assert again.code == 0, again
    assert again.json["created"] is False
    includes = again.json["context"]["includes"]
    assert includes["repos"] == [str(repo)] and includes["note_roots"] == [str(notes)]
    assert again.json["context"]["aliases"] == ["p"]
    missing = run_cli("context", "create", "Other", "--repo", str(tmp_path / "nope"), "--json")
    assert missing.code == 2 and "nope" in missing.json["error"]["message"]
    assert run_cli("context", "exists", "Other").code == 1


def test_list_sorted_by_updated_desc_and_json(tmp_path: Path):
    for name in ("First", "Second", "Third"):
        assert run_cli("context", "create", name).code == 0
    repo = tmp_path / "r"
    repo.mkdir()
    assert run_cli("context", "add-source", "First", "--repo", str(repo)).code == 0
    listed = run_cli("context", "list", "--json")
    assert listed.code == 0
    names = [c["name"] for c in listed.json["contexts"]]
    assert names == ["First", "Third", "Second"]
    human = run_cli("context", "list")
    assert human.stdout.splitlines()[0].split() == ["NAME", "ALIASES", "UPDATED"]


def test_add_and_remove_source_preserve_unknown_keys(chinvex_home: Path, tmp_path: Path):
    assert run_cli("context", "create", "Keep").code == 0
    path = chinvex_home / "contexts" / "Keep" / "context.json"
    data = json.loads(path.read_text())
    data["future_feature"] = {"x": [1, 2]}
    data["includes"]["some_new_root"] = ["/somewhere"]
    path.write_text(json.dumps(data))
    src = tmp_path / "src"
    src.mkdir()
    added = run_cli("context", "add-source", "Keep", "--repo", str(src), "--json")
    assert added.code == 0 and added.json["added"] is True
    twice = run_cli("context", "add-source", "Keep", "--repo", str(src), "--json")
    assert twice.json["added"] is False
    data = json.loads(path.read_text())
    assert data["future_feature"] == {"x": [1, 2]}
    assert data["includes"]["some_new_root"] == ["/somewhere"]
    assert data["includes"]["repos"] == [str(src)]
    removed = run_cli("context", "remove-source", "Keep", str(src), "--json")
    assert removed.code == 0 and removed.json["removed_from"] == ["repos"]
    assert json.loads(path.read_text())["includes"]["repos"] == []
    not_there = run_cli("context", "remove-source", "Keep", str(src), "--json")
    assert not_there.code == 1
    no_dir = run_cli("context", "add-source", "Keep", "--repo", str(tmp_path / "missing"), "--json")
    assert no_dir.code == 2
    two_flags = run_cli("context", "add-source", "Keep", "--repo", str(src), "--note-root", str(src), "--json")
    assert two_flags.code == 2
    assert not list(path.parent.glob("*.tmp")), "atomic writes leave no temp files"


def test_paths_are_stored_absolute(tmp_path: Path):
    (tmp_path / "rel").mkdir()
    result = run_cli("context", "create", "Rel", "--repo", "rel", "--json", cwd=tmp_path)
    assert result.json["context"]["includes"]["repos"] == [str(tmp_path / "rel")]


@pytest.mark.parametrize(
    "content, fragment",
    [
        ("{not json", "not valid JSON"),
        ('["a list"]', "JSON object"),
        ('{"schema_version": 1, "name": "Broken"}', "'index'"),
        (None, "'weights.repo'"),
    ],
)
def test_corrupted_context_json_names_file_and_field(chinvex_home: Path, content, fragment):
    assert run_cli("context", "create", "Broken").code == 0
    path = chinvex_home / "contexts" / "Broken" / "context.json"
    if content is None:
        data = json.loads(path.read_text())
        data["weights"]["repo"] = "heavy"
        content = json.dumps(data)
    path.write_text(content)
    for args in (("context", "show", "Broken"), ("context", "add-source", "Broken", "--repo", ".")):
        result = run_cli(*args)
        assert result.code in (1, 2), result
        assert str(path) in result.stderr and fragment in result.stderr, result
        assert_no_traceback(result)
        assert len(result.stderr.strip().splitlines()) == 1
    listed = run_cli("context", "list", "--json")
    assert listed.code == 0
    assert listed.json["contexts"][0]["error"]


def test_unwritable_home(tmp_path: Path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    result = run_cli("context", "create", "X", "--json", env={"CHINVEX_HOME": str(blocker / "home")})
    assert result.code == 1, result
    assert result.json["error"]["code"] == "STORAGE_ERROR"
    assert str(blocker) in result.json["error"]["message"]
    human = run_cli("context", "create", "X", env={"CHINVEX_HOME": str(blocker / "home")})
    assert_no_traceback(human)


def test_read_only_home(tmp_path: Path):
    """A home the user may read but not write: creating and editing contexts fail with one
    clear error naming the folder, reading still works, and context.json is untouched."""
    import subprocess

    from helpers import CHINVEX_BIN, without_dac_override

    prefix = without_dac_override(tmp_path)  # tests run as root, who writes anywhere
    home, src = tmp_path / "home", tmp_path / "src"
    src.mkdir()
    env = {**os.environ, "CHINVEX_HOME": str(home)}
    assert run_cli("context", "create", "Kept", env=env).code == 0
    config = home / "contexts" / "Kept" / "context.json"
    before = config.read_bytes()
    folders = [home, *(p for p in home.rglob("*") if p.is_dir())]
    for folder in folders:
        folder.chmod(0o555)

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([*prefix, str(CHINVEX_BIN), *args], capture_output=True, text=True,
                              env=env, timeout=120)

    try:
        for args in (("context", "create", "New"), ("context", "add-source", "Kept", "--repo", str(src))):
            human = run(*args)
            assert human.returncode == 1, (args, human.stdout, human.stderr)
            assert "Traceback" not in human.stderr and str(home) in human.stderr, human.stderr
            assert len(human.stderr.strip().splitlines()) == 1, human.stderr
            as_json = run(*args, "--json")
            assert as_json.returncode == 1
            assert json.loads(as_json.stdout)["error"]["code"] == "STORAGE_ERROR", as_json.stdout
        shown = run("context", "show", "Kept", "--json")
        assert shown.returncode == 0, shown.stderr
        assert json.loads(shown.stdout)["context"]["name"] == "Kept"
    finally:
        for folder in folders:
            folder.chmod(0o755)
    assert config.read_bytes() == before
    assert not (home / "contexts" / "New").exists()


def test_rename_moves_index_and_rewrites_paths(chinvex_home: Path):
    assert run_cli("context", "create", "Old", "--alias", "o").code == 0
    result = run_cli("context", "rename", "o", "New", "--json")
    assert result.code == 0, result
    config = result.json["context"]
    assert config["name"] == "New"
    assert config["index"]["sqlite_path"] == str(chinvex_home / "indexes" / "New" / "hybrid.db")
    assert (chinvex_home / "indexes" / "New" / "hybrid.db").is_file()
    assert not (chinvex_home / "indexes" / "Old").exists()
    assert not (chinvex_home / "contexts" / "Old").exists()
    assert run_cli("context", "show", "Old").code == 1
    assert run_cli("context", "show", "o", "--json").json["context"]["name"] == "New"
    assert run_cli("context", "create", "Other").code == 0
    clash = run_cli("context", "rename", "New", "Other", "--json")
    assert clash.code == 1 and clash.json["error"]["code"] == "CONTEXT_EXISTS"
    bad = run_cli("context", "rename", "New", "../x", "--json")
    assert bad.code == 2


def test_delete_requires_yes(chinvex_home: Path):
    assert run_cli("context", "create", "Gone").code == 0
    refused = run_cli("context", "delete", "Gone", "--json")
    assert refused.code == 2 and refused.json["error"]["code"] == "USAGE_ERROR"
    assert (chinvex_home / "contexts" / "Gone").exists()
    done = run_cli("context", "delete", "Gone", "--yes", "--json")
    assert done.code == 0 and done.json["deleted"] == "Gone"
    assert not (chinvex_home / "contexts" / "Gone").exists()
    assert not (chinvex_home / "indexes" / "Gone").exists()


def test_roots_can_be_overridden_separately(tmp_path: Path):
    env = {"CHINVEX_CONTEXTS_ROOT": str(tmp_path / "c"), "CHINVEX_INDEXES_ROOT": str(tmp_path / "i")}
    assert run_cli("context", "create", "Split", env=env).code == 0
    assert (tmp_path / "c" / "Split" / "context.json").is_file()
    assert (tmp_path / "i" / "Split" / "hybrid.db").is_file()


def test_usage_errors_are_exit_2_with_json(tmp_path: Path):
    result = run_cli("context", "create", "x", "--no-such-flag", "--json")
    assert result.code == 2 and result.json["error"]["code"] == "USAGE_ERROR"
    assert run_cli("context").code == 2
    assert run_cli("--version").stdout.startswith("chinvex ")


@pytest.mark.parametrize("first, second", [("Work", "work"), ("caf\u00e9", "cafe\u0301"), ("Stra\u00dfe", "STRASSE")])
def test_names_differing_only_by_case_or_normalisation_are_refused(first, second, tmp_path):
    """Names are folder names: on a case-insensitive (or normalising) file system these would be
    one folder, so the second is refused with one line, and nothing is created."""
    assert run_cli_in_process("context", "create", first).code == 0
    clash = run_cli_in_process("context", "create", second)
    assert clash.code == 1, clash.stdout + clash.stderr
    assert "only by case or Unicode normalisation" in clash.stderr and len(clash.stderr.strip().splitlines()) == 1
    assert [c["name"] for c in run_cli_in_process("context", "list", "--json").json["contexts"]] == [first]
    assert run_cli_in_process("context", "create", "other").code == 0
    renamed = run_cli_in_process("context", "rename", "other", second)
    assert renamed.code == 1 and "only by case" in renamed.stderr


def test_add_source_says_what_was_stored_in_words(tmp_path: Path, monkeypatch):
    """The message names the absolute path context.json now holds and the kind of source in words
    ("note root"), not the relative argument and the JSON key ("as note_roots")."""
    notes = tmp_path / "notes"
    notes.mkdir()
    monkeypatch.chdir(tmp_path)
    assert run_cli_in_process("context", "create", "Words").code == 0
    added = run_cli_in_process("context", "add-source", "Words", "--note-root", "notes")
    assert added.code == 0
    assert added.stdout.strip() == f"Added {notes} to Words (note root); it is indexed on the next ingest"
    again = run_cli_in_process("context", "add-source", "Words", "--note-root", "notes")
    assert again.stdout.strip() == "notes is already in Words (note root)"
    auto = run_cli_in_process("context", "add-source", "Words", "--sessions", "auto")
    assert auto.stdout.strip() == "Added auto to Words (agent sessions); it is indexed on the next ingest"


def test_create_says_what_to_do_next(tmp_path: Path):
    notes = tmp_path / "notes"
    notes.mkdir()
    with_sources = run_cli_in_process("context", "create", "Next", "--note-root", str(notes))
    assert with_sources.stdout.rstrip().endswith("Index it with: chinvex ingest --context Next"), with_sources.stdout
    empty = run_cli_in_process("context", "create", "Bare")
    assert "chinvex context add-source Bare --repo DIR" in empty.stdout, empty.stdout
    again = run_cli_in_process("context", "create", "Next", "--idempotent")
    assert again.code == 0 and "Index it with" not in again.stdout
