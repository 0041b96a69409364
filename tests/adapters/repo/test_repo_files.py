"""Reading files: encodings, sniffing, language labels, odd names, random trees, speed."""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from chinvex.models.sources import ParseReport, SkippedSource, SourceCandidate, SourceError
from chinvex_adapters.repo import RepoAdapter
from helpers import write
from chinvex_adapters.repo.languages import language_for
from chinvex_adapters.kit.filetype import sniff_bytes
from repo_support import PNG_HEADER, _contents, _names, enumerate_map, git, needs_git, options, parse_one


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
