"""Repositories → candidates and documents: git and walk listings, nested repos, parse."""

from __future__ import annotations

import json
import os
from datetime import datetime, timezone
from pathlib import Path
import pytest
from chinvex.ids import doc_id_for
from chinvex.models.sources import Adapter, ParseReport, SkippedSource, SourceError
from chinvex_adapters.repo import RepoAdapter
from helpers import write
from repo_support import PNG_HEADER, enumerate_map, git, needs_git, options, parse_one


@needs_git
def test_git_repo_enumeration(git_repo: Path) -> None:
    cands, skips = enumerate_map(git_repo, excludes=["docs/private/", "*.tmp"])

    assert set(cands) == {
        ".gitignore", "README.md", "local.txt", "src/app.py", "src/util.ts",
        "sub/.gitignore", "sub/keep.log", "with space/file name.txt", "new\nline.txt",
        "ünïcödé/日本語.md",
    }
    reasons = {rel: s.reason for rel, s in skips.items()}
    assert reasons == {
        "docs/private": "excluded",
        "notes.tmp": "excluded",
        "node_modules": "generated",  # tracked, still not indexed by default; reported once
        "package-lock.json": "generated",
        "Cargo.lock": "generated",
        "image.txt": "binary",
        "nul.py": "binary",
        "latin.txt": "binary",
        "empty.txt": "empty",
        "big.txt": "too_large",
        "loop": "symlink_dir",
        "outside_link.txt": "symlink_outside_root",
        "app_link.py": "symlink_duplicate",
    }
    assert "PNG" in skips["image.txt"].detail
    assert "NUL" in skips["nul.py"].detail
    assert "UTF-8" in skips["latin.txt"].detail
    assert "2,000,000" in skips["big.txt"].detail
    assert "docs/private/" in skips["docs/private"].detail

    app = cands["src/app.py"]
    st_app = os.stat(git_repo / "src/app.py")
    assert app.source_uri == str(git_repo / "src/app.py")
    assert app.root == str(git_repo)
    assert app.path == git_repo / "src/app.py"
    assert app.size_bytes == st_app.st_size and app.mtime_ns == st_app.st_mtime_ns
    assert app.source_type == "repo" and app.adapter == "repo"
    assert app.extra["path"] == "src/app.py"
    assert app.extra["git_sha"] == git(git_repo, "rev-parse", "HEAD").strip()


@needs_git
def test_order_is_sorted_and_deterministic(git_repo: Path) -> None:
    def keys() -> list[str]:
        return [item.source_uri for item in RepoAdapter().enumerate(git_repo, options())]

    first = keys()
    assert first == keys()
    assert first == sorted(first, key=lambda uri: os.path.relpath(uri, git_repo).replace(os.sep, "/"))


@needs_git
def test_git_and_walk_agree_on_a_committed_tree(git_repo: Path, tmp_path: Path, monkeypatch) -> None:
    """The same tree seen by `git ls-files` and by the fallback walk gives the same result."""
    with_git = enumerate_map(git_repo)
    monkeypatch.setenv("PATH", str(tmp_path / "no-bin-here"))
    items = list(RepoAdapter().enumerate(git_repo, options()))
    notice = items[0]
    assert isinstance(notice, SkippedSource) and notice.reason == "git_unavailable"
    assert notice.source_uri == str(git_repo)
    assert "not installed" in notice.detail
    without_git = enumerate_map(git_repo)
    assert set(without_git[0]) == set(with_git[0])
    del without_git[1]["."]  # the notice, keyed by the root itself
    assert {k: v.reason for k, v in without_git[1].items()} == \
        {k: v.reason for k, v in with_git[1].items()}
    # outside git there is no commit to record
    assert without_git[0]["src/app.py"].extra["git_sha"] is None


@needs_git
def test_subfolder_of_a_work_tree(git_repo: Path) -> None:
    cands, skips = enumerate_map(git_repo / "src")
    assert set(cands) == {"app.py", "util.ts"}
    assert not skips
    doc, _ = parse_one(cands["app.py"])
    assert doc.metadata["path"] == "app.py"
    assert doc.metadata["root"] == str(git_repo / "src")
    assert doc.metadata["git_sha"] == git(git_repo, "rev-parse", "HEAD").strip()


