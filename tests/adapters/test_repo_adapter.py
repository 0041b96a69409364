"""RepoAdapter on real trees: a real `git init` repository, plain folders, real symlinks."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from chinvex.ids import doc_id_for
from chinvex.models.sources import (
    Adapter,
    AdapterOptions,
    ParseReport,
    SkippedSource,
    SourceCandidate,
    SourceError,
)
from chinvex_adapters.repo import RepoAdapter
from helpers import enumerated, write
from chinvex_adapters.repo.languages import language_for
from chinvex_adapters.kit.filetype import sniff_bytes

PNG_HEADER = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(40))
HAS_GIT = shutil.which("git") is not None
needs_git = pytest.mark.skipif(not HAS_GIT, reason="git is not installed")


def options(**kw) -> AdapterOptions:
    return AdapterOptions(context_name="test", **kw)


def enumerate_map(root: Path, **kw) -> tuple[dict[str, SourceCandidate], dict[str, SkippedSource]]:
    return enumerated(RepoAdapter(), root, options(**kw))


def git(cwd: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.org"}
    for var in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"):
        env.pop(var, None)
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True,
                          text=True).stdout


def parse_one(candidate: SourceCandidate, adapter: RepoAdapter | None = None):
    report = ParseReport()
    docs = list((adapter or RepoAdapter()).parse(candidate, report, None))
    assert len(docs) == 1
    return docs[0], report


# --------------------------------------------------------------------------- the git path


@pytest.fixture
def git_repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q")
    write(root, ".gitignore", "*.log\nignored_dir/\n")
    write(root, "src/app.py", "def main():\n    return 42\n")
    write(root, "src/util.ts", "export const x = 1;\n")
    write(root, "README.md", "# Demo\r\nCRLF kept\r\n")
    write(root, "debug.log", "ignored by *.log\n")
    write(root, "ignored_dir/x.py", "print('ignored')\n")
    write(root, "sub/.gitignore", "local.txt\n!keep.log\n")
    write(root, "sub/local.txt", "ignored by the nested .gitignore\n")
    write(root, "local.txt", "not ignored at the top\n")
    write(root, "sub/keep.log", "re-included by the nested negation\n")
    write(root, "with space/file name.txt", "spaces\n")
    write(root, "new\nline.txt", "a newline in the name\n")
    write(root, "ünïcödé/日本語.md", "unicode names\n")
    write(root, "docs/private/secret.md", "excluded by the context\n")
    write(root, "notes.tmp", "excluded by the context\n")
    write(root, "node_modules/pkg/index.js", "module.exports = 1;\n")
    write(root, "node_modules/pkg/lib/deep.js", "module.exports = 2;\n")
    write(root, "package-lock.json", '{"lockfileVersion": 3}\n')
    write(root, "Cargo.lock", "# lock\n")
    write(root, "image.txt", PNG_HEADER)
    write(root, "nul.py", b"print(1)\n\x00\x00\x01binary\n")
    write(root, "latin.txt", bytes(range(128, 256)) * 8)
    write(root, "empty.txt", b"")
    big = root / "big.txt"  # sparse: all NUL bytes, so only a size check can call it too_large
    with open(big, "wb") as fh:
        fh.truncate(2_000_000)
    os.symlink("..", root / "loop")
    outside = tmp_path / "outside.txt"
    outside.write_text("outside the root\n")
    os.symlink(outside, root / "outside_link.txt")
    os.symlink("src/app.py", root / "app_link.py")
    git(root, "add", "-f", "src", ".gitignore", "sub/.gitignore", "README.md", "node_modules")
    git(root, "commit", "-q", "-m", "init")
    return root


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


# ------------------------------------------------------------------------ the plain walk


GITIGNORE_TREE = {
    ".gitignore": "*.log\n!important.log\n/only-root.txt\ndata/\n!data/keep.txt\n# comment\n",
    "a/.gitignore": "!debug.log\n*.md\n",
    "x.log": "ignored",
    "important.log": "negated back in",
    "a/debug.log": "re-included by the nested negation",
    "a/b/debug.log": "the nested file applies to its whole subtree",
    "a/b/other.log": "still ignored by the root pattern",
    "a/readme.md": "ignored by the nested *.md",
    "readme.md": "kept at the top",
    "only-root.txt": "anchored pattern",
    "a/only-root.txt": "anchored pattern does not reach here",
    "data/x.txt": "ignored directory",
    "data/keep.txt": "a negation cannot re-include from an ignored directory",
    "a/data/y.txt": "data/ matches at any depth",
    "c/sp ace.txt": "kept",
}


def test_walk_honours_nested_gitignore_and_negations(tmp_path: Path) -> None:
    root = tmp_path / "plain"
    for rel, text in GITIGNORE_TREE.items():
        write(root, rel, text + "\n")
    cands, skips = enumerate_map(root)
    assert set(cands) == {
        ".gitignore", "a/.gitignore", "important.log", "a/debug.log", "a/b/debug.log",
        "readme.md", "a/only-root.txt", "c/sp ace.txt",
    }
    assert skips == {}  # ignored files are not sources at all, as with git
    assert cands["readme.md"].extra["git_sha"] is None
    doc, _ = parse_one(cands["readme.md"])
    assert doc.metadata["git_sha"] is None


@needs_git
def test_walk_matches_git_on_the_same_tree(tmp_path: Path) -> None:
    """The walker's .gitignore semantics are checked against git itself."""
    root = tmp_path / "plain"
    for rel, text in GITIGNORE_TREE.items():
        write(root, rel, text + "\n")
    walked = set(enumerate_map(root)[0])
    git(root, "init", "-q")
    listed = {p for p in git(root, "ls-files", "-co", "--exclude-standard", "-z").split("\0") if p}
    assert walked == listed


