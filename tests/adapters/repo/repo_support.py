"""RepoAdapter on real trees: a real `git init` repository, plain folders, real symlinks.

What the repo adapter tests share: git helpers and tree builders.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
import pytest
from hypothesis import strategies as st
from chinvex.models.sources import AdapterOptions, ParseReport, SkippedSource, SourceCandidate
from chinvex_adapters.repo import RepoAdapter
from helpers import enumerated

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


_name_chars = st.characters(
    blacklist_categories=("Cs",), blacklist_characters="/\x00", min_codepoint=32
)


_names = st.text(_name_chars, min_size=1, max_size=20).filter(lambda n: n not in (".", ".."))


_contents = st.one_of(
    st.binary(max_size=300),
    st.text(max_size=300).map(lambda t: t.encode("utf-8", "surrogatepass")),
    st.text(max_size=100).map(lambda t: t.encode("utf-16")),
)