@needs_git
def test_nested_repository_is_reported_not_walked(git_repo: Path) -> None:
    inner = git_repo / "vendor_repo"
    inner.mkdir()
    git(inner, "init", "-q")
    write(inner, "inner.py", "x = 1\n")
    cands, skips = enumerate_map(git_repo)
    assert skips["vendor_repo"].reason == "nested_repo"
    assert not any(rel.startswith("vendor_repo/") for rel in cands)


@needs_git
def test_parse_code_file(git_repo: Path) -> None:
    cands, _ = enumerate_map(git_repo)
    adapter = RepoAdapter()
    doc, report = parse_one(cands["src/app.py"], adapter)
    assert doc.doc_id == doc_id_for("repo", str(git_repo / "src/app.py"))
    assert doc.source_type == "repo"
    assert doc.title == "src/app.py"
    assert doc.text == "def main():\n    return 42\n"
    assert doc.created_at is None
    mtime = os.stat(git_repo / "src/app.py").st_mtime_ns
    assert doc.updated_at == datetime.fromtimestamp(mtime / 1_000_000_000, timezone.utc)  # int / int: exact
    assert doc.metadata["language"] == "python"
    assert doc.metadata["size_bytes"] == len(doc.text)
    assert doc.metadata["git_sha"] == git(git_repo, "rev-parse", "HEAD").strip()
    assert report.warnings == []
    json.dumps(doc.model_dump(mode="json"))  # storable as is

    readme, _ = parse_one(cands["README.md"], adapter)
    assert readme.text == "# Demo\r\nCRLF kept\r\n"  # offsets stay file offsets
    assert readme.metadata["language"] == "markdown"
    odd, _ = parse_one(cands["new\nline.txt"], adapter)
    assert odd.title == "new\nline.txt" and odd.metadata["path"] == "new\nline.txt"
    uni, _ = parse_one(cands["ünïcödé/日本語.md"], adapter)
    assert uni.metadata["path"] == "ünïcödé/日本語.md"


@needs_git
def test_file_deleted_between_enumerate_and_parse(git_repo: Path) -> None:
    cands, _ = enumerate_map(git_repo)
    (git_repo / "local.txt").unlink()
    with pytest.raises(SourceError) as err:
        list(RepoAdapter().parse(cands["local.txt"], ParseReport(), None))
    assert str(git_repo / "local.txt") in str(err.value)
    assert "disappeared" in str(err.value)


@needs_git
def test_file_that_grew_past_the_limit_after_the_scan(git_repo: Path) -> None:
    cands, _ = enumerate_map(git_repo, max_file_bytes=1000)
    write(git_repo, "local.txt", "x" * 5000)
    with pytest.raises(SourceError, match="over the 1,000-byte limit"):
        list(RepoAdapter().parse(cands["local.txt"], ParseReport(), None))


@needs_git
def test_file_that_turned_binary_after_the_scan(git_repo: Path) -> None:
    cands, _ = enumerate_map(git_repo)
    write(git_repo, "local.txt", PNG_HEADER)
    with pytest.raises(SourceError, match="binary"):
        list(RepoAdapter().parse(cands["local.txt"], ParseReport(), None))


def test_nonexistent_root(tmp_path: Path) -> None:
    missing = tmp_path / "nope"
    with pytest.raises(SourceError) as err:
        list(RepoAdapter().enumerate(missing, options()))
    assert str(err.value) == f"{missing}: repository path does not exist"


def test_root_that_is_a_file(tmp_path: Path) -> None:
    f = write(tmp_path, "file.txt", "x")
    with pytest.raises(SourceError, match="is not a directory"):
        list(RepoAdapter().enumerate(f, options()))


def test_adapter_satisfies_the_protocol() -> None:
    adapter = RepoAdapter()
    assert isinstance(adapter, Adapter)
    assert (adapter.name, adapter.source_type, adapter.parser_version) == ("repo", "repo", "repo_v1")