def test_walk_skips_always_skipped_dirs_and_excludes(tmp_path: Path) -> None:
    root = tmp_path / "plain"
    for d in ("node_modules", ".venv", "venv", "__pycache__", "dist", "build", "target",
              ".mypy_cache", ".pytest_cache", ".tox", ".next", ".cache", "pkg.egg-info"):
        write(root, f"{d}/f.py", "x = 1\n")
        write(root, f"deep/{d}/f.py", "x = 1\n")
    write(root, "deep/.git/config", "[core]\n")  # a VCS folder is pruned without a report
    write(root, "keep.py", "x = 1\n")
    write(root, "gen/out.py", "x = 1\n")
    write(root, "app.min.js", "var a=1;\n")
    write(root, ".env", "TOKEN=abc\n")
    write(root, ".env.example", "TOKEN=\n")
    cands, skips = enumerate_map(root, excludes=["gen/", str(root / "deep" / "target")])
    assert set(cands) == {"keep.py", ".env.example"}
    assert skips["gen"].reason == "excluded"
    assert skips["node_modules"].reason == "generated"
    assert skips["deep/node_modules"].reason == "generated"
    assert skips[".venv"].reason == "excluded_dir"
    assert skips["pkg.egg-info"].reason == "excluded_dir"
    assert skips["app.min.js"].reason == "generated"
    assert skips[".env"].reason == "secret"
    assert not any(rel.endswith("/f.py") for rel in skips)  # one entry per pruned folder
    assert "deep/.git" not in skips and "deep/.git/config" not in cands


def test_symlink_loops_do_not_hang(tmp_path: Path) -> None:
    root = tmp_path / "plain"
    write(root, "a/file.py", "x = 1\n")
    os.symlink("..", root / "a" / "up")
    os.symlink(".", root / "self")
    os.symlink(root, root / "a" / "abs_loop")
    os.symlink("missing.txt", root / "dangling.txt")
    outside = write(tmp_path, "outside.md", "secret\n")
    os.symlink(outside, root / "out.md")
    started = time.monotonic()
    cands, skips = enumerate_map(root)
    assert time.monotonic() - started < 5
    assert set(cands) == {"a/file.py"}
    assert {k: v.reason for k, v in skips.items()} == {
        "a/up": "symlink_dir", "self": "symlink_dir", "a/abs_loop": "symlink_dir",
        "dangling.txt": "broken_symlink", "out.md": "symlink_outside_root",
    }


def test_fifo_is_not_read(tmp_path: Path) -> None:
    root = tmp_path / "plain"
    root.mkdir()
    os.mkfifo(root / "pipe.txt")
    cands, skips = enumerate_map(root)
    assert cands == {} and skips["pipe.txt"].reason == "not_regular"


def test_invalid_utf8_is_replaced_with_a_warning(tmp_path: Path) -> None:
    root = tmp_path / "plain"
    body = b"# caf\xe9 menu\n" + b"plain ascii line\n" * 20 + b"price: 5\xa4\n"
    write(root, "menu.md", body)
    cands, _ = enumerate_map(root)
    doc, report = parse_one(cands["menu.md"])
    assert doc.text.count("\ufffd") == 2
    assert doc.text.startswith("# caf\ufffd menu\n")
    assert len(report.warnings) == 1 and "2 invalid" in report.warnings[0]
    assert str(root / "menu.md") in report.warnings[0]
    assert report.counts["invalid_bytes_replaced"] == 2


def test_bom_and_utf16(tmp_path: Path) -> None:
    root = tmp_path / "plain"
    write(root, "bom.txt", b"\xef\xbb\xbfhello\r\nworld\r\n")
    write(root, "wide.txt", "wide text \u00e9\r\n".encode("utf-16"))
    write(root, "wide_no_bom.txt", "no bom".encode("utf-16-le"))
    cands, skips = enumerate_map(root)
    assert skips["wide_no_bom.txt"].reason == "binary"  # NUL bytes and no mark to say otherwise
    bom, _ = parse_one(cands["bom.txt"])
    assert bom.text == "hello\r\nworld\r\n"
    wide, _ = parse_one(cands["wide.txt"])
    assert wide.text == "wide text \u00e9\r\n"
    assert wide.metadata["encoding"] == "utf-16"


def test_sniffer_cases() -> None:
    assert sniff_bytes(b"plain text\n", complete=True).binary is False
    assert sniff_bytes(PNG_HEADER, complete=True).binary is True
    assert sniff_bytes(b"%PDF-1.7\n", complete=True).binary is True
    assert sniff_bytes(b"\x7fELF\x02\x01\x01" + b"\x00" * 9, complete=True).binary is True
    assert sniff_bytes(b"SQLite format 3\x00...", complete=True).binary is True
    assert sniff_bytes(b"\x00asm\x01\x00\x00\x00", complete=True).binary is True
    # printable "signatures" at the start of ordinary text are not enough
    assert sniff_bytes(b"BMW cars and MZ motorcycles\n", complete=True).binary is False
    assert sniff_bytes(b"ID3 tags explained\n", complete=True).binary is False
    # a multi-byte character cut by the 8 KB sample is not an error...
    cut = ("é" * 5000).encode()[:8191]
    assert sniff_bytes(cut, complete=False).binary is False
    # ...and a few stray Latin-1 bytes in UTF-8 text are tolerated
    assert sniff_bytes(b"abc " * 100 + b"\xe9\xe8", complete=True).binary is False
    assert sniff_bytes(bytes(range(1, 9)) * 50, complete=True).binary is True


def test_language_labels() -> None:
    cases = {
        "a.py": "python", "a.js": "javascript", "a.ts": "typescript", "a.tsx": "tsx",
        "a.go": "go", "a.rs": "rust", "a.md": "markdown", "a.json": "json", "a.yml": "yaml",
        "a.toml": "toml", "a.sh": "shell", "a.c": "c", "a.hpp": "cpp", "A.java": "java",
        "a.rb": "ruby", "a.html": "html", "a.css": "css", "a.sql": "sql", "notes": "text",
        "Makefile": "make", "Dockerfile": "dockerfile", "x.unknownext": "text",
    }
    assert {name: language_for(name) for name in cases} == cases


def test_undecodable_file_name(tmp_path: Path) -> None:
    root = tmp_path / "plain"
    root.mkdir()
    try:
        with open(os.path.join(os.fsencode(root), b"bad\xffname.txt"), "wb") as fh:
            fh.write(b"text\n")
    except OSError:
        pytest.skip("this file system rejects non-UTF-8 names")
    items = list(RepoAdapter().enumerate(root, options()))
    assert len(items) == 1 and isinstance(items[0], SkippedSource)
    assert items[0].reason == "undecodable_name"
    items[0].source_uri.encode("utf-8")  # storable


# -------------------------------------------------------------------------- property test

_name_chars = st.characters(
    blacklist_categories=("Cs",), blacklist_characters="/\x00", min_codepoint=32
)
_names = st.text(_name_chars, min_size=1, max_size=20).filter(lambda n: n not in (".", ".."))


_contents = st.one_of(
    st.binary(max_size=300),
    st.text(max_size=300).map(lambda t: t.encode("utf-8", "surrogatepass")),
    st.text(max_size=100).map(lambda t: t.encode("utf-16")),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(files=st.dictionaries(_names, _contents, min_size=1, max_size=6),
       limit=st.integers(min_value=1, max_value=400))
def test_random_names_and_contents_never_crash(files: dict[str, bytes], limit: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "r"
        root.mkdir()
        for name, data in files.items():
            try:
                (root / name).write_bytes(data)
            except OSError:  # e.g. a name too long in bytes for the file system
                continue
        adapter = RepoAdapter()
        for item in adapter.enumerate(root, options(max_file_bytes=limit)):
            if isinstance(item, SkippedSource):
                continue
            try:
                for doc in adapter.parse(item, ParseReport(), None):
                    json.dumps(doc.model_dump(mode="json"))
                    event("parsed a document")
            except SourceError:
                event("SourceError")


# ----------------------------------------------------------------------------- speed


def test_enumeration_speed_on_a_large_tree(tmp_path: Path) -> None:
    """2,000 small files enumerated (content sniffing included) in well under a second.

    The real figures (20,000+ files/s on site-packages) are in the report; this only guards
    against an order-of-magnitude regression on a shared, noisy machine.
    """
    root = tmp_path / "big"
    for d in range(20):
        (root / f"pkg{d}").mkdir(parents=True)
    for i in range(2000):
        (root / f"pkg{i % 20}" / f"mod{i}.py").write_bytes(b"x = 1\n")
    adapter = RepoAdapter()
    list(adapter.enumerate(root, options()))  # warm the page cache
    started = time.perf_counter()
    items = list(adapter.enumerate(root, options()))
    elapsed = time.perf_counter() - started
    assert len(items) == 2000
    assert elapsed < 1.0, f"{2000 / elapsed:.0f} files/s"


def test_unlistable_folder_is_skipped_not_fatal(tmp_path: Path) -> None:
    """Permissions cannot be tested as root; a folder whose path exceeds PATH_MAX cannot be
    listed either, which exercises the same branch with a real OSError."""
    root = tmp_path / "deep"
    write(root, "top.py", "x = 1\n")
    fd = os.open(root, os.O_RDONLY)
    depth = 0
    try:
        while len(str(root)) + depth * 201 < 4300:
            os.mkdir("d" * 200, dir_fd=fd)
            nxt = os.open("d" * 200, os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = nxt
            depth += 1
    finally:
        os.close(fd)
    cands, skips = enumerate_map(root)
    assert set(cands) == {"top.py"}
    (unreadable,) = skips.values()
    assert unreadable.reason == "unreadable"


@needs_git
def test_parse_a_candidate_built_elsewhere(git_repo: Path) -> None:
    """A bare candidate (no enumeration extras) still gets its relative path, limit and sha."""
    path = git_repo / "src" / "app.py"
    cand = SourceCandidate(source_uri=str(path), source_type="repo", adapter="repo",
                           root=str(git_repo), path=path)
    doc, _ = parse_one(cand)
    assert doc.metadata["path"] == "src/app.py"
    assert doc.metadata["git_sha"] == git(git_repo, "rev-parse", "HEAD").strip()


@needs_git
def test_folder_ignored_by_its_enclosing_repo_is_walked(git_repo: Path) -> None:
    """An explicitly included folder is indexed even when the outer repository ignores it."""
    write(git_repo, "ignored_dir/sub/.gitignore", "*.tmp\n")
    write(git_repo, "ignored_dir/sub/skip.tmp", "own .gitignore still applies\n")
    cands, skips = enumerate_map(git_repo / "ignored_dir")
    assert set(cands) == {"x.py", "sub/.gitignore"}
    assert skips["."].reason == "ignored_by_git"
    assert cands["x.py"].extra["git_sha"] is None
    doc, _ = parse_one(cands["x.py"])
    assert doc.metadata["git_sha"] is None  # ignored files belong to no commit


@needs_git
def test_empty_repository(tmp_path: Path) -> None:
    root = tmp_path / "fresh"
    root.mkdir()
    git(root, "init", "-q")
    assert list(RepoAdapter().enumerate(root, options())) == []
    write(root, "a.py", "x = 1\n")  # untracked, no commit yet: no sha
    cands, _ = enumerate_map(root)
    doc, _ = parse_one(cands["a.py"])
    assert doc.metadata["git_sha"] is None
